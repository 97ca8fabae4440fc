package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/internal/clitest"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/planning"
)

// `chorus plan --from SPEC.md --headless` with interactive Claude Code as
// the Plan Agent: it creates two tasks, one waiting for the other, one with
// a vague criterion; the review types the violation into the same Claude
// session, which fixes it; the plan ends ready.
func TestPlanFromSpecWithClaude(t *testing.T) {
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := planProject(t, srv, "# SPEC-TODO-API\n\nA todo list API: a model, and an endpoint listing todos.\n")
	script := srv.Add(modelserver.Script{Match: []string{"SPEC-TODO-API"}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("A=$(chorus task create 'Add todo model' --acceptance 'go test ./model passes') && " +
			"chorus task create 'Add list endpoint' --acceptance 'works correctly' --deps $A > vague.id && chorus signal COMPLETE")}},
		{Text: "Created two tasks."},
		{Tools: []modelserver.Tool{modelserver.Bash("chorus task update $(cat vague.id) --acceptance 'GET /todos returns 200 with a JSON list' && chorus signal COMPLETE")}},
		{Text: "Fixed the vague criterion."},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBin, "-C", dir, "plan", "--from", "SPEC.md", "--headless")
	out, err := cmd.CombinedOutput()
	report := func() string {
		var b strings.Builder
		b.WriteString(string(out))
		for _, r := range srv.Requests() {
			fmt.Fprintf(&b, "\nrequest: %s script %d index %d last user: %.300q", r.Kind, r.Script, r.Index, r.LastUser)
		}
		log, _ := os.ReadFile(filepath.Join(dir, ".chorus", "logs", "plan-claude.log"))
		return b.String() + "\n--- Plan Agent terminal ---\n" + string(log)
	}
	if err != nil {
		t.Fatalf("chorus plan: %v\n%s", err, report())
	}
	if !strings.Contains(string(out), "review 1/3: 1 violation(s) handed to the Plan Agent") || !strings.Contains(string(out), "The plan is ready: 2 task(s)") {
		t.Fatalf("output:\n%s", report())
	}
	// The review reached the same Claude session as its third turn: typed
	// in, not a new process.
	reviewed := false
	for _, r := range srv.Requests() {
		if r.Script == script && r.Kind == "turn" && r.Index == 2 {
			reviewed = strings.Contains(r.LastUser, "Task review 1/3") && strings.Contains(r.LastUser, "[vague_criteria]")
		}
	}
	if !reviewed {
		t.Fatalf("no review turn carrying the violation in the Plan Agent's session\n%s", report())
	}
	st, err := planning.Load(filepath.Join(dir, ".chorus", "planning-state.json"))
	if err != nil || st.Status != planning.StatusReady || st.PlanSummary.From != "SPEC.md" ||
		len(st.ReviewIterations) != 1 || st.ReviewIterations[0] != (planning.Iteration{Iteration: 1, Issues: 1, Fixed: 1}) {
		t.Fatalf("planning state %+v %v", st, err)
	}
	list, err := exec.Command(chorusBin, "-C", dir, "task", "list", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var ts []struct {
		ID                 string
		AcceptanceCriteria string `json:"acceptance_criteria"`
		Dependencies       []struct {
			DependsOnID string `json:"depends_on_id"`
		}
	}
	json.Unmarshal(list, &ts)
	if len(ts) != 2 || len(ts[1].Dependencies) != 1 || ts[1].Dependencies[0].DependsOnID != ts[0].ID ||
		ts[1].AcceptanceCriteria != "GET /todos returns 200 with a JSON list" {
		t.Fatalf("tasks: %s", list)
	}
}

// planProject is a repository with SPEC.md and Chorus set up, its claude
// profile talking to srv with the repository trusted.
func planProject(t *testing.T, srv *modelserver.Server, spec string) string {
	t.Helper()
	return planProjectTrust(t, srv, spec, true)
}

// planProjectTrust is planProject, the repository trusted in Claude Code
// or not.
func planProjectTrust(t *testing.T, srv *modelserver.Server, spec string, trust bool) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.email", "t@example.com")
	git(t, dir, "config", "user.name", "T")
	os.WriteFile(filepath.Join(dir, "SPEC.md"), []byte(spec), 0o644)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "init")
	if out, err := exec.Command(chorusBin, "-C", dir, "init", "--yes", "--prefix", "td").CombinedOutput(); err != nil {
		t.Fatalf("init: %v %s", err, out)
	}
	home := t.TempDir()
	env, err := clitest.ClaudeHome(home, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	// Claude Code asks about trusting each folder: trust exactly the root
	// the Plan Agent runs in.
	if trust {
		if err := clitest.TrustDirs(home, dir); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, ".chorus", "config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	claude := cfg["agents"].(map[string]any)["available"].(map[string]any)["claude"].(map[string]any)
	claude["command"], claude["env"] = tools.Claude, env
	cfg["completion"].(map[string]any)["stopGraceSeconds"] = 3
	cfg["planning"] = map[string]any{"maxReviewIterations": 3, "timeoutMinutes": 2} // a hang fails, with the terminal shown
	b, _ = json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, b, 0o644)

	return dir
}

