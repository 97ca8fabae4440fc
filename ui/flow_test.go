package ui

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.Cleanup()
	os.Exit(code)
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testkit.Git(t, dir, args...)
}

// session is a real engine on a temporary repository, agents scripted.
type session struct {
	t      *testing.T
	root   string
	store  beads.Store
	cfg    config.Config
	eng    *orchestrator.Engine
	events *testkit.Events[orchestrator.Event]
	what   string // the wait in progress, for failure reports
}

func newSession(t *testing.T, script string, tweak func(*config.Config)) *session {
	t.Helper()
	bin := testkit.Chorus(t)
	root := testkit.Repo(t)
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	prof := config.AgentProfile{Command: bin, Args: []string{"scripted-agent", "--script", filepath.Join(root, "agent.script")}, Prompt: config.PromptArg}
	cfg.Agents.Available["script"] = prof
	cfg.Agents.Available["script2"] = prof
	cfg.Agents.Default = "script"
	cfg.Completion.StopGraceSeconds = 2
	if tweak != nil {
		tweak(&cfg)
	}
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(script), 0o644)
	git(t, root, "add", "-A")
	git(t, root, "commit", "-q", "-m", "chorus setup")
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return &session{t: t, root: root, store: st, cfg: cfg}
}

func (s *session) task(id, title string, prio int) {
	s.t.Helper()
	if _, err := s.store.Create(context.Background(), title, beads.CreateOptions{ID: id, Priority: prio, PrioritySet: true}); err != nil {
		s.t.Fatal(err)
	}
}

