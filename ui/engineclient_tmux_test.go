package ui

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/remote"
)

// One engine, every front end: with chorus running in a tmux pane, the
// CLI in other shells acts through its engine and the TUI shows it. A
// task created from another shell appears in the TUI; status --json lists
// the live mode and one entry per agent; answer, task close of a running
// task (its agent gone, its work not merged), merge approve, merge drop,
// merge-user, task block and a mode change all take effect in the engine.
func TestCLIThroughTheEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-cli-engine")
	s := newSession(t, fmt.Sprintf(`
@ prompt~alpha-work
run "echo output of $CHORUS_TASK_ID; %[1]s -L %[2]s wait-for -S printed"
hang
@ prompt~quiz-work
run "A=$(chorus ask 'Which colour?' --option red --option blue); echo answer-was-$A"
hang
@ prompt~merge-work
run "echo $CHORUS_TASK_ID > work-$CHORUS_TASK_ID.txt"
commit "work of the task"
signal COMPLETE "done"
hang
`, x.bin, x.sock), func(c *config.Config) {
		c.Agents.MaxParallel = 4
		c.Merge.RequireApproval = true
	})
	s.task("t-a", "alpha-work", 0)
	s.task("t-q", "quiz-work", 1)
	s.task("t-m", "merge-work one", 2)
	s.task("t-d", "merge-work two", 3)
	bin := testkit.Chorus(t)
	t.Cleanup(func() {
		exec.Command(bin, "-C", s.root, "stop", "--wait").Run()
		exec.Command(x.bin, "-L", x.sock, "kill-server").Run()
	})
	cli := func(args ...string) string {
		t.Helper()
		var stderr strings.Builder
		cmd := exec.Command(bin, append([]string{"-C", s.root}, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("chorus %v: %v\n%s%s", args, err, out, stderr.String())
		}
		return string(out)
	}
	x.cmd("new-session", "-d", "-x", "160", "-y", "40", "-e", "PATH="+os.Getenv("PATH"),
		bin+" -C "+s.root+" --mode semi-auto; sleep 600")
	x.waitScreen("TASKS (4)")
	ctx := context.Background()
	sock := remote.SocketPath(chorusdir.At(s.root))
	ec, err := remote.Dial(ctx, sock, remote.RoleEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer ec.Close()
	events := &testkit.Events[orchestrator.Event]{TB: t, C: ec.Subscribe(), Limit: waitLimit}
	events.Report = func() string {
		var b strings.Builder
		for _, ev := range events.Log {
			fmt.Fprintf(&b, "%s %s %s %s\n", ev.Kind, ev.Agent, ev.Task, ev.Text)
		}
		return b.String() + x.cmd("capture-pane", "-p")
	}
	c, err := remote.Dial(ctx, sock, remote.RoleCLI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// A task made in another shell shows in the TUI.
	start := time.Now()
	id := strings.TrimSpace(cli("task", "create", "made in another shell"))
	returned := time.Now()
	x.waitScreen("made in another shell")
	t.Logf("task create → TUI: %v from the command's start, %v from its return", time.Since(start).Round(time.Millisecond), time.Since(returned).Round(time.Millisecond))
	cli("task", "block", id, "-r", "not now")
	x.waitScreen("TASKS (5)")
	// One written beside the engine (as bd or an editor would) shows too:
	// the engine watches the store.
	start = time.Now()
	s.task("t-x", "written beside the engine", 4)
	x.waitScreen("written beside the engine")
	t.Logf("store write beside the engine → TUI: %v", time.Since(start).Round(time.Millisecond))
	cli("task", "block", "t-x", "-r", "not now")
	x.waitScreen("TASKS (6)")

	// Two agents: status lists them, in the live mode.
	for _, id := range []string{"t-a", "t-q"} {
		if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id}); err != nil {
			t.Fatal(err)
		}
	}
	x.waitFor("printed")
	events.Wait(func(ev orchestrator.Event) bool { return ev.Kind == orchestrator.EvNeedsHelp && ev.Task == "t-q" })
	var st struct {
		Mode   struct{ Live, Chosen, Next string }
		Agents []struct {
			Name, Task, State string
			Iteration         int
		}
	}
	if err := json.Unmarshal([]byte(cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode.Live != "semi-auto" || len(st.Agents) != 2 || st.Agents[0].Task != "t-a" || st.Agents[0].State != "running" ||
		st.Agents[1].Task != "t-q" || st.Agents[1].State != "waiting for a person" || st.Agents[0].Iteration != 1 {
		t.Fatalf("status --json: %+v", st)
	}

	// answer: through the engine to the asking agent.
	cli("answer", "t-q", "2")
	events.Wait(func(ev orchestrator.Event) bool {
		return ev.Kind == orchestrator.EvAnswered && ev.Task == "t-q" && ev.Text == "blue"
	})
	x.waitScreen("answer-was-blue")

	// task close of a running task: its agent stops, the task stays closed.
	cli("task", "close", "t-a", "-r", "done by hand")
	events.Wait(func(ev orchestrator.Event) bool {
		return ev.Kind == orchestrator.EvFinished && ev.Agent == "script-t-a"
	})
	if tk := s.get("t-a"); tk.Status != beads.StatusClosed {
		t.Fatalf("t-a after close: %s", tk.Status)
	}
	if snap, err := c.Current(ctx); err != nil || snap.Agents["script-t-a"] != nil {
		t.Fatalf("t-a's agent after close: %+v %v", snap.Agents, err)
	}

	// merge approve and merge drop act on the engine's queue.
	for _, id := range []string{"t-m", "t-d"} {
		if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id}); err != nil {
			t.Fatal(err)
		}
	}
	waiting := func(id string) {
		events.Wait(func(ev orchestrator.Event) bool { return ev.Kind == "merge_waiting_approval" && ev.Task == id })
	}
	landed := func(id string) {
		events.Wait(func(ev orchestrator.Event) bool { return ev.Kind == "merge_landed" && ev.Task == id })
	}
	waiting("t-m")
	waiting("t-d")
	cli("merge", "approve", "t-m")
	landed("t-m")
	cli("merge", "drop", "t-d")
	snap, err := c.Current(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range snap.Merge.Items {
		if it.TaskID == "t-d" {
			t.Fatalf("t-d still in the queue after merge drop: %+v", it)
		}
		if it.TaskID == "t-a" {
			t.Fatalf("the closed task's work went to the queue: %+v", it)
		}
	}

	// merge-user queues a branch of the user's in the running engine.
	wt := filepath.Join(t.TempDir(), "feature")
	git(t, s.root, "worktree", "add", "-q", "-b", "feature", wt)
	os.WriteFile(filepath.Join(wt, "feature.txt"), []byte("mine\n"), 0o644)
	git(t, wt, "add", "feature.txt")
	git(t, wt, "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "my feature")
	cli("merge-user", "feature")
	waiting("user-feature")
	cli("merge", "approve", "user-feature")
	landed("user-feature")

	// A mode change: live in the engine and its header, and the choice
	// that lasts.
	cli("mode", "autopilot")
	events.Wait(func(ev orchestrator.Event) bool { return ev.Kind == orchestrator.EvMode && ev.Text == "autopilot" })
	x.waitScreen("│ autopilot │")
	if err := json.Unmarshal([]byte(cli("status", "--json")), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode.Live != "autopilot" {
		t.Fatalf("status after the mode change: %+v", st.Mode)
	}
	for deadline := time.Now().Add(waitLimit); ; x.cmd("wait-for", "-S", "nothing") {
		ps, err := planning.Load(filepath.Join(s.root, ".chorus", "planning-state.json"))
		if err == nil && ps.Mode() == "autopilot" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the choice was not recorded: %+v %v", ps, err)
		}
	}
}

// The first run has a background engine: with no tasks, chorus plans
// (the goal, the Plan Agent's tasks), the mode dialog starts the agents in
// a background engine, the terminal detaches (q, then d),
// `chorus attach` in another terminal shows the agent's tile again, and
// `chorus stop` ends it.
func TestFirstRunDetachAttach(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-first-run")
	s := newSession(t, `
@ prompt~Protocol
run "echo implementing-$CHORUS_TASK_ID"
hang
@ prompt~todo
run "chorus task create 'Add todo model' --acceptance 'go test ./model passes'"
signal COMPLETE
exit 0
`, func(c *config.Config) { c.Planning.MaxReviewIterations = 1 })
	bin := testkit.Chorus(t)
	t.Cleanup(func() {
		exec.Command(bin, "-C", s.root, "stop", "--wait").Run()
		exec.Command(x.bin, "-L", x.sock, "kill-server").Run()
	})
	env := "PATH=" + os.Getenv("PATH")
	x.cmd("new-session", "-d", "-s", "first", "-x", "160", "-y", "40", "-e", env, bin+" -C "+s.root+"; echo chorus-exited-$?; sleep 600")
	waitPane(x, "first", "What should be built?")
	x.cmd("send-keys", "-t", "first", "-l", "Build a todo API")
	waitPane(x, "first", "> Build a todo API")
	x.cmd("send-keys", "-t", "first", "Enter")
	waitPane(x, "first", "The plan is ready: 1 task(s), all valid.")
	x.cmd("send-keys", "-t", "first", "a") // Autopilot
	waitPane(x, "first", "implementing-")
	waitPane(x, "first", "│ autopilot │")
	// The agents run in a background engine, not in this terminal's chorus.
	c, err := remote.Dial(context.Background(), remote.SocketPath(chorusdir.At(s.root)), remote.RoleCLI)
	if err != nil {
		t.Fatalf("no engine to reach after the mode dialog: %v", err)
	}
	defer c.Close()
	snap, err := c.Current(context.Background())
	if err != nil || snap.Running != 1 || snap.Mode != "autopilot" {
		t.Fatalf("the engine after the mode dialog: running %d, mode %s, %v", snap.Running, snap.Mode, err)
	}
	x.cmd("send-keys", "-t", "first", "q") // with agents running, q offers to detach
	waitPane(x, "first", "(d) Detach")
	x.cmd("send-keys", "-t", "first", "d")
	waitPane(x, "first", "detached; the engine")
	waitPane(x, "first", "chorus-exited-0")
	if snap, err := c.Current(context.Background()); err != nil || snap.Running != 1 {
		t.Fatalf("the agent after the detach: %d %v", snap.Running, err)
	}
	x.cmd("new-session", "-d", "-s", "again", "-x", "160", "-y", "40", "-e", env, bin+" -C "+s.root+" attach; sleep 600")
	out := waitPane(x, "again", "implementing-", "│ autopilot │")
	if !strings.Contains(out, "│ autopilot │") {
		t.Fatalf("attached again:\n%s", out)
	}
	if out, err := exec.Command(bin, "-C", s.root, "stop", "--wait").CombinedOutput(); err != nil {
		t.Fatalf("chorus stop: %v\n%s", err, out)
	}
	waitPane(x, "again", "the engine (pid")
}
