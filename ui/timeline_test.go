package ui

import (
	"testing"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// T on a finished task shows its states as breadcrumbs, with its ledger.
func TestFlowTimeline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agents")
	}
	s := newSession(t, `
run "echo done > a.txt"
commit "feat: a"
note "a.txt holds the answer"
tag COMPLETE
hang
`, nil)
	s.task("t-a", "alpha", 0)
	d := s.start(150, 45)
	d.press("<Enter>")
	s.waitFor("completed", kind(orchestrator.EvCompleted, "t-a"))
	// The note travels as a signal file, the tag on the screen: either may
	// come first. The ledger has the note once its event is out.
	s.waitFor("note", kind(orchestrator.EvNote, "t-a"))
	d.ui(func() { d.u.selTask = "t-a" })
	d.press("T")
	if d.overlay() != ovTimeline {
		t.Fatalf("T opened %q", d.overlay())
	}
	// The overlay says "loading…" until the log and ledger are read; its
	// last line is the ledger's path.
	d.waitShown("Ledger: ")
	d.expect("completed")
	d.expect("iteration 1")
	d.expect("a.txt holds the answer")
	d.expect("ledgers/t-a.md")
	d.press("<Esc>")
}

// A stuck alert offers Continue / Redirect / Stop from the intervention
// menu.
func TestFlowStuckMenu(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real agents")
	}
	s := newSession(t, "@ iteration=1\nexit 0\n@ *\nhang\n", func(c *config.Config) {
		c.Completion.StuckIterations = 1
		c.Completion.StuckAlerts = 0
		c.Completion.MaxIterations = 10
	})
	s.task("t-a", "alpha", 0)
	d := s.start(150, 45)
	d.press("<Enter>")
	s.waitSnap("stuck alert", func(sn orchestrator.Snapshot) bool {
		a := sn.Agents["script-t-a"]
		return a != nil && stuckAlert(a.Alert) && a.Iteration == 2
	})
	d.ui(func() { d.u.selAgent = "script-t-a" })
	d.press("i")
	d.sync()
	d.expect("[s] Stuck")
	d.press("s")
	if d.overlay() != ovChoose {
		t.Fatalf("s opened %q", d.overlay())
	}
	d.sync()
	d.expect("Continue")
	d.expect("Redirect")
	d.expect("Stop")
	d.press("c")
	if d.overlay() != "" {
		t.Fatalf("Continue left %q open", d.overlay())
	}
	if a := s.eng.Snapshot().Agents["script-t-a"]; a == nil {
		t.Fatal("Continue stopped the agent")
	}
}
