package ui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
)

// The engine outlives its terminal: chorus runs in one tmux server with
// two agents working, that server is killed (the TUI with it), the agents
// go on and their tasks land, and `chorus attach` in two new terminals
// shows both tiles with what they printed before, then their live output.
func TestDetachKillTerminalAttach(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	first := newTmux(t, "chorus-detach-a") // the terminal that dies
	other := newTmux(t, "chorus-detach-b") // the agents' signals, and the new terminals
	s := newSession(t, fmt.Sprintf(`
run "for i in $(seq 1 50); do echo history of $CHORUS_TASK_ID line $i; done"
run "%[1]s -L %[2]s wait-for go-$CHORUS_TASK_ID"
run "echo live output of $CHORUS_TASK_ID"
run "%[1]s -L %[2]s wait-for finish-$CHORUS_TASK_ID"
run "echo done > work-$CHORUS_TASK_ID.txt"
commit "work of the task"
signal COMPLETE "done"
hang
`, other.bin, other.sock), func(c *config.Config) { c.Agents.MaxParallel = 2 })
	s.task("t-a", "alpha", 1)
	s.task("t-b", "beta", 2)
	bin := testkit.Chorus(t)
	dir := chorusdir.At(s.root)
	t.Cleanup(func() {
		exec.Command(bin, "-C", s.root, "stop", "--wait").Run()
		exec.Command(first.bin, "-L", first.sock, "kill-server").Run()
		exec.Command(other.bin, "-L", other.sock, "kill-server").Run()
	})
	env := "PATH=" + os.Getenv("PATH")
	first.cmd("new-session", "-d", "-x", "160", "-y", "40", "-e", env, bin+" -C "+s.root+" --autopilot; sleep 600")
	other.cmd("new-session", "-d", "-s", "signals", "sleep 600")
	// Each tile is drawn when its own output arrives: wait for both.
	first.waitScreen("history of t-b line 50")
	first.waitScreen("history of t-a line 50")

	// The terminal goes away, and the TUI with it.
	first.cmd("kill-server")
	c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.RoleTUI)
	if err != nil {
		t.Fatalf("the engine did not survive its terminal: %v", err)
	}
	defer c.Close()
	if n := c.Snapshot().Running; n != 2 {
		t.Fatalf("%d agents running after the terminal died, want 2", n)
	}
	events := &testkit.Events[orchestrator.Event]{TB: t, C: c.Subscribe(), Limit: waitLimit}

	// Two new terminals attach; each shows both tiles with their history.
	for _, name := range []string{"att1", "att2"} {
		other.cmd("new-session", "-d", "-s", name, "-x", "160", "-y", "40", "-e", env, bin+" -C "+s.root+" attach; sleep 600")
	}
	for _, name := range []string{"att1", "att2"} {
		out := waitPane(other, name, "history of t-b line 50", "history of t-a line 50", "SCRIPT (t-a)")
		if !strings.Contains(out, "history of t-a line 50") || !strings.Contains(out, "SCRIPT (t-a)") {
			t.Fatalf("%s after attaching:\n%s", name, out)
		}
	}
	// A third TUI killed with -9 takes nothing with it: the agents it
	// watched go on below.
	other.cmd("new-session", "-d", "-s", "att3", "-x", "120", "-y", "30", "-e", env, bin+" -C "+s.root+" attach; sleep 600")
	waitPane(other, "att3", "history of t-b line")
	shell := strings.TrimSpace(other.cmd("display", "-p", "-t", "att3", "#{pane_pid}"))
	tui, err := exec.Command("pgrep", "-P", shell, "-f", "attach").Output()
	if err != nil {
		t.Fatalf("the third TUI's pid: %v", err)
	}
	if out, err := exec.Command("kill", "-9", strings.TrimSpace(string(tui))).CombinedOutput(); err != nil {
		t.Fatalf("kill -9: %v %s", err, out)
	}
	// Live output reaches both, and both tasks land.
	other.cmd("wait-for", "-S", "go-t-a")
	other.cmd("wait-for", "-S", "go-t-b")
	// The two agents' output reaches a TUI in either order.
	for _, name := range []string{"att1", "att2"} {
		waitPane(other, name, "live output of t-a")
		waitPane(other, name, "live output of t-b")
	}
	other.cmd("wait-for", "-S", "finish-t-a")
	other.cmd("wait-for", "-S", "finish-t-b")
	landed := map[string]bool{}
	for len(landed) < 2 {
		ev := events.Wait(func(ev orchestrator.Event) bool {
			return ev.Kind == orchestrator.EventKind("merge_"+string(merge.EventLanded))
		})
		landed[ev.Task] = true
	}
	for _, id := range []string{"t-a", "t-b"} {
		if st := s.get(id).Status; st != beads.StatusClosed {
			t.Fatalf("%s: %s", id, st)
		}
		if out, err := exec.Command("git", "-C", s.root, "cat-file", "-e", "main:work-"+id+".txt").CombinedOutput(); err != nil {
			t.Fatalf("%s's work is not on main: %v %s", id, err, out)
		}
	}

	// q asks whether to stop the engine too; Esc keeps working; q then d
	// detaches. The other terminal stays attached. The dialog is chosen
	// from att1's own view of the engine, which can lag the events above:
	// wait until it shows no agent running.
	waitPane(other, "att1", "0/2 agents")
	other.cmd("send-keys", "-t", "att1", "q")
	waitPane(other, "att1", "Stop the engine and quit")
	other.cmd("send-keys", "-t", "att1", "Escape")
	waitPaneGone(other, "att1", "Stop the engine and quit") // so Esc is not read as Alt with the next key
	other.cmd("send-keys", "-t", "att1", "q")
	waitPane(other, "att1", "Stop the engine and quit")
	other.cmd("send-keys", "-t", "att1", "d")
	waitPane(other, "att1", "detached; the engine")
	if st, err := dir.InspectLock(); err != nil || !st.Held {
		t.Fatalf("the engine let go of the repository after a detach: %+v %v", st, err)
	}
	// chorus stop ends it; the attached TUI hears and exits.
	if out, err := exec.Command(bin, "-C", s.root, "stop", "--wait").CombinedOutput(); err != nil {
		t.Fatalf("chorus stop: %v\n%s", err, out)
	}
	waitPane(other, "att2", "the engine (pid")
	if st, err := dir.InspectLock(); err != nil || st.Held {
		t.Fatalf("after chorus stop the lock is still held: %+v %v", st, err)
	}
}

