package ui

import (
	"testing"

	"github.com/chorus-dev/chorus/orchestrator"
)

// D shows the selected task's diff from the engine, escaped: file text
// that looks like a colour tag or a terminal escape stays inert text; s
// switches to the summary; the merge view's v shows the same for its item.
func TestDiffOverlay(t *testing.T) {
	f, _, o := fixture()
	f.diff = orchestrator.TaskDiff{Source: "branch agent/claude/ch-2n6 against its merge base with main",
		Text: "diff --git a/x b/x\n+added [red]not a tag[-]\n-removed \x1b[31mred"}
	d := startUI(t, o, 150, 40)
	var task string
	d.ui(func() { task = d.u.currentTask() })
	d.press("D")
	if d.overlay() != ovDiff {
		t.Fatalf("D opened %q", d.overlay())
	}
	d.waitShown("+added [red]not a tag[-]")
	d.expect("-removed red") // the escape sequence is gone, not drawn
	d.expect("CHANGES OF " + task)
	d.press("s")
	d.waitShown("stat of " + task)
	d.press("<Esc>", "M", "v")
	d.waitShown("CHANGES OF ch-mpl")
	d.waitShown("+added [red]not a tag[-]")
}

// A question asked with `chorus ask` shows its options numbered; what is
// typed goes to the engine, which picks the option.
func TestAnswerShowsOptions(t *testing.T) {
	f, _, o := fixture()
	a := f.snap.Agents["claude-ch-ah6"]
	a.Options, a.QuestionID = []string{"version 1", "version 2"}, "00000000000000000001-0123456789ab"
	d := startUI(t, o, 150, 40)
	d.ui(func() { d.u.selAgent = "claude-ch-ah6" })
	d.press("i", "a")
	if d.overlay() != ovPrompt {
		t.Fatalf("answer did not open: %q", d.overlay())
	}
	d.expect("1) version 1")
	d.expect("2) version 2")
	d.press("2", "<Enter>")
	d.sync()
	c := f.commands()
	if len(c) != 1 || c[0].Kind != orchestrator.CmdAnswer || c[0].AgentID != "claude-ch-ah6" || c[0].Text != "2" {
		t.Fatalf("commands: %+v", c)
	}
}
