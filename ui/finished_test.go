package ui

import (
	"fmt"
	"testing"

	"github.com/chorus-dev/chorus/orchestrator"
)

// An agent the engine drops keeps its tile, dimmed and titled finished
// (the count of running agents leaves it out),
// until a running agent needs the slot or X closes it; its screen can be
// read in copy mode but not typed to.
func TestFinishedAgentStaysViewable(t *testing.T) {
	f, _, o := fixture()
	fmt.Fprintf(f.screens["claude-ch-ah6"], "all tests pass\r\n<chorus>COMPLETE</chorus>\r\n")
	d := startUI(t, o, 150, 40)
	d.press("<Tab>")
	d.ui(func() { d.u.selAgent = "claude-ch-ah6" })
	gone := func(id string) {
		f.mu.Lock()
		delete(f.snap.Agents, id)
		f.snap.Running--
		f.mu.Unlock()
		f.notify()
		d.sync()
	}
	gone("claude-ch-ah6")
	d.waitShown("CLAUDE (ch-ah6) finished · iter 3/50")
	d.expect("<chorus>COMPLETE</chorus>")
	d.expect("AGENTS 1/3")
	d.golden("finished_agent")
	// Typing to it is refused; copy mode reads it.
	d.press("<C-\\>")
	d.expect("claude-ch-ah6 has finished")
	if d.u.passthrough != "" {
		t.Fatal("typing mode opened on a finished agent")
	}
	d.press("[", "?", "all tests", "<Enter>", "v", "$", "<Enter>")
	if got := string(d.sim.GetClipboardData()); got != "all tests pass" {
		t.Fatalf("clipboard %q", got)
	}
	// X closes it.
	d.press("X")
	d.expectNot("ch-ah6)")

	// A running agent takes the slot of a finished one: with 3 slots, 3
	// running agents leave no room.
	gone("claude-ch-2n6")
	d.waitShown("CLAUDE (ch-2n6) finished · iter 7/50")
	f.mu.Lock()
	for _, id := range []string{"claude-ch-a1", "claude-ch-a2", "claude-ch-a3"} {
		f.snap.Agents[id] = &orchestrator.AgentState{ID: id, Type: "claude", TaskID: id[7:], Status: orchestrator.AgentRunning, StartedAt: t0}
		f.screens[id] = f.screens["claude-ch-2n6"]
	}
	f.snap.Running = 3
	f.mu.Unlock()
	f.notify()
	d.sync()
	d.waitShown("(ch-a3)")
	d.expectNot(" finished ·")
}
