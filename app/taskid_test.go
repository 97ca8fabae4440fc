package app

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// A task whose id the merge queue would reject is refused before it is
// claimed, with an error that fails the run (exit 6); the other task runs
// and lands, and the summary counts this run only.
func TestTaskWithUnusableIDIsRefusedAndFailsTheRun(t *testing.T) {
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
signal COMPLETE
`, nil)
	good := strings.TrimSpace(chorus(t, dir, "task", "create", "good").stdout)
	// An id from elsewhere (bd, an edited file) that no ref may hold.
	issues := filepath.Join(dir, ".beads", "issues.jsonl")
	b, err := os.ReadFile(issues)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(strings.SplitN(strings.TrimSpace(string(b)), "\n", 2)[0]), &rec); err != nil {
		t.Fatal(err)
	}
	rec["id"], rec["title"] = "bad..id", "bad"
	line, _ := json.Marshal(rec)
	if err := os.WriteFile(issues, append(b, append(line, '\n')...), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := chorus(t, dir, "task", "show", "bad..id", "--json"); r.code != 0 {
		t.Fatalf("the store does not list the task: %s", r.stderr)
	}

	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitUnfinished {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUnfinished, out)
	}
	if !strings.Contains(out, `task id "bad..id" cannot be used`) || !strings.Contains(out, "1 errors, 1 merges, 1 iterations") {
		t.Fatalf("error or summary missing:\n%s", out)
	}
	var tk beads.Task
	json.Unmarshal([]byte(chorus(t, dir, "task", "show", "bad..id", "--json").stdout), &tk)
	if tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("bad..id was claimed or changed: %+v", tk)
	}
	json.Unmarshal([]byte(chorus(t, dir, "task", "show", good, "--json").stdout), &tk)
	if tk.Status != beads.StatusClosed {
		t.Fatalf("%s: %s", good, tk.Status)
	}
	// A second run does nothing new: its summary says so, whatever the
	// repository did before.
	code, out = runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitUnfinished || !strings.Contains(out, "0 closed, 0 failed, 0 blocked, 0 released, 1 errors, 0 merges, 0 iterations") {
		t.Fatalf("second run: exit %d:\n%s", code, out)
	}
	// Asking for it by id is refused with the same reason.
	code, out = runBinary(t, dir, "--headless", "--task", "bad..id")
	if code == 0 || !strings.Contains(out, `task id "bad..id" cannot be used`) {
		t.Fatalf("--task bad..id: exit %d:\n%s", code, out)
	}
}

// An agent that moves main itself (git update-ref from its worktree) holds
// the merge queue instead of going unnoticed: the run ends with exit 6 and
// says what happened and what to do; `chorus merge accept-target` accepts
// the new tip and lands what waited.
func TestAgentMovingMainHoldsUntilAccepted(t *testing.T) {
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
run "git update-ref refs/heads/main HEAD"
signal COMPLETE
`, nil)
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "sneaky").stdout)
	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitUnfinished || !strings.Contains(out, "the merge queue is held: main moved outside Chorus") ||
		!strings.Contains(out, "chorus merge accept-target") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, "0 errors, 1 merges") {
		t.Fatalf("landed on the moved tip:\n%s", out)
	}
	code, out = runBinary(t, dir, "merge", "accept-target")
	if code != 0 || !strings.Contains(out, "target accepted") || !strings.Contains(out, "merge_landed") {
		t.Fatalf("accept-target: exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, id) {
		t.Fatalf("%s not landed:\n%s", id, out)
	}
}
