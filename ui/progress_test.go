package ui

import (
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Three agents in a three-column grid of a 120-column terminal (tiles 26
// columns wide): each tile's title still shows its agent's PROGRESS,
// moved up beside the task.
func TestProgressInNarrowTiles(t *testing.T) {
	s := newSession(t, `
print "working"
tag PROGRESS 45
hang
`, func(c *config.Config) {
		c.Agents.MaxParallel = 3
		c.TUI.AgentGrid = "3x1"
	})
	for _, id := range []string{"t-a", "t-b", "t-c"} {
		s.task(id, "task "+id, 1)
	}
	d := s.start(120, 30)
	d.press("a")
	s.waitSnap("three agents at 45%", func(sn orchestrator.Snapshot) bool {
		n := 0
		for _, a := range sn.Agents {
			if a.Progress == 45 {
				n++
			}
		}
		return n == 3
	})
	for _, id := range []string{"t-a", "t-b", "t-c"} {
		d.waitShown("(" + id + ") ▓▓░░░ 45%")
	}
	for _, l := range strings.Split(d.text(), "\n") {
		if strings.Contains(l, "45%") && strings.Count(l, "45%") != 3 {
			t.Fatalf("the tiles' titles are not on one row:\n%s", d.text())
		}
	}
	d.press("<C-c>", "y")
	s.waitSnap("no agents", func(sn orchestrator.Snapshot) bool { return sn.Running == 0 })
}
