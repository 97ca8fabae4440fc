package merge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// startQueued starts a service whose queue already holds the given
// branches, so the worker finds them waiting together.
func startQueued(t *testing.T, r *repo, check string, items map[string]map[string]string, order []string) *harness {
	t.Helper()
	opt := baseOptions(r.dir)
	opt.Quality = quality(check)
	store := &fileStore{path: filepath.Join(r.dir, ".chorus", "state.json")}
	svc, err := New(opt, store.persist, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range order {
		b, _ := r.agentBranch(id, "main", items[id], false)
		if err := svc.Enqueue(Request{TaskID: id, Branch: b}); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, r: r, svc: svc, store: store, done: make(chan error, 1)}
	h.run()
	t.Cleanup(h.stop)
	return h
}

func runs(t *testing.T, path string) int {
	t.Helper()
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), "\n")
}

// Every value the target ever took (its reflog) lacks path.
func neverHad(t *testing.T, r *repo, path string) {
	t.Helper()
	for _, c := range strings.Fields(r.git("reflog", "show", "--format=%H", "refs/heads/main")) {
		if _, err := git(t.Context(), r.dir, "cat-file", "-e", c+":"+path); err == nil {
			t.Fatalf("main was at %s, which has %s", short(c), path)
		}
	}
}

// Waiting items land as one batch: the quality commands run once on the
// chain of their merges, and the target moves once, to its end.
func TestBatchLandsTogether(t *testing.T) {
	r := newRepo(t)
	log := filepath.Join(t.TempDir(), "runs")
	order := []string{"b-1", "b-2", "b-3", "b-4"}
	items := map[string]map[string]string{}
	for _, id := range order {
		items[id] = map[string]string{id + ".txt": id + "\n"}
	}
	before := r.git("rev-parse", "main")
	h := startQueued(t, r, "echo run >> "+log, items, order)
	for _, id := range order {
		h.waitStatus(id, StatusLanded)
	}
	if n := runs(t, log); n != 1 {
		t.Fatalf("quality ran %d times for one batch of 4, want 1", n)
	}
	moves := strings.Fields(r.git("reflog", "show", "--format=%H", "refs/heads/main"))
	if len(moves) != 2 || moves[1] != before {
		t.Fatalf("main moved %d times (%v), want once from %s", len(moves)-1, moves, short(before))
	}
	for _, id := range order {
		if n := r.mergesOf(id); n != 1 {
			t.Fatalf("%s merged %d times", id, n)
		}
		if r.show("main", id+".txt") != id {
			t.Fatalf("%s's file missing on main", id)
		}
	}
}

// A failing batch is bisected: the merges before the culprit land, the
// culprit is tried alone (and goes to a person when it fails there), the
// ones behind it land after; the target never holds the culprit's tree.
func TestBatchBisectsCulprit(t *testing.T) {
	r := newRepo(t)
	log := filepath.Join(t.TempDir(), "runs")
	order := []string{"c-1", "c-2", "c-3", "c-4", "c-5"}
	items := map[string]map[string]string{}
	for _, id := range order {
		items[id] = map[string]string{id + ".txt": id + "\n"}
	}
	items["c-3"]["bad.txt"] = "breaks the build\n"
	h := startQueued(t, r, "echo run >> "+log+" && test ! -e bad.txt", items, order)
	for _, id := range []string{"c-1", "c-2", "c-4", "c-5"} {
		h.waitStatus(id, StatusLanded)
	}
	it := h.waitStatus("c-3", StatusWaitingHuman)
	if !strings.Contains(it.LastError, "fails on the merge") {
		t.Fatalf("culprit's error: %q", it.LastError)
	}
	neverHad(t, r, "bad.txt")
	// 5 fail, 3 fail, 2 pass (bisection), c-3 alone fails, then the
	// rest (c-4, c-5) as one batch: 5 runs, where one at a time takes 5 too
	// and a batch without bisection could not tell the culprit.
	if n := runs(t, log); n > 6 {
		t.Fatalf("quality ran %d times", n)
	}
}

// Items of a batch caught landing settle in chain order, whatever their
// order in the queue.
func TestChainOrder(t *testing.T) {
	items := []Item{
		{Request: Request{TaskID: "c"}, Base: "C2", Candidate: "C3"},
		{Request: Request{TaskID: "a"}, Base: "T", Candidate: "C1"},
		{Request: Request{TaskID: "x"}, Base: "T0", Candidate: "X"},
		{Request: Request{TaskID: "b"}, Base: "C1", Candidate: "C2"},
	}
	var got []string
	for _, it := range chainOrder(items) {
		got = append(got, it.TaskID)
	}
	if s := strings.Join(got, ","); s != "a,x,b,c" {
		t.Fatalf("order %s, want a,x,b,c", s)
	}
}

// kill -9 the worker at each phase of a batch; after a restart every item
// lands exactly once and the target never held an untested tree.
func TestKill9BatchAtEachPhase(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{PhaseCandidate, PhaseTesting, PhaseLanding, PhaseCAS, PhaseLanded} {
		t.Run(phase, func(t *testing.T) {
			r := newRepo(t)
			var pairs []string
			ids := []string{"k-1", "k-2", "k-3"}
			for _, id := range ids {
				b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id + "\n"}, false)
				pairs = append(pairs, id+"="+b)
			}
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "CHORUS_MERGE_CRASH="+phase, "CHORUS_MERGE_REPO="+r.dir,
				"CHORUS_MERGE_BATCH="+strings.Join(pairs, ","))
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die at %s: %v\n%s", phase, err, out)
			}
			h := start(t, r, func(o *Options) { o.Quality = quality("true") }, nil)
			for _, id := range ids {
				h.waitStatus(id, StatusLanded)
				if n := r.mergesOf(id); n != 1 {
					t.Fatalf("%d merge commits for %s", n, id)
				}
				if r.show("main", id+".txt") != id {
					t.Fatalf("%s's work is not on main", id)
				}
			}
			if s := h.svc.Snapshot().Stats; s.Paused {
				t.Fatalf("queue paused after the restart: %s", s.PauseReason)
			}
		})
	}
}
