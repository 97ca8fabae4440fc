package ui

import (
	"testing"

	"github.com/chorus-dev/chorus/orchestrator"
)

// At 80x24 one agent of three gets the whole grid (empty slots take no
// space), "? help" shows in header and footer, a long NEEDS HUMAN message
// is cut before the hints, and it leaves the footer once the agent no
// longer waits for a person.
func TestSmallTerminalGolden(t *testing.T) {
	f, _, o := fixture()
	f.mu.Lock()
	delete(f.snap.Agents, "claude-ch-ah6")
	a := *f.snap.Agents["claude-ch-2n6"]
	a.Status, a.Stuck = orchestrator.AgentNeedsHuman, "a permission dialog waits for an answer"
	f.snap.Agents["claude-ch-2n6"] = &a
	f.snap.Running = 1
	f.mu.Unlock()
	d := startUI(t, o, 80, 24)
	f.events <- orchestrator.Event{Kind: orchestrator.EvNeedsHuman, Agent: "claude-ch-2n6", Task: "ch-2n6", Text: "a permission dialog waits for an answer, and a long explanation follows it"}
	d.waitShown("NEEDS HUMAN: a")
	d.sync()
	d.golden("small-80x24-needs-human")
	f.mu.Lock()
	b := a
	b.Status, b.Stuck = orchestrator.AgentRunning, ""
	f.snap.Agents["claude-ch-2n6"] = &b
	f.mu.Unlock()
	f.notify()
	d.sync()
	d.expectNot("NEEDS HUMAN")
	d.golden("small-80x24-cleared")
}
