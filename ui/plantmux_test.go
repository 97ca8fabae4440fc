package ui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// `chorus plan` in a real terminal (a tmux pane), the whole flow: the
// chat line asks for the goal (header PLANNING), the typed goal starts the
// scripted Plan Agent, its tasks appear in the task panel, the review
// (header REVIEW) shows the vague criterion at once, Apply Fixes hands it
// back and the agent leaves it, the dialog says the iterations are spent,
// Apply Fixes hands it over again and the agent fixes it, the mode dialog follows, and Autopilot
// starts an implementation agent whose output reaches its tile.
func TestPlanInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-plan-test")
	tmux, sock, tm := x.bin, x.sock, x.cmd
	s := newSession(t, `
@ prompt~Protocol
run "echo implementing-$CHORUS_TASK_ID"
hang
@ prompt~2/2:
run "chorus task update $(cat vague.id) --acceptance 'GET /todos returns 200 and a JSON list'"
signal COMPLETE
exit 0
@ prompt~1/1:
print "leaving it as it is"
signal COMPLETE
exit 0
@ prompt~todo
run "A=$(chorus task create 'Add todo model' --acceptance 'go test ./model passes') && chorus task create 'Add list endpoint' --acceptance 'works correctly' --deps $A > vague.id"
signal COMPLETE
exit 0
`, func(c *config.Config) { c.Planning.MaxReviewIterations = 1 })
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
	stopEngineAtEnd(t, s.root)
	tm("new-session", "-d", "-x", "160", "-y", "40", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s -C %s plan; echo chorus-exited-$?; %s -L %s wait-for -S exited; sleep 600", testkit.Chorus(t), s.root, tmux, sock))
	waitScreen := x.waitScreen
	if out := waitScreen("What should be built?"); !strings.Contains(out, "│ PLANNING │") {
		t.Fatalf("header while planning:\n%s", out)
	}
	tm("send-keys", "-l", "Build a todo API")
	waitScreen("> Build a todo API")
	tm("send-keys", "Enter")
	out := waitScreen("TASK REVIEW")
	for _, want := range []string{"Add todo model", "Add list endpoint", "vague_criteria", "│ REVIEW │"} {
		if !strings.Contains(out, want) {
			t.Fatalf("review lacks %q:\n%s", want, out)
		}
	}
	tm("send-keys", "a") // Apply Fixes
	// The dialog itself: the footer says the same words first, while the
	// chat line still has the keyboard.
	x.waitScreenAll("after 1 review iteration(s)", "Apply Fixes")
	tm("send-keys", "a") // Apply Fixes, once more
	waitScreen("The plan is ready: 2 task(s), all valid.")
	tm("send-keys", "a")        // Autopilot
	waitScreen("implementing-") // the agent's own output, in its tile
	waitScreen("│ autopilot │")
	// q quits, asking first while agents run.
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

// `chorus init` in a real terminal: the wizard's four steps and the
// confirmation answered with keys, the files written as answered, and
// planning opened right after (no tasks yet), asking for the goal.
func TestInitWizardInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-init-test")
	tmux, sock, tm := x.bin, x.sock, x.cmd
	root := testkit.Repo(t)
	t.Cleanup(func() { exec.Command(tmux, "-L", sock, "kill-server").Run() })
	stopEngineAtEnd(t, root)
	tm("new-session", "-d", "-x", "160", "-y", "40", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s -C %s init; echo chorus-exited-$?; %s -L %s wait-for -S exited; sleep 600", testkit.Chorus(t), root, tmux, sock))
	waitScreen := x.waitScreen
	enter := func(line string) {
		if line != "" {
			tm("send-keys", "-l", line)
		}
		tm("send-keys", "Enter")
	}
	// The screen may be caught half drawn: wait for the verdict itself.
	if out := waitScreen("All prerequisites met"); !strings.Contains(out, "Step 1/4") {
		t.Fatalf("prerequisites:\n%s", out)
	}
	enter("")
	waitScreen("Step 2/4")
	enter("prefix demo")
	waitScreen("[demo-]")
	enter("")
	waitScreen("Step 3/4")
	enter("add check git status --short")
	waitScreen("1. [*] check")
	enter("")
	waitScreen("Step 4/4")
	enter("max_acceptance_criteria 4")
	waitScreen("[4]")
	enter("")
	waitScreen("Confirm")
	enter("")
	if out := waitScreen("What should be built?"); !strings.Contains(out, "│ PLANNING │") {
		t.Fatalf("planning after init:\n%s", out)
	}
	cfg, err := config.Load(filepath.Join(root, ".chorus", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Project.TaskIDPrefix != "demo" || len(cfg.QualityCommands) != 1 || cfg.QualityCommands[0].Command != "git status --short" {
		t.Fatalf("config: %+v %+v", cfg.Project, cfg.QualityCommands)
	}
	if b, _ := os.ReadFile(filepath.Join(root, ".chorus", "task-rules.md")); !strings.Contains(string(b), "| max_acceptance_criteria | 4 |") {
		t.Fatalf("task-rules.md:\n%s", b)
	}
	// Tab leaves the chat line (Esc then q would arrive as Alt-q); with
	// nothing running q quits without asking.
	tm("send-keys", "Tab")
	tm("send-keys", "q")
	if out := waitScreen("chorus-exited-"); !strings.Contains(out, "chorus-exited-0") {
		t.Fatalf("exit:\n%s", out)
	}
}
