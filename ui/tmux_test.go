package ui

import (
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
	// Each agent tells the test it printed, through tmux itself.
	s := newSession(t, fmt.Sprintf(`
run "echo output of $CHORUS_TASK_ID; %s -L %s wait-for -S printed"
hang
`, tmux, sock), nil)
	s.task("t-a", "alpha", 1)
	s.task("t-b", "beta", 2)
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
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
	waitScreen("│ semi-auto │")
	tm("send-keys", "Enter")
	tm("wait-for", "printed")
	tm("send-keys", "j", "Enter")
	tm("wait-for", "printed")
	out := waitScreen("output of t-b")
	if !strings.Contains(out, "output of t-a") || !strings.Contains(out, "SCRIPT (t-a)") || !strings.Contains(out, "2/3 agents") {
		t.Fatalf("grid:\n%s", out)
	}
	tm("send-keys", "q")
	waitScreen("Kill the agents and quit")
	tm("send-keys", "k")
	tm("wait-for", "exited")
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
	out, err := exec.Command(x.bin, append([]string{"-L", x.sock, "-f", "/dev/null"}, args...)...).CombinedOutput()
	if err != nil {
		x.t.Fatalf("tmux %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// waitScreen polls the pane (tmux has no "screen changed" event) until it
// shows want, and returns it.
func (x *tmuxServer) waitScreen(want string) string {
	x.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p")
		if strings.Contains(out, want) {
			return out
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the pane never showed %q:\n%s", want, out)
		}
		x.cmd("wait-for", "-S", "nothing") // a round trip to the tmux server, not a sleep
	}
}
