package ui

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The built binary in a real terminal: an agent's long line, cut into
// rows in a 60-column pane, shows whole once the pane is 200 wide
// (reflow); copy mode finds it and Enter copies it, through OSC 52, into
// tmux's paste buffer.
func TestCopyAndReflowInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-copy-test")
	tmux, sock, tm := x.bin, x.sock, x.cmd
	long := "start-" + strings.Repeat("x", 110) + "-end"
	s := newSession(t, fmt.Sprintf(`
run "echo %s"
hang
`, long), nil)
	s.task("t-a", "alpha", 1)
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
	stopEngineAtEnd(t, s.root)
	tm("new-session", "-d", "-x", "60", "-y", "30", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("env TERM=tmux-256color %s -C %s; sleep 600", testkit.Chorus(t), s.root))
	tm("set-option", "-g", "set-clipboard", "on")
	x.waitScreen("Semi-Auto: you assign tasks")
	// Autopilot starts the agent by itself: an Enter to assign it, sent
	// while the view settles, was sometimes lost.
	tm("send-keys", "a")
	out := x.waitScreen("-end")
	if strings.Contains(out, long) {
		t.Fatalf("the line fits a 60-column pane?\n%s", out)
	}
	tm("resize-window", "-x", "200", "-y", "30")
	x.waitScreen(long)

	// Copy mode: the prefix key then [, search back, select the line.
	tm("send-keys", "C-\\", "[")
	x.waitScreen("[copy]")
	tm("send-keys", "?", "start-x", "Enter", "v", "$", "Enter")
	x.waitScreen("copied 120 characters")
	if got := strings.TrimSpace(tm("show-buffer")); got != long {
		t.Fatalf("tmux's paste buffer holds %q, want the agent's line", got)
	}
}
