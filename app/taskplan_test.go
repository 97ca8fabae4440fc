package app

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

func initRepo(t *testing.T) string {
	t.Helper()
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes", "--prefix", "ch"); r.code != 0 {
		t.Fatalf("init: %s", r.stderr)
	}
	return dir
}

func mustCreate(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := chorus(t, dir, append([]string{"task", "create"}, args...)...)
	if r.code != 0 {
		t.Fatalf("create %v: %d %s", args, r.code, r.stderr)
	}
	return strings.TrimSpace(r.stdout)
}

func showTask(t *testing.T, dir, id string) beads.Task {
	t.Helper()
	r := chorus(t, dir, "task", "show", id, "--json")
	if r.code != 0 {
		t.Fatalf("show %s: %s", id, r.stderr)
	}
	var task beads.Task
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
		t.Fatal(err)
	}
	return task
}

func TestTaskValidate(t *testing.T) {
	dir := initRepo(t)
	good := mustCreate(t, dir, "Add login endpoint", "--acceptance", "POST /login returns 200 and a token")
	r := chorus(t, dir, "task", "create", "Add cart", "--acceptance", "works correctly")
	if r.code != 0 || !strings.Contains(r.stderr, "warning: ") || !strings.Contains(r.stderr, "[vague_criteria]") {
		t.Fatalf("create did not warn: %d %s", r.code, r.stderr)
	}
	vague := strings.TrimSpace(r.stdout)
	if r := chorus(t, dir, "task", "validate", good); r.code != 0 || !strings.Contains(r.stderr, "1 task(s) valid") {
		t.Fatalf("validate good: %d %s %s", r.code, r.stdout, r.stderr)
	}
	r = chorus(t, dir, "task", "validate")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "✗ "+vague+" [vague_criteria]") || strings.Contains(r.stdout, good) {
		t.Fatalf("validate: %d %q %s", r.code, r.stdout, r.stderr)
	}
	// The user's edits to task-rules.md are what is checked.
	rulesPath := filepath.Join(dir, ".chorus", "task-rules.md")
	b, _ := os.ReadFile(rulesPath)
	edited := strings.NewReplacer("- [ ] forbidden_words", "- [x] forbidden_words", "| 500 |", "| 10 |").Replace(string(b))
	os.WriteFile(rulesPath, []byte(edited), 0o644)
	mustCreate(t, dir, "Just add a simple cache", "-d", "a description over ten", "--acceptance", "GET /c returns 200")
	r = chorus(t, dir, "task", "validate", "--json")
	var out struct {
		Tasks      int
		Violations []struct{ TaskID, Rule, Message string }
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || r.code != ExitFailure {
		t.Fatalf("validate --json: %d %v %s", r.code, err, r.stdout)
	}
	rules := map[string]bool{}
	for _, v := range out.Violations {
		rules[v.Rule] = true
	}
	if out.Tasks != 3 || !rules["forbidden_words"] || !rules["max_description_length"] || !rules["vague_criteria"] || len(out.Violations) != 3 {
		t.Fatalf("violations: %+v", out)
	}
	// A malformed rules file says where and what.
	os.WriteFile(rulesPath, []byte(strings.Replace(edited, "| max_description_length | 10 |", "| max_description_length | ten |", 1)), 0o644)
	r = chorus(t, dir, "task", "validate")
	if r.code != ExitSetup || !strings.Contains(r.stderr, "task-rules.md:") || !strings.Contains(r.stderr, `max_description_length: "ten" is not valid`) {
		t.Fatalf("malformed rules: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "task", "validate", "ch-nope"); r.code != ExitSetup {
		t.Fatalf("unknown id with bad rules: %d", r.code)
	}
}

func TestTaskUpdateDepDelete(t *testing.T) {
	dir := initRepo(t)
	a := mustCreate(t, dir, "Add a", "--acceptance", "a returns 1", "-l", "x,y")
	b := mustCreate(t, dir, "Add b", "--acceptance", "b returns 2", "--deps", a)
	r := chorus(t, dir, "task", "update", a, "--title", "Add A", "-d", "new", "--acceptance", "A returns 1", "-p", "0",
		"--add-label", "z", "--remove-label", "x", "--model", "opus", "--agent", "codex")
	if r.code != 0 {
		t.Fatalf("update: %d %s", r.code, r.stderr)
	}
	got := showTask(t, dir, a)
	if got.Title != "Add A" || got.Description != "new" || got.AcceptanceCriteria != "A returns 1" || got.Priority != 0 ||
		strings.Join(got.Labels, ",") != "y,z" || got.Metadata["model"] != "opus" || got.Metadata["agent"] != "codex" {
		t.Fatalf("after update: %+v", got)
	}
	if r := chorus(t, dir, "task", "update", a, "--labels", "q"); r.code != 0 || strings.Join(showTask(t, dir, a).Labels, ",") != "q" {
		t.Fatalf("--labels: %d %s %v", r.code, r.stderr, showTask(t, dir, a).Labels)
	}
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"task", "update", a}, ExitUsage, "nothing to change"},
		{[]string{"task", "update", a, "-p", "9"}, ExitUsage, "allowed: 0 (critical) to 4"},
		{[]string{"task", "update", a, "--agent", "nobody"}, ExitUsage, `--agent: "nobody" is not valid`},
		{[]string{"task", "update", "ch-nope", "-p", "1"}, ExitFailure, "not found"},
		{[]string{"task", "dep", "add", a, b}, ExitFailure, "refused: dependency would create a cycle: " + a + " → " + b + " → " + a},
		{[]string{"task", "dep", "add", a, a}, ExitUsage, "cannot wait for itself"},
		{[]string{"task", "dep", "link", a, b}, ExitUsage, `"link" is not valid; allowed: add, remove`},
		{[]string{"task", "dep", "remove", a, b}, ExitFailure, "does not depend on"},
	} {
		if r := chorus(t, dir, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %d %q, want %d %q", tc.args, r.code, r.stderr, tc.code, tc.want)
		}
	}
	if r := chorus(t, dir, "task", "dep", "remove", b, a); r.code != 0 {
		t.Fatalf("dep remove: %s", r.stderr)
	}
	if r := chorus(t, dir, "task", "dep", "add", a, b); r.code != 0 || len(showTask(t, dir, a).BlockedBy()) != 1 {
		t.Fatalf("dep add after the reverse edge went: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "task", "delete", b); r.code != 0 {
		t.Fatalf("delete: %s", r.stderr)
	}
	if len(showTask(t, dir, a).BlockedBy()) != 0 {
		t.Fatal("dependency on a deleted task kept")
	}
	if r := chorus(t, dir, "task", "show", b); r.code != ExitFailure {
		t.Fatalf("deleted task still shown: %d", r.code)
	}
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Work on an agent branch is not lost to a delete: refused, or kept.
func TestTaskDeleteKeepsWork(t *testing.T) {
	dir := initRepo(t)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "base")
	id := mustCreate(t, dir, "Add a", "--acceptance", "a returns 1")
	merged := mustCreate(t, dir, "Add b", "--acceptance", "b returns 1")
	git(t, dir, "branch", "agent/claude/"+merged) // nothing beyond main
	git(t, dir, "branch", "agent/claude/"+id)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "main moves on")
	git(t, dir, "checkout", "-q", "agent/claude/"+id)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "agent work")
	tip := git(t, dir, "rev-parse", "HEAD")
	git(t, dir, "checkout", "-q", "main")

	if r := chorus(t, dir, "task", "delete", merged); r.code != 0 {
		t.Fatalf("delete of a task whose branch is merged: %d %s", r.code, r.stderr)
	}
	r := chorus(t, dir, "task", "delete", id)
	if r.code != ExitFailure || !strings.Contains(r.stderr, "unmerged work on agent/claude/"+id) || !strings.Contains(r.stderr, "--force") {
		t.Fatalf("delete without --force: %d %s", r.code, r.stderr)
	}
	showTask(t, dir, id)
	if r := chorus(t, dir, "task", "delete", id, "--force"); r.code != 0 {
		t.Fatalf("delete --force: %d %s", r.code, r.stderr)
	}
	// Kept under the one naming, <task>/<time>-tip: dated, so an age
	// filter spares it while it is new.
	kept := strings.Fields(git(t, dir, "for-each-ref", "--format=%(refname) %(objectname)", "refs/chorus/kept/"+id+"/"))
	if len(kept) != 2 || !regexp.MustCompile(`^refs/chorus/kept/`+regexp.QuoteMeta(id)+`/\d{8}T[\d.]+Z-tip$`).MatchString(kept[0]) || kept[1] != tip {
		t.Fatalf("kept refs %q, want one <time>-tip at %s", kept, tip)
	}
	if r := chorus(t, dir, "prune", "--kept", "--older-than", "1000h"); r.code != 0 || !strings.Contains(r.stdout, "nothing to prune") {
		t.Fatalf("prune of refs older than 1000h took the new one: %d %s", r.code, r.stdout)
	}
	if r := chorus(t, dir, "prune", "--kept"); r.code != 0 || !strings.Contains(r.stdout, "deleted "+kept[0]) {
		t.Fatalf("prune --kept: %d %s", r.code, r.stdout)
	}
	if out := git(t, dir, "branch", "--list", "agent/claude/"+id); out != "" {
		t.Fatalf("branch kept: %q", out)
	}
}

