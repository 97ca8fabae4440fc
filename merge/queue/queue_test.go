package queue

import (
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// The queue's policy needs no git: its tests run with a PATH on which
// there is none, so any git call fails them.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "no-git")
	if err != nil {
		panic(err)
	}
	os.Setenv("PATH", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestNoGitOnPath(t *testing.T) {
	if p, err := exec.LookPath("git"); err == nil {
		t.Fatalf("git found at %s", p)
	}
}

func TestTransitions(t *testing.T) {
	ok := func(from, to Status) {
		t.Helper()
		if err := Check(from, to); err != nil {
			t.Errorf("%s → %s refused: %v", from, to, err)
		}
	}
	no := func(from, to Status) {
		t.Helper()
		if err := Check(from, to); err == nil || !strings.Contains(err.Error(), string(from)) || !strings.Contains(err.Error(), string(to)) {
			t.Errorf("%s → %s: %v, want refused naming both", from, to, err)
		}
	}
	// The worker's path.
	for _, p := range [][2]Status{{StatusPending, StatusMerging}, {StatusMerging, StatusTesting},
		{StatusTesting, StatusLanding}, {StatusLanding, StatusLanded}, {StatusMerging, StatusConflict},
		{StatusConflict, StatusResolving}, {StatusConflict, StatusMerging}, {StatusResolving, StatusPending}, {StatusTesting, StatusWaitingApproval},
		{StatusLanded, StatusReverted}} {
		ok(p[0], p[1])
	}
	// Every status may stay; every unfinished one can go back to pending
	// (a retry, a crash, a moved target) and to a person.
	for _, s := range Statuses() {
		ok(s, s)
		switch s {
		case StatusLanded, StatusReverted:
		default:
			ok(s, StatusPending)
		}
	}
	// Nothing lands without a landing step or a merge already done, and
	// history stays history.
	for _, s := range Statuses() {
		if s != StatusLanding && s != StatusMerging && s != StatusLanded {
			no(s, StatusLanded)
		}
		if s != StatusLanded && s != StatusReverted {
			no(s, StatusReverted)
		}
		if s != StatusLanded && s != StatusReverted {
			no(StatusLanded, s)
			no(StatusReverted, s)
		}
	}
	no(StatusPending, StatusLanding)
	no(StatusPending, StatusTesting)
	no(StatusWaitingApproval, StatusLanding)
	no(StatusFailed, StatusMerging)
	no(StatusConflict, StatusTesting)
	no(StatusConflict, StatusLanded)
	// Every status has a row: a new status without one is refused everywhere.
	for _, s := range Statuses() {
		if _, ok := transitions()[s]; !ok {
			t.Errorf("%s has no row in the table", s)
		}
	}
	if len(transitions()) != len(Statuses()) {
		t.Errorf("the table has %d rows for %d statuses", len(transitions()), len(Statuses()))
	}
}

func item(id string, st Status, prio int, seq uint64, deps ...string) *Item {
	return &Item{Request: Request{TaskID: id, Priority: prio, DependsOn: deps}, Status: st, Seq: seq}
}

func ids(items []*Item) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.TaskID)
	}
	return out
}

func TestRunnable(t *testing.T) {
	for _, tc := range []struct {
		name  string
		items []*Item
		want  []string
	}{
		{"fifo", []*Item{item("a", StatusPending, 3, 2), item("b", StatusPending, 3, 1)}, []string{"b", "a"}},
		{"boost beats fifo", []*Item{item("a", StatusPending, 3, 1), item("b", StatusPending, 2, 2), item("c", StatusPending, 0, 3)}, []string{"c", "b", "a"}},
		{"P0 and P1 equal", []*Item{item("a", StatusPending, 1, 1), item("b", StatusPending, 0, 2)}, []string{"a", "b"}},
		{"P3 and P4 equal", []*Item{item("a", StatusPending, 4, 1), item("b", StatusPending, 3, 2)}, []string{"a", "b"}},
		{"only pending", []*Item{item("a", StatusMerging, 0, 1), item("b", StatusHeld, 0, 2), item("c", StatusPending, 4, 3),
			item("d", StatusFailed, 0, 4), item("e", StatusLanded, 0, 5)}, []string{"c"}},
		{"dependency in the queue blocks", []*Item{item("a", StatusPending, 0, 2, "b"), item("b", StatusPending, 4, 1)}, []string{"b"}},
		{"landed dependency does not", []*Item{item("a", StatusPending, 0, 2, "b"), item("b", StatusLanded, 4, 1)}, []string{"a"}},
		{"dependency not in the queue does not", []*Item{item("a", StatusPending, 0, 1, "gone")}, []string{"a"}},
		{"failed dependency blocks", []*Item{item("a", StatusPending, 0, 1, "b"), item("b", StatusFailed, 0, 2)}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(Runnable(tc.items)); !slices.Equal(got, tc.want) {
				t.Errorf("Runnable = %v, want %v", got, tc.want)
			}
		})
	}
	items := []*Item{item("a", StatusPending, 0, 1, "x", "b"), item("b", StatusWaitingHuman, 0, 2)}
	if got := Blocked(items, items[0]); got != "b" {
		t.Errorf("Blocked = %q, want b", got)
	}
}

