package orchestrator

import (
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// An event reaches subscribers only once the snapshot shows what it
// reports: a front end told that an agent needs a person and then asking
// for the state sees the agent waiting, never still running.
func TestEventsFollowTheirSnapshot(t *testing.T) {
	h := newHarness(t, `
@ *
run "chorus ask 'Which colour?' --option red --option blue"
hang
`, nil)
	id := h.task("quiz", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHelp, id))
	a := h.eng.Snapshot().Agents[ev.Agent]
	if a == nil || a.Status != AgentNeedsHelp {
		t.Fatalf("on %s the snapshot shows the agent as %+v", ev.Kind, a)
	}
}
