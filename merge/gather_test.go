package merge

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGatherWait(t *testing.T) {
	const w = 1500 * time.Millisecond
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	checks := func(d ...int) []time.Duration {
		var out []time.Duration
		for _, n := range d {
			out = append(out, ms(n))
		}
		return out
	}
	for _, c := range []struct {
		name string
		g    gatherState
		want time.Duration
	}{
		{"lone, one more in its checks, no check measured", gatherState{true, 1, 0, checks(0), 0, w}, w},
		{"part of the window gone", gatherState{true, 1, ms(500), checks(0, 0, 0), 0, w}, time.Second},
		{"window over", gatherState{true, 1, w, checks(0), 0, w}, 0},
		{"nobody in checks", gatherState{true, 1, 0, nil, ms(5000), w}, 0},
		{"no batching (no required check, approval)", gatherState{false, 1, 0, checks(0, 0), 0, w}, 0},
		{"some waiting, room left", gatherState{true, 3, 0, checks(0, 0), 0, w}, w},
		{"a full batch waits for nobody", gatherState{true, maxBatch, 0, checks(0, 0), ms(5000), w}, 0},
		{"nothing runnable", gatherState{true, 0, 0, checks(0, 0), 0, w}, 0},
		{"gathering off", gatherState{true, 1, 0, checks(0, 0), 0, -1}, 0},
		// A 5 s check: the limit is one check's length.
		{"long check: a task 1 s from passing", gatherState{true, 1, 0, checks(4000), ms(5000), w}, ms(5000)},
		{"long check: a task 5 s from passing", gatherState{true, 1, 0, checks(0), ms(5000), w}, ms(5000)},
		{"long check: one of two soon enough", gatherState{true, 2, ms(1000), checks(100, 4900), ms(5000), w}, ms(4000)},
		{"long check: expected within what is left", gatherState{true, 1, ms(3000), checks(3000), ms(5000), w}, ms(2000)},
		{"long check: expected after what is left", gatherState{true, 1, ms(3000), checks(2000), ms(5000), w}, 0},
		{"slower than the last check: still expected", gatherState{true, 1, ms(1000), checks(7000), ms(5000), w}, ms(4000)},
		{"slower, but the limit is over", gatherState{true, 1, ms(5000), checks(9000), ms(5000), w}, 0},
		{"short check: the window is the least", gatherState{true, 1, 0, checks(100), ms(400), w}, w},
		{"short check: a task just started fits the window", gatherState{true, 1, ms(1200), checks(0), ms(200), w}, ms(300)},
	} {
		if got := gatherWait(c.g); got != c.want {
			t.Errorf("%s: waits %v, want %v", c.name, got, c.want)
		}
	}
}

func gatherService(t *testing.T, r *repo, log string) *harness {
	t.Helper()
	return checkingService(t, r, "echo run >> "+log)
}

// checkingService runs a merge service whose check is script and whose
// gathering only another task's arrival ends.
func checkingService(t *testing.T, r *repo, script string) *harness {
	t.Helper()
	opt := baseOptions(r.dir)
	opt.Quality = quality(script)
	opt.GatherWindow = time.Hour
	store := &fileStore{path: filepath.Join(r.dir, ".chorus", "state.json")}
	svc, err := New(opt, store.persist, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, r: r, svc: svc, store: store, done: make(chan error, 1)}
	h.run()
	t.Cleanup(h.stop)
	return h
}

// A lone candidate waits for a task whose checks are running, and the two
// land as one batch: one quality run, one move of the target.
func TestLoneCandidateGathersTaskInChecks(t *testing.T) {
	r := newRepo(t)
	log := filepath.Join(t.TempDir(), "runs")
	h := gatherService(t, r, log)
	before := r.git("rev-parse", "main")
	h.svc.Checking("g-2", true)
	b1, _ := r.agentBranch("g-1", "main", map[string]string{"g-1.txt": "g-1\n"}, false)
	if err := h.svc.Enqueue(Request{TaskID: "g-1", Branch: b1}); err != nil {
		t.Fatal(err)
	}
	// Without gathering the worker takes g-1 alone while g-2's branch is made.
	b2, _ := r.agentBranch("g-2", "main", map[string]string{"g-2.txt": "g-2\n"}, false)
	if err := h.svc.Enqueue(Request{TaskID: "g-2", Branch: b2}); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("g-1", StatusLanded)
	h.waitStatus("g-2", StatusLanded)
	if n := runs(t, log); n != 1 {
		t.Fatalf("quality ran %d times for two candidates gathered, want 1", n)
	}
	if moves := strings.Fields(r.git("reflog", "show", "--format=%H", "refs/heads/main")); len(moves) != 2 || moves[1] != before {
		t.Fatalf("main moved %d times (%v), want once", len(moves)-1, moves)
	}
}

// When the awaited task's checks end without queueing it (they failed),
// the lone candidate goes on at once, not at the end of the window.
func TestGatheringEndsWhenChecksEnd(t *testing.T) {
	r := newRepo(t)
	log := filepath.Join(t.TempDir(), "runs")
	h := gatherService(t, r, log)
	h.svc.Checking("g-2", true)
	b1, _ := r.agentBranch("g-1", "main", map[string]string{"g-1.txt": "g-1\n"}, false)
	if err := h.svc.Enqueue(Request{TaskID: "g-1", Branch: b1}); err != nil {
		t.Fatal(err)
	}
	h.svc.Checking("g-2", false)
	h.waitStatus("g-1", StatusLanded)
	if r.show("main", "g-1.txt") != "g-1" {
		t.Fatal("g-1's file missing on main")
	}
}

// The service measures a check's length from Checking to Enqueue, and the
// wait from the oldest item's queueing or the integrator's last release.
func TestGatherMeasures(t *testing.T) {
	r := newRepo(t)
	opt := baseOptions(r.dir)
	opt.Quality = quality("true")
	var now time.Time
	opt.Now = func() time.Time { return now }
	svc, err := New(opt, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	at := func(s int) { now = time.Unix(1000, 0).Add(time.Duration(s) * time.Second) }
	gather := func() time.Duration {
		svc.mu.Lock()
		defer svc.mu.Unlock()
		return svc.gatherLocked(svc.runnableLocked())
	}
	at(0)
	svc.Checking("a", true)
	at(1)
	svc.Checking("b", true)
	at(5)
	if err := svc.Enqueue(Request{TaskID: "a", Branch: "chorus/a"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		at   int
		free bool
		want time.Duration
	}{
		{5, false, 5 * time.Second}, // a's check took 5 s; b is 1 s from the end of its own
		{7, false, 3 * time.Second},
		{9, false, time.Second}, // b slower than a: still expected
		{10, false, 0},
		{10, true, 5 * time.Second}, // free again (a batch landed): gathering anew
	} {
		at(c.at)
		if c.free {
			svc.release()
		}
		if got := gather(); got != c.want {
			t.Errorf("at %ds: waits %v, want %v", c.at, got, c.want)
		}
	}
}