// waitPane is waitScreenAll for one session of a server: until one
// screen shows every one of want. A frame may reach the terminal in two
// writes (the tiles' cells, then the rest), so what a test checks on one
// screen it waits for together.
func waitPane(x *tmuxServer, target string, want ...string) string {
	x.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p", "-t", target)
		all := true
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all {
			return out
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("%s never showed %q:\n%s", target, want, out)
		}
		x.cmd("wait-for", "-S", "nothing")
	}
}

// waitPaneGone waits until a session's pane no longer shows text.
func waitPaneGone(x *tmuxServer, target, text string) {
	x.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p", "-t", target)
		if !strings.Contains(out, text) {
			return
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("%s kept showing %q:\n%s", target, text, out)
		}
		x.cmd("wait-for", "-S", "nothing")
	}
}

// chorus attach opens the terminal while it dials the engine: with no
// engine there, the terminal is given back as it was (the main screen,
// line editing and echo on) and the error shows on it.
func TestAttachWithoutEngineInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-attach-none")
	s := newSession(t, "hang\n", nil)
	t.Cleanup(func() { exec.Command(x.bin, "-L", x.sock, "kill-server").Run() })
	x.cmd("new-session", "-d", "-x", "100", "-y", "30", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s -C %s attach; echo attach-exited-$?; stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e echo; %s -L %s wait-for -S exited; sleep 600",
			testkit.Chorus(t), s.root, x.bin, x.sock))
	x.waitFor("exited")
	out := x.cmd("capture-pane", "-p")
	for _, want := range []string{"no Chorus engine is running", "attach-exited-1", "\nicanon\n", "\necho\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the pane does not show %q:\n%s", want, out)
		}
	}
	if alt := strings.TrimSpace(x.cmd("display", "-p", "#{alternate_on}")); alt != "0" {
		t.Errorf("the terminal was left on the alternate screen (alternate_on %s)", alt)
	}
}
