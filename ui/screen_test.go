package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// fixture is a session with two agents, one asking for help, tasks in
// every state and a merge waiting for approval.
func fixture() (*fakeEngine, *fakeStore, Options) {
	snap := orchestrator.Snapshot{MaxParallel: 3, Running: 2}
	snap.Mode = config.ModeSemiAuto
	snap.StartedAt = t0.Add(-15 * time.Minute)
	snap.Agents = map[string]*orchestrator.AgentState{
		"claude-ch-2n6": {ID: "claude-ch-2n6", Type: "claude", TaskID: "ch-2n6", Title: "Config Types", Iteration: 7, StartedAt: t0.Add(-12 * time.Minute), Status: orchestrator.AgentRunning, Progress: 35},
		"claude-ch-ah6": {ID: "claude-ch-ah6", Type: "claude", TaskID: "ch-ah6", Title: "State Types", Iteration: 3, StartedAt: t0.Add(-5 * time.Minute), Status: orchestrator.AgentNeedsHelp, Progress: 6, Question: "Which schema version?"},
	}
	snap.Tasks = map[string]*orchestrator.TaskRun{}
	snap.Merge = merge.Snapshot{Items: []merge.Item{{Request: merge.Request{TaskID: "ch-mpl", Title: "Signal Parser"}, Status: merge.StatusWaitingApproval}}}
	f := newFakeEngine(snap)
	f.screens["claude-ch-2n6"] = term.New(40, 10)
	f.screens["claude-ch-2n6"].Write([]byte("Reading config...\r\n$ npm test\r\n\x1b[32m✓ 47 tests passed\x1b[m\r\n"))
	f.screens["claude-ch-ah6"] = term.New(40, 10)
	f.screens["claude-ch-ah6"].Write([]byte("Creating types...\r\nAdding valid...\r\n"))
	closed := t0.Add(-5 * time.Minute)
	dep := func(id, on string) []beads.Dependency {
		return []beads.Dependency{{IssueID: id, DependsOnID: on, Type: "blocks"}}
	}
	st := &fakeStore{tasks: []beads.Task{
		{ID: "ch-2n6", Title: "Config Types", Status: beads.StatusInProgress, Priority: 1},
		{ID: "ch-ah6", Title: "State Types", Status: beads.StatusInProgress, Priority: 1},
		{ID: "ch-mpl", Title: "Signal Parser", Status: beads.StatusClosed, Priority: 2, ClosedAt: &closed},
		{ID: "ch-3y0", Title: "Agent-Task Link", Status: beads.StatusOpen, Priority: 2},
		{ID: "ch-wk8", Title: "Prompt Builder", Status: beads.StatusOpen, Priority: 3, Dependencies: dep("ch-wk8", "ch-2n6")},
		{ID: "ch-v2x", Title: "Plugin system", Status: beads.StatusOpen, Priority: 4, Labels: []string{"deferred"}},
		{ID: "ch-bad", Title: "Flaky \x1b[31mmigration\x1b[m", Status: beads.StatusBlocked, Priority: 0, Labels: []string{"failed"}},
	}}
	cfg := config.Default()
	o := Options{Engine: f, Store: st, Config: cfg, Version: "v0.9", Now: func() time.Time { return t0 }}
	return f, st, o
}

// The main view at the seed's three auto layouts (1, 2, 3 columns).
func TestScreenGolden(t *testing.T) {
	for _, sz := range [][2]int{{100, 30}, {150, 40}, {200, 50}} {
		t.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(t *testing.T) {
			_, _, o := fixture()
			d := startUI(t, o, sz[0], sz[1])
			d.golden(fmt.Sprintf("main-%dx%d", sz[0], sz[1]))
		})
	}
}

// Overlays at a common size.
func TestOverlayGolden(t *testing.T) {
	for _, c := range []struct{ name, keys string }{
		{"help", "?"}, {"intervention", "i"}, {"merge", "M"}, {"rollback", "R"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, _, o := fixture()
			f.cps = []merge.Checkpoint{{Ref: merge.CheckpointPrefix + "20260301T110000Z-before-autopilot", Commit: "0123456789abcdef", Time: t0.Add(-time.Hour)}}
			f.deps = []string{"ch-wk8"}
			o.Config.Merge.RequireApproval = true
			d := startUI(t, o, 150, 45)
			d.press(c.keys)
			if d.overlay() != c.name {
				t.Fatalf("overlay %q open, want %q", d.overlay(), c.name)
			}
			d.golden("overlay-" + c.name)
		})
	}
}

