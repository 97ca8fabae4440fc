package merge

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestGatherWait(t *testing.T) {
	const w = 1500 * time.Millisecond
	for _, c := range []struct {
		name               string
		batching           bool
		runnable, expected int
		waited, window     time.Duration
		want               time.Duration
	}{
		{"lone, one more in its checks", true, 1, 1, 0, w, w},
		{"part of the window gone", true, 1, 3, 500 * time.Millisecond, w, time.Second},
		{"window over", true, 1, 1, w, w, 0},
		{"nobody in checks", true, 1, 0, 0, w, 0},
		{"no batching (no required check, approval)", false, 1, 2, 0, w, 0},
		{"some waiting, room left", true, 3, 2, 0, w, w},
		{"a full batch waits for nobody", true, maxBatch, 2, 0, w, 0},
		{"nothing runnable", true, 0, 2, 0, w, 0},
		{"gathering off", true, 1, 2, 0, -1, 0},
	} {
		if got := gatherWait(c.batching, c.runnable, c.expected, c.waited, c.window); got != c.want {
			t.Errorf("%s: waits %v, want %v", c.name, got, c.want)
		}
	}
}

func gatherService(t *testing.T, r *repo, log string) *harness {
	t.Helper()
	opt := baseOptions(r.dir)
	opt.Quality = quality("echo run >> " + log)
	opt.GatherWindow = time.Hour // only the other task's arrival ends the wait
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