func TestDoctorReportsCyclesAndRules(t *testing.T) {
	fakeAgents(t, "claude", "codex", "opencode")
	dir := initRepo(t)
	a := mustCreate(t, dir, "Add a", "--acceptance", "a returns 1")
	mustCreate(t, dir, "Add b", "--acceptance", "works")
	r := chorus(t, dir, "doctor")
	if r.code != 0 || !strings.Contains(r.stdout, "! task rules") || !strings.Contains(r.stdout, "1 violation(s)") {
		t.Fatalf("doctor with a vague task: %d %s", r.code, r.stdout)
	}
	// A cycle cannot be made through Chorus, so write one the way another
	// tool could: straight into the task file.
	path := filepath.Join(dir, ".beads", "issues.jsonl")
	b, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var first map[string]any
	json.Unmarshal([]byte(lines[0]), &first)
	first["dependencies"] = []map[string]any{{"issue_id": a, "depends_on_id": a, "type": "blocks", "created_at": "2026-01-01T00:00:00Z"}}
	nb, _ := json.Marshal(first)
	lines[0] = string(nb)
	os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
	r = chorus(t, dir, "doctor")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "✗ task dependencies") || !strings.Contains(r.stdout, a+" → "+a) {
		t.Fatalf("doctor with a cycle: %d %s", r.code, r.stdout)
	}
}