// start runs the engine and a UI on it, as `chorus` does, and stops
// them in the app's order at the end of the test.
func (s *session) start(w, h int) *driver {
	s.t.Helper()
	dir := chorusdir.At(s.root)
	// ChorusExe starts the agent hosts (agents.host is on by default).
	eng, err := orchestrator.New(orchestrator.Options{Dir: dir, Config: s.cfg, Store: s.store, Target: "main", ChorusExe: testkit.Chorus(s.t), Cols: 80, Rows: 24})
	if err != nil {
		s.t.Fatal(err)
	}
	// `chorus signal` must reach this engine: agents find chorus on PATH.
	s.t.Setenv("PATH", filepath.Dir(testkit.Chorus(s.t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	if err := eng.Recover(context.Background()); err != nil {
		s.t.Fatal(err)
	}
	s.eng = eng
	s.events = &testkit.Events[orchestrator.Event]{TB: s.t, C: eng.Subscribe(), Limit: waitLimit, Report: s.report}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	if err := eng.RouteSignals(ctx); err != nil {
		s.t.Fatal(err)
	}
	// Registered first, so it runs after the UI's cleanup: UI, then engine.
	s.t.Cleanup(func() {
		cancel()
		<-done
	})
	// The quit grace is long enough that only a finished agent ends a wait.
	return startUI(s.t, Options{Engine: eng, Store: s.store, Config: s.cfg, Version: "test", Dir: dir, QuitGrace: 2 * waitLimit}, w, h)
}

// waitFor returns the first engine event, seen or coming, that matches.
func (s *session) waitFor(what string, pred func(orchestrator.Event) bool) orchestrator.Event {
	s.t.Helper()
	s.what = what
	return s.events.Wait(pred)
}

func (s *session) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: not seen; events:\n", s.what)
	for _, ev := range s.events.Log {
		fmt.Fprintf(&b, "  %s %s %s %s\n", ev.Kind, ev.Agent, ev.Task, ev.Text)
	}
	return b.String()
}

func kind(k orchestrator.EventKind, task string) func(orchestrator.Event) bool {
	return func(e orchestrator.Event) bool { return e.Kind == k && (task == "" || e.Task == task) }
}

// waitSnap waits on Changed until the engine's snapshot satisfies pred.
func (s *session) waitSnap(what string, pred func(orchestrator.Snapshot) bool) {
	s.t.Helper()
	deadline := time.After(waitLimit)
	for !pred(s.eng.Snapshot()) {
		select {
		case <-s.eng.Changed():
		case ev := <-s.events.C:
			s.events.Log = append(s.events.Log, ev)
		case <-deadline:
			s.t.Fatalf("%s: never happened; snapshot %+v", what, s.eng.Snapshot())
		}
	}
}

func (s *session) get(id string) beads.Task {
	s.t.Helper()
	tk, err := s.store.Get(context.Background(), id)
	if err != nil {
		s.t.Fatal(err)
	}
	return tk
}

// The intervention keys against real agents: assign, type into an agent,
// answer NEEDS_HELP, approve the merge, roll the task back; spawn with a
// chosen profile, redirect, stop, pause, checkpoint, autopilot and mode,
// edit, block and undo, done, new task, the views, and quit.
func TestFlowRealEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agents")
	}
	s := newSession(t, `
@ task=t-a
print "alpha working"
tag PROGRESS 50
wait-input
tag NEEDS_HELP "which database?"
wait-input
run "echo done > a.txt"
commit "feat: a"
tag COMPLETE
hang
@ *
print "other working"
tag PROGRESS 10
hang
`, func(c *config.Config) {
		c.Agents.MaxParallel = 2
		c.Merge.RequireApproval = true
	})
	s.task("t-a", "alpha", 0)
	s.task("t-b", "beta", 1)
	s.task("t-c", "gamma", 2)
	d := s.start(150, 45)
	d.expect("t-a [P0] alpha")

	// Enter assigns the selected task; the tile shows the agent's output.
	d.press("<Enter>")
	s.waitSnap("t-a progress", func(sn orchestrator.Snapshot) bool {
		a := sn.Agents["script-t-a"]
		return a != nil && a.Progress == 50
	})
	d.sync()
	d.expect("alpha working")
	d.expect("50%")

	// The prefix key: keys go to the agent until it is pressed again.
	d.press("<Tab>", "<C-\\>", "hi", "<Enter>", "<C-\\>")
	s.waitFor("needs help", kind(orchestrator.EvNeedsHelp, "t-a"))
	d.sync()
	d.expect("received: hi")
	d.expect("NEEDS HELP")

	// i → a answers the question; the agent finishes; the merge waits for
	// approval; M → m approves it.
	d.press("i", "a")
	if d.overlay() != ovPrompt {
		t.Fatalf("answer prompt not open: %q", d.overlay())
	}
	d.press("postgres", "<Enter>")
	s.waitSnap("merge waiting for approval", func(sn orchestrator.Snapshot) bool {
		return len(sn.Merge.Items) > 0 && sn.Merge.Items[0].Status == merge.StatusWaitingApproval
	})
	d.press("M")
	d.expect("waiting-approval")
	d.press("m")
	s.waitSnap("merge landed", func(sn orchestrator.Snapshot) bool {
		return len(sn.Merge.Items) > 0 && sn.Merge.Items[0].Status == merge.StatusLanded
	})
	d.sync()
	d.expect("landed")
	d.press("<Esc>")
	if got := git(t, s.root, "show", "main:a.txt"); got != "done" {
		t.Fatalf("main:a.txt = %q", got)
	}

	// R → 2 rolls t-a back (confirmed) and reopens it.
	d.press("<Tab>") // task panel; t-a is closed, select it with 1..9 won't: find it
	d.ui(func() { d.u.selTask = "t-a" })
	d.press("R")
	d.expect("SINGLE TASK")
	d.press("2", "y")
	s.waitFor("rollback", kind(orchestrator.EvRollback, "t-a"))
	d.sync()
	if st := s.get("t-a").Status; st != beads.StatusOpen {
		t.Fatalf("t-a after rollback: %s", st)
	}

	// s spawns with a chosen profile.
	d.ui(func() { d.u.selTask = "t-b" })
	d.press("s")
	if d.overlay() != ovChoose {
		t.Fatalf("profile chooser not open: %q", d.overlay())
	}
	for i, name := range s.cfg.AgentNames() {
		if name == "script2" {
			d.press(fmt.Sprint(i + 1))
		}
	}
	s.waitSnap("script2 on t-b", func(sn orchestrator.Snapshot) bool { return sn.Agents["script2-t-b"] != nil })
	d.sync()
	d.expect("SCRIPT2 (t-b)")

	// r redirects it to t-c; x stops it.
	d.press("<Tab>")
	d.ui(func() { d.u.selAgent = "script2-t-b" })
	d.press("r")
	if d.overlay() != ovChoose {
		t.Fatalf("redirect chooser not open: %q", d.overlay())
	}
	d.expect("t-c")
	var items []present.TaskRow
	d.ui(func() { items = d.u.vm.rows })
	n := 0
	for _, r := range items {
		if r.State == present.StateOpen {
			n++
			if r.ID == "t-c" {
				break
			}
		}
	}
	d.press(fmt.Sprint(n))
	s.waitFor("redirect", kind(orchestrator.EvAssigned, "t-c"))
	s.waitSnap("agent on t-c", func(sn orchestrator.Snapshot) bool {
		for _, a := range sn.Agents {
			if a.TaskID == "t-c" {
				return true
			}
		}
		return false
	})
	d.sync()
	d.ui(func() {
		for id, a := range d.u.vm.snap.Agents {
			if a.TaskID == "t-c" {
				d.u.selAgent = id
			}
		}
	})
	d.press("x", "y")
	s.waitSnap("no agents", func(sn orchestrator.Snapshot) bool { return sn.Running == 0 })

	// Space pauses and resumes; c checkpoints; a starts autopilot, m
	// toggles back; u undoes the toggle.
	d.press("<Space>")
	s.waitSnap("paused", func(sn orchestrator.Snapshot) bool { return sn.Paused })
	d.sync()
	d.expect("PAUSED")
	d.press("<Space>")
	s.waitSnap("resumed", func(sn orchestrator.Snapshot) bool { return !sn.Paused })
	d.press("c")
	s.waitFor("checkpoint", kind(orchestrator.EvCheckpoint, ""))
	d.press("p") // not a key: nothing happens
	// Autopilot with the slots taken by nothing would start tasks; pause
	// first so the mode can be checked alone.
	d.press("<Space>")
	s.waitSnap("paused", func(sn orchestrator.Snapshot) bool { return sn.Paused })
	d.press("m")
	s.waitSnap("autopilot", func(sn orchestrator.Snapshot) bool { return sn.Mode == config.ModeAutopilot })
	d.press("u")
	s.waitSnap("semi-auto again", func(sn orchestrator.Snapshot) bool { return sn.Mode == config.ModeSemiAuto })
	d.press("a")
	s.waitSnap("autopilot running", func(sn orchestrator.Snapshot) bool { return sn.Mode == config.ModeAutopilot && !sn.Paused })
	d.press("m", "<Space>")
	s.waitSnap("semi-auto, paused", func(sn orchestrator.Snapshot) bool { return sn.Mode == config.ModeSemiAuto && sn.Paused })
	// Autopilot may have started agents meanwhile; k (kill all) clears them.
	if s.eng.Snapshot().Running > 0 {
		d.press("<C-c>", "y")
		s.waitSnap("no agents", func(sn orchestrator.Snapshot) bool { return sn.Running == 0 })
	}
	d.press("<Space>")
	s.waitSnap("resumed", func(sn orchestrator.Snapshot) bool { return !sn.Paused })

	// e edits, b blocks and u reopens, d closes.
	d.ui(func() { d.u.setPanel(panelTasks) })
	d.ui(func() { d.u.selTask = "t-c" })
	d.press("e")
	if d.overlay() != ovEditTask {
		t.Fatalf("edit form not open: %q", d.overlay())
	}
	d.press(" v2", "<C-s>")
	if got := s.get("t-c").Title; got != "gamma v2" {
		t.Fatalf("edited title %q", got)
	}
	d.press("b", "stuck", "<Enter>")
	if st := s.get("t-c").Status; st != beads.StatusBlocked {
		t.Fatalf("after b: %s", st)
	}
	d.press("u")
	if st := s.get("t-c").Status; st != beads.StatusOpen {
		t.Fatalf("after u: %s", st)
	}
	d.ui(func() { d.u.selTask = "t-b" })
	d.press("d", "y")
	if st := s.get("t-b").Status; st != beads.StatusClosed {
		t.Fatalf("after d: %s", st)
	}

	// n creates a task.
	d.press("n", "delta", "<C-s>")
	d.expect("delta")

	// The views open and close.
	for _, v := range []struct{ key, name, text string }{
		{"l", ovLogs, "agent_assigned"}, {"L", ovLearnings, "learnings.md"}, {"?", ovHelp, "Rollback menu"}, {"i", ovIntervention, "Active agents"},
	} {
		d.press(v.key)
		if d.overlay() != v.name {
			t.Fatalf("%s opened %q", v.key, d.overlay())
		}
		d.sync()
		d.expect(v.text)
		d.press("<Esc>")
	}
	d.press("g")
	d.expect("grid: ")

	// q with no agent running and nothing to merge quits at once.
	d.press("q")
	d.quitted()
}

