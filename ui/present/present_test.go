package present

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// ElapsedChangesIn lands exactly on the next change of Elapsed.
func TestElapsedChangesIn(t *testing.T) {
	for _, d := range []time.Duration{
		-90 * time.Second, -time.Nanosecond, 0, 59 * time.Second, time.Minute, 61 * time.Second,
		59*time.Minute + 30*time.Second, time.Hour, 23*time.Hour + 59*time.Minute + 59*time.Second,
		24 * time.Hour, 49*time.Hour + 30*time.Minute,
	} {
		in := ElapsedChangesIn(d)
		if in <= 0 {
			t.Errorf("%v: changes in %v", d, in)
			continue
		}
		if before, at := Elapsed(d+in-time.Nanosecond), Elapsed(d+in); before != Elapsed(d) || at == before {
			t.Errorf("%v (%s): %v later shows %q, a nanosecond before %q", d, Elapsed(d), in, at, before)
		}
	}
}

// Spend is shown where the spec puts it: the tile title (the agent), the
// task panel (the task, over its runs) and the header (the session).
// Tokens without a known price never show as $0.
func TestSpendShown(t *testing.T) {
	now := time.Now()
	priced := orchestrator.Usage{Input: 10_000, Output: 2_345, CostUSD: 0.0412}
	unpriced := orchestrator.Usage{Input: 1_000, CacheRead: 500}
	a := orchestrator.AgentState{ID: "claude-t-1", Type: "claude", TaskID: "t-1", Iteration: 1, StartedAt: now, Status: orchestrator.AgentRunning, Usage: priced}
	if got := TileTitle(a, 5, now); !strings.HasSuffix(got, "| 12k tok $0.04") {
		t.Errorf("tile title %q", got)
	}
	a.Usage = unpriced
	if got := TileTitle(a, 5, now); !strings.HasSuffix(got, "| 1.5k tok") || strings.Contains(got, "$") {
		t.Errorf("unpriced tile title %q", got)
	}
	a.Usage = orchestrator.Usage{}
	if got := TileTitle(a, 5, now); strings.Contains(got, "tok") {
		t.Errorf("no usage yet, but %q", got)
	}
	snap := orchestrator.Snapshot{State: orchestrator.State{
		Agents: map[string]*orchestrator.AgentState{"claude-t-1": &a},
		Tasks:  map[string]*orchestrator.TaskRun{"t-1": {Usage: priced}},
		Usage:  orchestrator.Usage{Output: 1_500_000, CostUSD: 12.5},
	}}
	if got := Header("v1", snap, 3, "", "").Text(); !strings.Contains(got, "1.5M tok $12.50") {
		t.Errorf("header %q", got)
	}
	if got := Header("v1", snap, 3, "", "PLANNING").Text(); !strings.Contains(got, "PLANNING") || strings.Contains(got, "semi-auto") {
		t.Errorf("planning header %q", got)
	}
	rows := TaskRows([]beads.Task{{ID: "t-1", Title: "x", Status: beads.StatusInProgress}}, snap, now)
	if len(rows) != 1 || !strings.Contains(rows[0].Lines[1].Text(), "12k tok $0.04") {
		t.Errorf("task row %+v", rows)
	}
	if s := unpriced.String(); !strings.Contains(s, "cost not reported") || strings.Contains(s, "$") {
		t.Errorf("headless form %q", s)
	}
}

// The panel tells the truth about tasks that are not simply done: a closed
// task whose merge waits for a person, a failed task's recorded reason (not
// an older iteration's feedback), a block or budget reason.
func TestTaskRowsReasons(t *testing.T) {
	now := time.Now()
	closedAt := now.Add(-time.Minute)
	tasks := []beads.Task{
		{ID: "t-1", Title: "waits", Status: beads.StatusClosed, ClosedAt: &closedAt},
		{ID: "t-2", Title: "landed", Status: beads.StatusClosed, ClosedAt: &closedAt},
		{ID: "t-3", Title: "failed", Status: beads.StatusBlocked, Labels: []string{beads.LabelFailed},
			Notes: "FAILED: reached maxIterations (5) without completing"},
		{ID: "t-4", Title: "budget", Status: beads.StatusBlocked, Notes: "older note\nbudget: task spent $5.10 of $5.00"},
	}
	snap := orchestrator.Snapshot{
		State: orchestrator.State{Tasks: map[string]*orchestrator.TaskRun{"t-3": {LastFailure: "lint failed\ndetails"}}},
		Merge: merge.Snapshot{Items: []merge.Item{
			{Request: merge.Request{TaskID: "t-1"}, Status: merge.StatusWaitingHuman, Action: "resolve the conflict in a.txt", Seq: 1},
			{Request: merge.Request{TaskID: "t-2"}, Status: merge.StatusLanded, Seq: 2},
		}},
	}
	got := map[string]TaskRow{}
	for _, r := range TaskRows(tasks, snap, now) {
		got[r.ID] = r
	}
	if r := got["t-1"]; r.Lines[0][0].Text == IconClosed || !strings.Contains(r.Lines[1].Text(), "merge waits for you: resolve the conflict in a.txt") {
		t.Errorf("closed task with a waiting merge: %q / %q", r.Lines[0].Text(), r.Lines[1].Text())
	}
	if r := got["t-2"]; r.Lines[0][0].Text != IconClosed || !strings.Contains(r.Lines[1].Text(), "closed") {
		t.Errorf("landed task: %q / %q", r.Lines[0].Text(), r.Lines[1].Text())
	}
	if r := got["t-3"]; !strings.Contains(r.Lines[1].Text(), "failed: reached maxIterations (5)") {
		t.Errorf("failed task: %q", r.Lines[1].Text())
	}
	if r := got["t-4"]; !strings.Contains(r.Lines[1].Text(), "blocked: budget: task spent $5.10 of $5.00") {
		t.Errorf("blocked task: %q", r.Lines[1].Text())
	}
}

