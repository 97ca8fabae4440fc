package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// Repeated --acceptance flags are each a criterion, all kept (create and
// update).
func TestTaskCreateKeepsEveryAcceptance(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := chorus(t, dir, "task", "create", "two criteria", "--acceptance", "go test ./a passes", "--acceptance", "go vet ./a is clean", "--json")
	if r.code != 0 {
		t.Fatalf("create: %s", r.stderr)
	}
	var task beads.Task
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil {
		t.Fatal(err)
	}
	if task.AcceptanceCriteria != "go test ./a passes\ngo vet ./a is clean" {
		t.Fatalf("acceptance %q", task.AcceptanceCriteria)
	}
	if r := chorus(t, dir, "task", "update", task.ID, "--acceptance", "one", "--acceptance", "two"); r.code != 0 {
		t.Fatalf("update: %s", r.stderr)
	}
	r = chorus(t, dir, "task", "show", task.ID, "--json")
	if !strings.Contains(r.stdout, `one\ntwo`) {
		t.Fatalf("after update: %s", r.stdout)
	}
}

// Re-running init --yes with --max-agents writes it, and the prefix
// printed is the one the config holds; a different --prefix is kept out,
// saying why.
func TestReinitMaxAgentsAndPrefix(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes", "--prefix", "first"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	r := chorus(t, dir, "init", "--yes", "--max-agents", "2", "--prefix", "second")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	b, err := os.ReadFile(filepath.Join(dir, ".chorus", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Project struct {
			TaskIDPrefix string `json:"taskIdPrefix"`
		} `json:"project"`
		Agents struct {
			MaxParallel int `json:"maxParallel"`
		} `json:"agents"`
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Agents.MaxParallel != 2 || cfg.Project.TaskIDPrefix != "first" {
		t.Fatalf("config: %+v\n%s", cfg, r.stderr)
	}
	for _, want := range []string{`task id prefix "first"`, "updated agents.maxParallel 3 → 2", `kept task id prefix "first", not "second"`} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("init output lacks %q:\n%s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, `prefix "second"`) && !strings.Contains(r.stderr, `not "second"`) {
		t.Errorf("init printed a prefix the config does not hold:\n%s", r.stderr)
	}
}

// A task waiting on an open dependency is listed as waiting on it, not as
// open; once the dependency is closed it is open again.
func TestTaskListShowsWaiting(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	a := strings.TrimSpace(chorus(t, dir, "task", "create", "first").stdout)
	b := strings.TrimSpace(chorus(t, dir, "task", "create", "second", "--deps", a).stdout)
	row := func(out, id string) string {
		for _, l := range strings.Split(out, "\n") {
			if strings.HasPrefix(l, id+" ") {
				return l
			}
		}
		t.Fatalf("no row for %s in\n%s", id, out)
		return ""
	}
	out := chorus(t, dir, "task", "list").stdout
	if l := row(out, b); !strings.Contains(l, "waiting on "+a) || strings.Contains(l, " open ") {
		t.Fatalf("waiting task listed as %q", l)
	}
	if l := row(out, a); !strings.Contains(l, " open ") {
		t.Fatalf("ready task listed as %q", l)
	}
	if r := chorus(t, dir, "task", "close", a); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if l := row(chorus(t, dir, "task", "list").stdout, b); !strings.Contains(l, " open ") {
		t.Fatalf("after its dependency closed: %q", l)
	}
}
