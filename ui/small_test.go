package ui

import (
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/merge"
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
	// The footer's message (from the event), not the tile's title (from
	// the snapshot), which can be drawn first.
	d.waitShown("ch-2n6 NEEDS HUMAN")
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

// The screen says in words what agents are at: a conflict being resolved
// (row and tile name the file), a running check with its name and time,
// and a retry after a failed check with the command's last line.
func TestStoryGolden(t *testing.T) {
	f, _, o := fixture()
	f.mu.Lock()
	ch := *f.snap.Agents["claude-ch-2n6"]
	ch.Status, ch.Check, ch.CheckStarted = orchestrator.AgentChecking, "tests", t0.Add(-72*time.Second)
	f.snap.Agents["claude-ch-2n6"] = &ch
	retry := *f.snap.Agents["claude-ch-ah6"]
	retry.Status, retry.Iteration, retry.Question = orchestrator.AgentRunning, 2, ""
	f.snap.Agents["claude-ch-ah6"] = &retry
	f.snap.Tasks["ch-ah6"] = &orchestrator.TaskRun{Iterations: 1, FailCheck: "tests", FailTail: "ok   tests/test_greet.sh\nFAIL tests/test_bye.sh\nbye.sh Ada printed: Bye Ada"}
	f.snap.Agents["resolver-ch-mpl"] = &orchestrator.AgentState{ID: "resolver-ch-mpl", Type: "claude", TaskID: "ch-mpl", Title: "resolve merge conflict",
		Iteration: 1, StartedAt: t0.Add(-30 * time.Second), Status: orchestrator.AgentRunning}
	f.snap.Merge.Items[0].Status = merge.StatusResolving
	f.snap.Merge.Items[0].ConflictFiles = []string{"greet.sh"}
	f.snap.Running = 3
	f.screens["resolver-ch-mpl"] = term.New(40, 10)
	f.screens["resolver-ch-mpl"].Write([]byte("Reading both sides of the conflict in greet.sh…\r\n"))
	f.mu.Unlock()
	d := startUI(t, o, 200, 50)
	d.expect("checking: tests (1m12s)")
	d.expect("resolving the conflict in greet.sh")
	d.expect("● retry: tests failed: bye.sh Ada printed")
	d.golden("story-200x50")
	// The footer names the failed check and its failing line.
	f.events <- orchestrator.Event{Kind: orchestrator.EvQuality, Task: "ch-ah6", Fields: map[string]any{"name": "tests", "passed": false, "required": true,
		"tail": "FAIL tests/test_bye.sh\nbye.sh Ada printed: Bye Ada"}}
	d.waitShown("ch-ah6: check tests failed, retrying: bye.sh Ada printed: Bye Ada")
}
