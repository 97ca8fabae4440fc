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

// `chorus plan` in a real terminal (a tmux pane): the chat line asks for
// the goal, the typed goal starts the scripted Plan Agent, and the task
// it creates appears in the task panel.
func TestPlanInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-plan-test")
	tmux, sock, tm := x.bin, x.sock, x.cmd
	s := newSession(t, `
@ prompt~todo
run "chorus task create 'Add todo model' --acceptance 'go test ./model passes'"
signal COMPLETE
hang
`, nil)
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
	tm("new-session", "-d", "-x", "160", "-y", "40", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s -C %s plan; echo chorus-exited-$?; %s -L %s wait-for -S exited; sleep 600", testkit.Chorus(t), s.root, tmux, sock))
	waitScreen := x.waitScreen
	waitScreen("What should be built?")
	tm("send-keys", "-l", "Build a todo API")
	waitScreen("> Build a todo API")
	tm("send-keys", "Enter")
	out := waitScreen("TASKS (1)")
	if !strings.Contains(out, "Add todo model") {
		t.Fatalf("task panel:\n%s", out)
	}
	// The plan is valid: Semi-Auto, then q quits the implementation view
	// (asking first while the Plan Agent is still being stopped).
	waitScreen("Semi-Auto")
	tm("send-keys", "s")
	waitScreen("semi-auto mode")
	tm("send-keys", "q")
	for deadline := time.Now().Add(waitLimit); ; tm("wait-for", "-S", "nothing") {
		out := tm("capture-pane", "-p")
		if strings.Contains(out, "chorus-exited-") {
			if !strings.Contains(out, "chorus-exited-0") {
				t.Fatalf("exit:\n%s", out)
			}
			break
		}
		if strings.Contains(out, "Kill the agents and quit") {
			tm("send-keys", "k")
		}
		if time.Now().After(deadline) {
			t.Fatalf("chorus never exited:\n%s", out)
		}
	}
}