// `chorus plan --from SPEC.md --headless` on a spec over 500 lines with
// interactive Claude Code: Chorus splits it along its headings and types
// one part per turn into the same session, each later part with the tasks
// the earlier ones made; the review then runs on the whole plan, clean at
// its first pass, and records that pass. The session log carries
// planning's events under their modes.
func TestPlanChunkedSpecWithClaude(t *testing.T) {
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var spec strings.Builder
	spec.WriteString("# SPEC-LONG-STORE\n\n## Models\n\n")
	for i := 1; i <= 280; i++ {
		fmt.Fprintf(&spec, "- MODEL-REQ-%d: the item model keeps field f%d.\n", i, i)
	}
	spec.WriteString("\n## Endpoints\n\n")
	for i := 1; i <= 280; i++ {
		fmt.Fprintf(&spec, "- ENDPOINT-REQ-%d: GET /items/%d returns 200.\n", i, i)
	}
	dir := planProject(t, srv, spec.String())
	script := srv.Add(modelserver.Script{Match: []string{"SPEC-LONG-STORE"}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("chorus task create 'Add item model' --acceptance 'go test ./model passes' > model.id && chorus signal COMPLETE")}},
		{Text: "Created the model task."},
		{Tools: []modelserver.Tool{modelserver.Bash("chorus task create 'Add item endpoints' --acceptance 'GET /items/1 returns 200' --deps $(cat model.id) && chorus signal COMPLETE")}},
		{Text: "Created the endpoint task."},
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	out, err := exec.CommandContext(ctx, chorusBin, "-C", dir, "plan", "--from", "SPEC.md", "--headless").CombinedOutput()
	report := func() string {
		var b strings.Builder
		b.WriteString(string(out))
		for _, r := range srv.Requests() {
			fmt.Fprintf(&b, "\nrequest: %s script %d index %d last user: %.300q", r.Kind, r.Script, r.Index, r.LastUser)
		}
		log, _ := os.ReadFile(filepath.Join(dir, ".chorus", "logs", "plan-claude.log"))
		return b.String() + "\n--- Plan Agent terminal ---\n" + string(log)
	}
	if err != nil {
		t.Fatalf("chorus plan: %v\n%s", err, report())
	}
	if !strings.Contains(string(out), "part 2/2 of SPEC.md") || !strings.Contains(string(out), "The plan is ready: 2 task(s)") {
		t.Fatalf("output:\n%s", report())
	}
	// One prompt per part, in one session: part 1 without part 2's text,
	// part 2 with the task part 1 made.
	modelID, _ := os.ReadFile(filepath.Join(dir, "model.id"))
	var part1, part2 bool
	for _, r := range srv.Requests() {
		if r.Script != script || r.Kind != "turn" {
			continue
		}
		switch r.Index {
		case 0:
			part1 = strings.Contains(r.LastUser, "Part 1/2") && strings.Contains(r.LastUser, "MODEL-REQ-280") && !strings.Contains(r.LastUser, "ENDPOINT-REQ-1:")
		case 2:
			part2 = strings.Contains(r.LastUser, "Part 2/2") && strings.Contains(r.LastUser, "ENDPOINT-REQ-280") && !strings.Contains(r.LastUser, "MODEL-REQ-1:") &&
				strings.Contains(r.LastUser, strings.TrimSpace(string(modelID))+": Add item model")
		}
	}
	if !part1 || !part2 {
		t.Fatalf("parts (1 %v, 2 %v) not one prompt each with the earlier tasks\n%s", part1, part2, report())
	}
	st, err := planning.Load(filepath.Join(dir, ".chorus", "planning-state.json"))
	if err != nil || st.Status != planning.StatusReady || len(st.ReviewIterations) != 1 || st.ReviewIterations[0] != (planning.Iteration{Iteration: 1}) {
		t.Fatalf("planning state %+v %v", st, err)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".chorus", "session-log.jsonl"))
	var generated, iterated, agent bool
	for _, l := range strings.Split(strings.TrimSpace(string(log)), "\n") {
		var e struct {
			Mode, Event string
			Details     map[string]any
		}
		if err := json.Unmarshal([]byte(l), &e); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		switch {
		case e.Event == "tasks_generated":
			generated = e.Mode == "planning" && fmt.Sprint(e.Details["count"]) == "2"
		case e.Event == "iteration_complete":
			iterated = e.Mode == "review" && fmt.Sprint(e.Details["issues"]) == "0"
		case e.Details["taskId"] == "(plan)":
			agent = true
			if e.Mode != "planning" {
				t.Errorf("a Plan Agent event logged as %q: %s", e.Mode, l)
			}
		}
	}
	if !generated || !iterated || !agent {
		t.Fatalf("session log (tasks_generated %v, iteration_complete %v, agent events %v):\n%s", generated, iterated, agent, log)
	}
}

// A headless Plan Agent stuck on Claude Code's trust dialog: `chorus plan
// --headless` says what it waits on (read from its screen), instead of
// only "the Plan Agent is writing tasks" until the timeout.
func TestPlanStuckOnDialogSaysSo(t *testing.T) {
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := planProjectTrust(t, srv, "# SPEC-STUCK\n\nA todo API.\n", false)
	ctx, cancel := context.WithTimeout(context.Background(), 2*wait)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBin, "-C", dir, "plan", "--from", "SPEC.md", "--headless")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cancel()
	var seen strings.Builder
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "the Plan Agent is stuck: waiting on a dialog") {
			if !strings.Contains(sc.Text(), "trust") || !strings.Contains(sc.Text(), ".chorus/logs/plan-claude.log") {
				t.Fatalf("stuck line does not say what: %s", sc.Text())
			}
			t.Log(sc.Text())
			return
		}
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".chorus", "logs", "plan-claude.log"))
	t.Fatalf("chorus plan ended without saying the Plan Agent is stuck:\n%s\n--- Plan Agent terminal ---\n%s", seen.String(), log)
}