// An agent stuck on its screen shows the cause in its tile title and in
// its task's row, and is highlighted.
func TestNeedsHumanShown(t *testing.T) {
	now := time.Now()
	cause := "not logged in: Not logged in · Please run /login"
	a := orchestrator.AgentState{ID: "claude-t-1", Type: "claude", TaskID: "t-1", Iteration: 1, StartedAt: now,
		Status: orchestrator.AgentNeedsHuman, Stuck: cause, Alert: cause}
	if got := TileTitle(a, 5, now); !strings.Contains(got, "NEEDS HUMAN: "+cause) {
		t.Errorf("tile title %q", got)
	}
	if !Attention(a) {
		t.Error("a stuck agent is not highlighted")
	}
	snap := orchestrator.Snapshot{State: orchestrator.State{Agents: map[string]*orchestrator.AgentState{"claude-t-1": &a}}}
	rows := TaskRows([]beads.Task{{ID: "t-1", Title: "x", Status: beads.StatusInProgress}}, snap, now)
	if len(rows) != 1 || !strings.Contains(rows[0].Lines[1].Text(), "NEEDS HUMAN: "+cause) {
		t.Errorf("task row %+v", rows)
	}
}

// The footer cuts the optional hints first, then the message (to 24
// cells), the status, the rest of the message; "? help" is never cut.
func TestFooterBarKeepsHelp(t *testing.T) {
	status := Line{{" ✓1 ●2 →1 ⊗1 ✗1", OK}, {" │ Merge: 0 queued │ Runtime: 3m", Normal}}
	msg := Seg{"t-1 NEEDS HUMAN: the agent waits at a permission dialog it cannot answer alone", Err}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{200, " ✓1 ●2 →1 ⊗1 ✗1 │ Merge: 0 queued │ Runtime: 3m │ t-1 NEEDS HUMAN: the agent waits at a permission dialog it cannot answer alone │ ? help · q quit · Tab switch · i menu"},
		{140, " ✓1 ●2 →1 ⊗1 ✗1 │ Merge: 0 queued │ Runtime: 3m │ t-1 NEEDS HUMAN: the agent waits at a permission dialog it cannot answe… │ ? help · q quit"},
		{80, " ✓1 ●2 →1 ⊗1 ✗1 │ Merge: 0 queued │ R… │ t-1 NEEDS HUMAN: the… │ ? help · q quit"},
		{40, " ✓1 ●2 →1 ⊗1 ✗1… │ t-… │ ? help · q quit"},
	} {
		got := FooterBar(status, msg, "Tab switch · i menu", "? help · q quit", tc.w)
		if got.Text() != tc.want || got.Width() != tc.w && tc.w < 200 {
			t.Errorf("width %d:\n got %q\nwant %q", tc.w, got.Text(), tc.want)
		}
	}
}

// Optional hints that do not all fit go whole, the last first: never a
// hint cut mid-word.
func TestFooterBarDropsWholeHints(t *testing.T) {
	status := Line{{" ✓8 ●0", OK}}
	msg := Seg{"Autopilot is done", Normal}
	full := FooterBar(status, msg, "Tab switch · i menu", "? help · q quit", 1000).Text()
	n := len([]rune(strings.TrimRight(full, " ")))
	for w, want := range map[int]string{
		n:      " ✓8 ●0 │ Autopilot is done │ ? help · q quit · Tab switch · i menu",
		n - 1:  " ✓8 ●0 │ Autopilot is done │ ? help · q quit · Tab switch",
		n - 9:  " ✓8 ●0 │ Autopilot is done │ ? help · q quit · Tab switch",
		n - 10: " ✓8 ●0 │ Autopilot is done │ ? help · q quit",
	} {
		got := FooterBar(status, msg, "Tab switch · i menu", "? help · q quit", w)
		if strings.TrimRight(got.Text(), " ") != want || got.Width() > w {
			t.Errorf("width %d:\n got %q\nwant %q", w, got.Text(), want)
		}
	}
}

