package orchestrator

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge"
)

// writeHook installs an executable hook for ev.
func writeHook(t *testing.T, h *harness, ev hooks.Event, body string) {
	t.Helper()
	dir := filepath.Join(h.dir.Path, "hooks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, string(ev)), []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
}

func hookDone(ev hooks.Event) func(Event) bool {
	return func(e Event) bool { return e.Kind == EvHook && e.Fields["hook"] == string(ev) }
}

// Every one of the 13 events runs its hook with the event as JSON on
// stdin, on a real repository with scripted agents: two tasks that
// conflict, an agent that exits non-zero, one that runs past the task
// timeout, and one a post-iteration hook completes.
func TestEveryHookFires(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) {
		c.Agents.MaxParallel = 5
		c.Completion.TaskTimeout = 1
		c.Completion.StopGraceSeconds = 1
		c.Merge.AgentResolve = false // the conflict waits for a person
	})
	a := h.task("conflict a", beads.CreateOptions{})
	b := h.task("conflict b", beads.CreateOptions{})
	c := h.task("crashes first", beads.CreateOptions{})
	d := h.task("hangs", beads.CreateOptions{})
	e := h.task("hook completes", beads.CreateOptions{})
	// a finishes only once b works from the same base, so whichever lands
	// second conflicts on shared.txt.
	script := fmt.Sprintf(`
@ task=%s
write shared.txt "from a"
commit "a"
run "while [ ! -f $CHORUS_DIR/b-started ]; do sleep 0.05; done"
signal COMPLETE
@ task=%s
run "touch $CHORUS_DIR/b-started"
write shared.txt "from b"
commit "b"
signal COMPLETE
@ task=%s iteration=1
exit 3
@ task=%s
write c.txt "c"
commit "c"
signal COMPLETE
@ task=%s
signal PROGRESS 1
ignore-term
hang
@ task=%s
write e.txt "e"
commit "e"
`, a, b, c, c, d, e)
	if err := os.WriteFile(filepath.Join(h.root, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	logDir := t.TempDir()
	for _, ev := range hooks.Events {
		body := fmt.Sprintf("in=$(cat)\nprintf '%%s\\n' \"$in\" >> %s/%s.jsonl\n", logDir, ev)
		if ev == hooks.PostIteration {
			body += `case "$in" in *'"title":"hook completes"'*) echo '{"result":"complete","message":"done by the hook"}'; exit 0;; esac` + "\n"
		}
		body += `echo '{"result":"continue","message":"logged"}'` + "\n"
		writeHook(t, h, ev, body)
	}
	h.start()
	for _, id := range []string{a, b, c, d, e} {
		h.do(Command{Kind: CmdAssign, TaskID: id})
	}
	sig := h.waitFor(kind(EvSignal, d))
	h.waitScreen(sig.Agent, "PROGRESS") // what on-agent-timeout is to be shown
	if err := h.eng.do(context.Background(), func() {
		h.eng.st.Tasks[d].FirstStarted = time.Now().Add(-2 * time.Minute)
		h.eng.checkTimeouts()
	}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvFailed, d))
	for _, id := range []string{a, b, c, e} {
		h.waitFor(kind(EvCompleted, id))
	}
	h.waitFor(func(ev Event) bool {
		return ev.Kind == EvHook && strings.Contains(ev.Text, "post-iteration hook: complete: done by the hook") && ev.Task == e
	})
	for _, ev := range hooks.Events {
		if ev != hooks.PostIteration {
			h.waitFor(hookDone(ev))
		}
	}
	seen := map[hooks.Event][]hooks.Input{}
	for _, ev := range hooks.Events {
		f, err := os.Open(filepath.Join(logDir, string(ev)+".jsonl"))
		if err != nil {
			t.Fatalf("%s never ran: %v", ev, err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var in hooks.Input
			if err := json.Unmarshal(sc.Bytes(), &in); err != nil {
				t.Fatalf("%s: stdin is not JSON: %v\n%s", ev, err, sc.Text())
			}
			if in.Event != ev || in.Task == nil || in.Task.ID == "" || in.Agent == nil || in.Agent.ID == "" || in.Agent.Type != "script" {
				t.Fatalf("%s: incomplete input %s", ev, sc.Text())
			}
			seen[ev] = append(seen[ev], in)
		}
		f.Close()
	}
	find := func(ev hooks.Event, task string) hooks.Input {
		for _, in := range seen[ev] {
			if in.Task.ID == task {
				return in
			}
		}
		t.Fatalf("%s never ran for %s: %+v", ev, task, seen[ev])
		return hooks.Input{}
	}
	if in := find(hooks.PreTaskClaim, a); in.Task.Status != beads.StatusOpen || in.Task.Title != "conflict a" {
		t.Errorf("pre-task-claim: %+v", in.Task)
	}
	if in := find(hooks.PostTaskClaim, a); in.Task.Status != beads.StatusInProgress || !strings.HasPrefix(in.Agent.Worktree, ".worktrees/") {
		t.Errorf("post-task-claim: %+v %+v", in.Task, in.Agent)
	}
	if in := find(hooks.PreIteration, c); in.Iteration == nil || in.Iteration.Number != 1 || in.Iteration.MaxIterations != 50 {
		t.Errorf("pre-iteration: %+v", in.Iteration)
	}
	if in := find(hooks.OnAgentError, c); in.Output == nil || in.Output.ExitCode != 3 {
		t.Errorf("on-agent-error: %+v", in.Output)
	}
	if in := find(hooks.OnAgentTimeout, d); in.Output == nil || !strings.Contains(in.Output.Stdout, "PROGRESS") {
		t.Errorf("on-agent-timeout: %+v", in.Output)
	}
	if in := find(hooks.PostTaskComplete, e); in.Task.Status != beads.StatusClosed {
		t.Errorf("post-task-complete: %+v", in.Task)
	}
	conflict := seen[hooks.OnConflict][0]
	if conflict.Merge == nil || len(conflict.Merge.ConflictFiles) != 1 || conflict.Merge.ConflictFiles[0] != "shared.txt" || conflict.Merge.Target != "main" {
		t.Errorf("on-conflict: %+v", conflict.Merge)
	}
	if in := seen[hooks.PostMerge][0]; in.Merge == nil || in.Merge.Commit == "" || in.Merge.Branch == "" {
		t.Errorf("post-merge: %+v", in.Merge)
	}
	// e completed through the quality gate on the hook's word alone.
	if tk := h.get(e); tk.Status != beads.StatusClosed {
		t.Errorf("%s: %s", e, tk.Status)
	}
}

// A pre-merge hook that blocks holds the merge with its message until the
// hook allows it and a person retries.
func TestPreMergeBlockHolds(t *testing.T) {
	h := newHarness(t, "write f.txt \"x\"\ncommit \"f\"\nsignal COMPLETE\n", nil)
	allow := filepath.Join(t.TempDir(), "allow")
	writeHook(t, h, hooks.PreMerge, fmt.Sprintf("cat >/dev/null\n[ -f %s ] && exit 0\necho '{\"result\":\"block\",\"message\":\"release freeze until Friday\"}'\n", allow))
	id := h.task("frozen", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	held := h.waitFor(kind("merge_held", id))
	if !strings.Contains(held.Text, "release freeze until Friday") {
		t.Fatalf("held: %s", held.Text)
	}
	h.waitFor(func(ev Event) bool {
		return ev.Kind == EvHook && strings.Contains(ev.Text, "pre-merge hook: block: release freeze")
	})
	h.sync()
	var it merge.Item
	for _, x := range h.eng.Snapshot().Merge.Items {
		if x.TaskID == id {
			it = x
		}
	}
	if it.Status != merge.StatusHeld || !strings.Contains(it.LastError, "release freeze until Friday") || !strings.Contains(it.Action, "retry") {
		t.Fatalf("item: %+v", it)
	}
	if log := git(t, h.root, "log", "--format=%B", "main"); strings.Contains(log, "Chorus-Task: "+id) {
		t.Fatal("landed despite the hook")
	}
	if err := os.WriteFile(allow, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.do(Command{Kind: CmdMergeRetry, TaskID: id})
	h.waitFor(kind("merge_landed", id))
	if log := git(t, h.root, "log", "--format=%B", "main"); !strings.Contains(log, "Chorus-Task: "+id) {
		t.Fatalf("not landed:\n%s", log)
	}
}

// A blocked pre-task-claim leaves the task unclaimed, says why, and
// autopilot does not pick it again at once.
func TestPreTaskClaimBlockSkips(t *testing.T) {
	h := newHarness(t, "write f.txt \"x\"\ncommit \"f\"\nsignal COMPLETE\n", func(c *config.Config) { c.Mode = config.ModeAutopilot })
	writeHook(t, h, hooks.PreTaskClaim, `cat >/dev/null; echo '{"result":"block","message":"needs a design review"}'`+"\n")
	id := h.task("unreviewed", beads.CreateOptions{})
	h.start()
	ev := h.waitFor(kind(EvReleased, id))
	if !strings.Contains(ev.Text, "pre-task-claim hook blocked it: needs a design review") {
		t.Fatalf("released: %s", ev.Text)
	}
	h.waitIdle()
	if n := h.count(EvAssigned); n != 1 {
		t.Fatalf("assigned %d times", n)
	}
	if tk := h.get(id); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("task: %+v", tk)
	}
}

// A hook that fails is reported by name and treated as continue.
func TestFailingHookContinues(t *testing.T) {
	h := newHarness(t, "write f.txt \"x\"\ncommit \"f\"\nsignal COMPLETE\n", nil)
	writeHook(t, h, hooks.PreTaskComplete, "echo broken >&2; exit 2\n")
	id := h.task("done anyway", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(e Event) bool { return e.Kind == EvAlert && e.Fields["hook"] == "pre-task-complete" })
	if !strings.Contains(ev.Text, "exited with code 2: broken; treated as continue") {
		t.Fatalf("alert: %s", ev.Text)
	}
	h.waitFor(kind(EvCompleted, id))
}

// A blocked pre-task-complete refuses the COMPLETE with the hook's message
// as the agent's feedback.
func TestPreTaskCompleteBlockRefuses(t *testing.T) {
	h := newHarness(t, "@ iteration=1\nwrite f.txt \"x\"\ncommit \"f\"\nsignal COMPLETE\n@ *\necho-prompt\nsignal COMPLETE\n", nil)
	flag := filepath.Join(t.TempDir(), "once")
	writeHook(t, h, hooks.PreTaskComplete, fmt.Sprintf("cat >/dev/null\n[ -f %s ] && exit 0\ntouch %s\necho '{\"result\":\"block\",\"message\":\"CHANGELOG entry missing\"}'\n", flag, flag))
	id := h.task("needs changelog", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	h.waitFor(func(e Event) bool { return e.Kind == EvIteration && e.Task == id && e.Fields["iteration"] == 2 })
	prompt, err := os.ReadFile(filepath.Join(h.dir.Logs(), "script-"+id+".log"))
	if err != nil || !strings.Contains(string(prompt), "CHANGELOG entry missing") {
		t.Fatalf("the agent was not told why (%v)", err)
	}
}