// q with agents running offers to kill them or wait; "wait" pauses and
// quits once they are gone.
func TestFlowQuitWaitsForAgents(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agents")
	}
	s := newSession(t, `
print "working"
tag PROGRESS 10
run "while [ ! -f go.flag ]; do sleep 0.05; done; rm go.flag"
write work.txt done
commit "work"
tag COMPLETE
hang
`, nil)
	s.task("t-a", "alpha", 1)
	d := s.start(120, 40)
	d.press("<Enter>")
	s.waitSnap("progress", func(sn orchestrator.Snapshot) bool {
		a := sn.Agents["script-t-a"]
		return a != nil && a.Progress == 10
	})
	d.press("q")
	d.expect("Wait for them to finish")
	d.press("w")
	s.waitSnap("paused", func(sn orchestrator.Snapshot) bool { return sn.Paused })
	// The agent finishes its task; the UI quits by itself.
	os.WriteFile(filepath.Join(s.root, ".worktrees", "script-t-a", "go.flag"), nil, 0o644)
	d.quitted()
	if st := s.get("t-a").Status; st != beads.StatusClosed {
		t.Fatalf("t-a: %s\n%s", st, d.text())
	}
}

// e edits priority, labels and dependencies too; a dependency that would
// close a cycle is refused with the reason; u undoes the whole edit.
func TestFlowEditPriorityLabelsDeps(t *testing.T) {
	s := newSession(t, "hang\n", nil)
	s.task("t-a", "alpha", 0)
	s.task("t-b", "beta", 1)
	d := s.start(150, 45)
	d.ui(func() { d.u.setPanel(panelTasks); d.u.selTask = "t-b" })
	d.press("e")
	if d.overlay() != ovEditTask {
		t.Fatalf("edit form not open: %q", d.overlay())
	}
	// Title → Description → Acceptance → Priority: open it, P1 → P3.
	d.press("<Tab>", "<Tab>", "<Tab>", "<Enter>", "<Down>", "<Down>", "<Enter>")
	d.press("<Tab>", "backend api", "<Tab>", "t-a", "<C-s>")
	b := s.get("t-b")
	if b.Priority != 3 || !reflect.DeepEqual(b.Labels, []string{"api", "backend"}) && !reflect.DeepEqual(b.Labels, []string{"backend", "api"}) || !reflect.DeepEqual(b.BlockedBy(), []string{"t-a"}) {
		t.Fatalf("t-b after the edit: priority %d labels %v blocked by %v", b.Priority, b.Labels, b.BlockedBy())
	}
	// t-a blocked by t-b would close a cycle.
	d.ui(func() { d.u.selTask = "t-a" })
	d.press("e", "<Tab>", "<Tab>", "<Tab>", "<Tab>", "<Tab>", "t-b", "<C-s>")
	d.waitShown("cycle")
	if got := s.get("t-a").BlockedBy(); len(got) != 0 {
		t.Fatalf("t-a blocked by %v after a refused cycle", got)
	}
	d.press("u")
	b = s.get("t-b")
	if b.Priority != 1 || len(b.Labels) != 0 || len(b.BlockedBy()) != 0 {
		t.Fatalf("t-b after undo: priority %d labels %v blocked by %v", b.Priority, b.Labels, b.BlockedBy())
	}
}