func TestSortForDisplay(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	items := []Item{
		{Request: Request{TaskID: "landed-late"}, Status: StatusLanded, LandedAt: t0.Add(time.Hour)},
		{Request: Request{TaskID: "failed"}, Status: StatusFailed, Seq: 1},
		{Request: Request{TaskID: "pending-p4"}, Status: StatusPending, Seq: 2},
		{Request: Request{TaskID: "waiting"}, Status: StatusWaitingHuman, Seq: 3},
		{Request: Request{TaskID: "pending-p0", Priority: 0}, Status: StatusPending, Seq: 9},
		{Request: Request{TaskID: "landed-early"}, Status: StatusLanded, LandedAt: t0},
		{Request: Request{TaskID: "merging"}, Status: StatusMerging, Seq: 10},
	}
	items[2].Priority = 4
	SortForDisplay(items)
	var got []string
	for _, it := range items {
		got = append(got, it.TaskID)
	}
	want := []string{"merging", "pending-p0", "pending-p4", "waiting", "failed", "landed-early", "landed-late"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

func TestCleanups(t *testing.T) {
	items := []*Item{item("a", StatusLanded, 0, 1), item("b", StatusLanded, 0, 2), item("c", StatusPending, 0, 3), item("d", StatusLanded, 0, 4)}
	items[1].Cleaned = true
	if got := Cleanups(items, 32); !slices.Equal(got, []string{"a", "d"}) {
		t.Errorf("Cleanups = %v", got)
	}
	if got := Cleanups(items, 1); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Cleanups(max 1) = %v", got)
	}
}

func TestRetriesAndRequeue(t *testing.T) {
	for _, tc := range []struct {
		retries, max int
		give         bool
	}{{0, 3, false}, {1, 3, false}, {2, 3, true}, {0, 1, true}, {5, 3, true}} {
		if got := GiveUp(tc.retries, tc.max); got != tc.give {
			t.Errorf("GiveUp(%d, %d) = %v", tc.retries, tc.max, got)
		}
	}
	for _, s := range Statuses() {
		want := s == StatusLanded || s == StatusReverted || s == StatusFailed
		if Requeueable(s) != want {
			t.Errorf("Requeueable(%s) = %v", s, !want)
		}
	}
}

func TestPersonCommands(t *testing.T) {
	for _, s := range Statuses() {
		it := item("a", s, 2, 1)
		it.Candidate, it.Tested, it.MergeRef, it.Retries, it.Action = "c", true, "r", 2, "do it"
		err := Approve(it)
		if (err == nil) != (s == StatusWaitingApproval) || (err != nil && !errors.Is(err, ErrBadState)) {
			t.Errorf("Approve from %s: %v", s, err)
		}
		if err == nil && (!it.Approved || it.Status != StatusPending || it.Action != "" || it.Candidate != "c") {
			t.Errorf("Approve: %+v", it)
		}
		if err == nil {
			if cerr := Check(s, it.Status); cerr != nil {
				t.Errorf("Approve makes a change the table refuses: %v", cerr)
			}
		}
	}
	for _, s := range Statuses() {
		it := item("a", s, 2, 1)
		it.Candidate, it.Tested, it.MergeRef, it.Retries, it.Recoveries = "c", true, "r", 2, 1
		err := Retry(it)
		allowed := s == StatusWaitingHuman || s == StatusHeld || s == StatusFailed || s == StatusConflict || s == StatusWaitingApproval
		if (err == nil) != allowed {
			t.Errorf("Retry from %s: %v", s, err)
			continue
		}
		if err != nil {
			continue
		}
		if it.Status != StatusPending || it.Retries != 0 || it.Recoveries != 0 {
			t.Errorf("Retry from %s: %+v", s, it)
		}
		if keeps := it.Candidate == "c" && it.Tested && it.MergeRef == "r"; keeps != (s == StatusHeld) {
			t.Errorf("Retry from %s: candidate kept %v", s, keeps)
		}
		if cerr := Check(s, StatusPending); cerr != nil {
			t.Errorf("Retry makes a change the table refuses: %v", cerr)
		}
	}
	for _, s := range Statuses() {
		if Droppable(&Item{Status: s}) != (s != StatusLanding) {
			t.Errorf("Droppable(%s)", s)
		}
	}
}

func TestMove(t *testing.T) {
	for _, from := range Statuses() {
		for _, to := range Statuses() {
			it := item("a", from, 2, 1)
			err := Move(it, to)
			if (err == nil) != (Check(from, to) == nil) {
				t.Errorf("Move(%s → %s) = %v, the table says %v", from, to, err, Check(from, to))
			}
			if want := map[bool]Status{true: to, false: from}[err == nil]; it.Status != want {
				t.Errorf("Move(%s → %s) left %s", from, to, it.Status)
			}
		}
	}
	it := item("a", StatusLanded, 2, 1)
	if err := Defer(it, "t", 5); err == nil || it.Status != StatusLanded || it.Deferrals != 0 || it.Seq != 1 {
		t.Errorf("Defer of a landed item: %v %+v", err, it)
	}
}