// Task titles with escape sequences never reach the screen raw.
func TestNoTerminalInjection(t *testing.T) {
	_, _, o := fixture()
	d := startUI(t, o, 150, 40)
	d.expect("Flaky migration")
	if strings.Contains(d.text(), "\x1b") {
		t.Fatal("an escape character reached the screen")
	}
}

// Resizing the terminal reflows the grid and resizes the agents' PTYs to
// their tiles.
func TestResizeReflows(t *testing.T) {
	f, _, o := fixture()
	d := startUI(t, o, 100, 40)
	var g present.Grid
	d.ui(func() { g = d.u.grid.layout() })
	if g.Cols != 1 {
		t.Fatalf("100 columns: %d grid columns, want 1", g.Cols)
	}
	d.sim.SetSize(200, 50)
	d.sim.PostEvent(tcell.NewEventResize(200, 50))
	d.key(tcell.KeyRune, 'j', 0) // any key: its draw follows the resize
	d.ui(func() { g = d.u.grid.layout() })
	if g.Cols != 2 { // auto fits three columns; two agents take them
		t.Fatalf("200 columns: %d grid columns, want 2 (one per agent)", g.Cols)
	}
	d.sync()
	f.mu.Lock()
	sz := f.resized["claude-ch-2n6"]
	f.mu.Unlock()
	var w, h int
	d.ui(func() { _, _, w, h = d.u.vm.tiles["claude-ch-2n6"].GetInnerRect() })
	if sz != [2]int{w, h} {
		t.Fatalf("PTY size %v, tile inner size %dx%d", sz, w, h)
	}
}

// g cycles layouts, starting from the configured one.
func TestGridCycleAndFixedLayout(t *testing.T) {
	_, _, o := fixture()
	o.Config.TUI.AgentGrid = "1x4"
	d := startUI(t, o, 150, 40)
	var g present.Grid
	var spec string
	d.ui(func() { g = d.u.grid.layout() })
	if g.Cols != 1 || g.Rows != 4 {
		t.Fatalf("1x4: %+v", g)
	}
	d.press("g")
	d.ui(func() { spec = d.u.gridSpec })
	if spec != "4x2" {
		t.Fatalf("after g: %s", spec)
	}
	d.press("g")
	d.ui(func() { spec = d.u.gridSpec })
	if spec != "auto" {
		t.Fatalf("after g g: %s", spec)
	}
}

// A NEEDS_HELP agent's tile is highlighted.
func TestNeedsHelpHighlighted(t *testing.T) {
	_, _, o := fixture()
	d := startUI(t, o, 150, 40)
	var x, y int
	d.ui(func() { x, y, _, _ = d.u.vm.tiles["claude-ch-ah6"].GetRect() })
	// The shown frame, not the buffer a frame may be drawing into.
	cells, w, _ := d.contents()
	if fg, _, _ := cells[y*w+x].Style.Decompose(); fg != tcell.ColorRed {
		t.Fatalf("needs-help tile border colour %v, want red", fg)
	}
	d.expect("NEEDS HELP")
}

// With NO_COLOR the screen has no colours at all.
func TestNoColor(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	_, _, o := fixture()
	d := startUI(t, o, 150, 40)
	cells, _, _ := d.contents()
	for i, c := range cells {
		fg, bg, _ := c.Style.Decompose()
		if fg != tcell.ColorDefault || bg != tcell.ColorDefault {
			// The agent's own output keeps its colours: it is the agent's.
			if r := string(c.Runes); r == "✓" || strings.ContainsAny(r, "47 tests passed") {
				continue
			}
			t.Fatalf("cell %d (%q) has colour %v/%v under NO_COLOR", i, string(c.Runes), fg, bg)
		}
	}
}
