package ui

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The built binary in a real terminal (a tmux pane): Semi-Auto in the mode
// dialog, Enter, then j Enter
// assign two tasks, the grid shows both scripted agents' output, and q k
// quits, ending the agents and restoring the terminal.
func TestBinaryInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-ui-test")
	tmux, sock, tm := x.bin, x.sock, x.cmd
	s := newSession(t, `
run "echo output of $CHORUS_TASK_ID"
hang
`, nil)
	s.task("t-a", "alpha", 1)
	s.task("t-b", "beta", 2)
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
	stopEngineAtEnd(t, s.root)
	tm("new-session", "-d", "-x", "160", "-y", "40", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s -C %s; echo chorus-exited-$?; %s -L %s wait-for -S exited; sleep 600", testkit.Chorus(t), s.root, tmux, sock))
	waitScreen := x.waitScreen
	waitScreen("TASKS (2)")
	// The plan init marked ready: the mode is asked for first (the tasks,
	// made without criteria, are flagged but not held back).
	if out := waitScreen("Semi-Auto: you assign tasks"); !strings.Contains(out, "rule violation(s) remain") {
		t.Fatalf("mode dialog:\n%s", out)
	}
	tm("send-keys", "s")
	// The engine's own screen, with its tasks read: the header comes
	// with the first snapshot, the task list with the first load.
	x.waitScreenAll("│ semi-auto │", "TASKS (2)")
	tm("send-keys", "Enter")
	waitScreen("output of t-a")
	tm("send-keys", "j", "Enter")
	out := x.waitScreenAll("output of t-b", "output of t-a", "SCRIPT (t-a)", "2/3 agents")
	if !strings.Contains(out, "output of t-a") || !strings.Contains(out, "SCRIPT (t-a)") || !strings.Contains(out, "2/3 agents") {
		t.Fatalf("grid:\n%s", out)
	}
	tm("send-keys", "q")
	waitScreen("Kill the agents and quit")
	tm("send-keys", "k")
	x.waitFor("exited")
	out = tm("capture-pane", "-p")
	if !strings.Contains(out, "chorus-exited-0") || strings.Contains(out, "AGENTS") {
		t.Fatalf("after quitting:\n%s", out)
	}
	if st := s.get("t-a").Status; st != "open" {
		t.Fatalf("t-a after quitting with its agent: %s", st)
	}
}

// tmuxServer is a private tmux server for one test; it skips the test
// where tmux is not installed.
type tmuxServer struct {
	t         *testing.T
	bin, sock string
}

func newTmux(t *testing.T, name string) *tmuxServer {
	t.Helper()
	bin, err := exec.LookPath("tmux")
	if err != nil {
		t.Skip("tmux not installed")
	}
	return &tmuxServer{t: t, bin: bin, sock: fmt.Sprintf("%s-%d", name, os.Getpid())}
}

// cmd runs a tmux command on the server and returns its output.
func (x *tmuxServer) cmd(args ...string) string {
	x.t.Helper()
	// Bounded: a tmux server that stops answering fails this test, not
	// the whole package at its timeout.
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, x.bin, append([]string{"-L", x.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// stopEngineAtEnd stops, when the test ends, the background engine a
// test's Chorus may have started in root: the terminal going away only
// detaches from it, and its agents would outlive the test.
func stopEngineAtEnd(t *testing.T, root string) {
	bin := testkit.Chorus(t)
	t.Cleanup(func() { exec.Command(bin, "-C", root, "stop", "--wait").Run() })
}

// waitFor waits for a wait-for channel to be signalled, failing the test
// with the pane's screen after waitLimit. A signal sent while nobody waits
// is kept, but only one: a channel signalled twice before a wait wakes it
// once, so wait on the screen where two things report.
func (x *tmuxServer) waitFor(channel string) {
	x.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	out, err := exec.CommandContext(ctx, x.bin, "-L", x.sock, "-f", "/dev/null", "wait-for", channel).CombinedOutput()
	if err != nil {
		screen, _ := exec.Command(x.bin, "-L", x.sock, "capture-pane", "-p").CombinedOutput()
		x.t.Fatalf("tmux wait-for %s: %v %s\n%s", channel, err, out, screen)
	}
}

// waitScreen polls the pane (tmux has no "screen changed" event) until it
// shows want, and returns it.
func (x *tmuxServer) waitScreen(want string) string {
	x.t.Helper()
	return x.waitScreenAll(want)
}

// waitScreenAll polls the pane until one screen shows every one of want.
func (x *tmuxServer) waitScreenAll(want ...string) string {
	x.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p")
		all := true
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all {
			return out
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the pane never showed %q:\n%s", want, out)
		}
		x.cmd("wait-for", "-S", "nothing") // a round trip to the tmux server, not a sleep
	}
}