// One agent gets the whole grid under auto; a fixed layout keeps its
// empty slots.
func TestLayoutEmptySlotsTakeNoSpace(t *testing.T) {
	g := Layout("auto", 80, 78, 20, 1, 3, 0)
	if len(g.Cells) != 1 || g.Cells[0] != (Rect{0, 0, 78, 20}) {
		t.Errorf("one agent of three at 80 columns: %+v", g)
	}
	if g := Layout("auto", 200, 198, 40, 0, 3, 0); len(g.Cells) != 1 {
		t.Errorf("no agent: %+v", g)
	}
	if g := Layout("2x2", 200, 198, 40, 1, 3, 0); len(g.Cells) != 3 {
		t.Errorf("fixed 2x2 with one agent of three: %+v", g)
	}
}

// Doing names what an agent is at in words.
func TestDoing(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	snap := orchestrator.Snapshot{State: orchestrator.State{Tasks: map[string]*orchestrator.TaskRun{
		"t-2": {FailCheck: "tests", FailTail: "ok a\nFAIL b\nbye.sh printed: Bye"},
	}}}
	snap.Merge.Items = []merge.Item{{Request: merge.Request{TaskID: "t-3"}, Status: merge.StatusResolving, ConflictFiles: []string{"greet.sh"}}}
	for _, c := range []struct {
		a    orchestrator.AgentState
		want string
	}{
		{orchestrator.AgentState{ID: "a-1", TaskID: "t-1", Status: orchestrator.AgentChecking, Check: "lint", CheckStarted: now.Add(-72 * time.Second)}, "checking: lint (1m12s)"},
		{orchestrator.AgentState{ID: "a-1", TaskID: "t-1", Status: orchestrator.AgentChecking}, ""},
		{orchestrator.AgentState{ID: "a-2", TaskID: "t-2", Status: orchestrator.AgentRunning}, "retry: tests failed: bye.sh printed: Bye"},
		{orchestrator.AgentState{ID: "a-2", TaskID: "t-2", Status: orchestrator.AgentChecking, Check: "tests", CheckStarted: now}, "checking: tests (0s)"},
		{orchestrator.AgentState{ID: "resolver-t-3", TaskID: "t-3", Status: orchestrator.AgentRunning}, "resolving the conflict in greet.sh"},
		{orchestrator.AgentState{ID: "resolver-t-9", TaskID: "t-9", Status: orchestrator.AgentRunning}, "resolving a merge conflict"},
		{orchestrator.AgentState{ID: "a-4", TaskID: "t-4", Status: orchestrator.AgentRunning}, ""},
	} {
		if got := Doing(snap, c.a, now); got != c.want {
			t.Errorf("%s: Doing = %q, want %q", c.a.ID, got, c.want)
		}
	}
	if got := Story(orchestrator.Snapshot{State: orchestrator.State{Stats: orchestrator.Stats{ChecksFailed: 1}}, Merge: merge.Snapshot{Stats: merge.Stats{Resolved: 2}}}); got != ", 2 conflicts resolved by an agent, 1 failed check retried" {
		t.Errorf("Story = %q", got)
	}
}

func TestTally(t *testing.T) {
	snap := orchestrator.Snapshot{State: orchestrator.State{Stats: orchestrator.Stats{TasksCompleted: 8, MergesAuto: 8, ChecksFailed: 1}}, Merge: merge.Snapshot{Stats: merge.Stats{Resolved: 1}}}
	if got := Tally(snap); got != "8 closed, 8 merged, 1 conflict resolved, 1 check retried" {
		t.Errorf("Tally = %q", got)
	}
	snap = orchestrator.Snapshot{State: orchestrator.State{Stats: orchestrator.Stats{TasksCompleted: 2, TasksFailed: 1, TasksBlocked: 3}}}
	if got := Tally(snap); got != "2 closed, 1 failed, 3 blocked, 0 merged" {
		t.Errorf("Tally = %q", got)
	}
}

func TestNarrowLabel(t *testing.T) {
	now := time.Date(2026, 1, 9, 12, 0, 0, 0, time.UTC)
	a := orchestrator.AgentState{Type: "claude", TaskID: "ch-3ae", Iteration: 3, StartedAt: now.Add(-5 * time.Minute), Progress: 45}
	full := TileTitle(a, 10, now)
	if got := NarrowLabel(full, 45, 200); got != full {
		t.Errorf("wide: %q", got)
	}
	for _, tc := range []struct {
		w    int
		want string
	}{
		{36, "CLAUDE (ch-3ae) ▓▓░░░ 45% · iter 3/…"},
		{26, "CLAUDE (ch-3ae) ▓▓░░░ 45%…"},
		{23, "CLAUDE (ch-3ae) 45% · …"},
		{25, "CLAUDE (ch-3ae) ▓▓░░░ 45%"},
		{10, "45% CLAUD…"},
	} {
		if got := NarrowLabel(full, 45, tc.w); got != tc.want {
			t.Errorf("w %d: %q, want %q", tc.w, got, tc.want)
		}
	}
	// No progress: cut at the end as before.
	a.Progress = 0
	if got := NarrowLabel(TileTitle(a, 10, now), 0, 20); got != "CLAUDE (ch-3ae) ite…" {
		t.Errorf("no progress: %q", got)
	}
}
