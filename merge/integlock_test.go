package merge

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// integLock puts a lock file a killed git left (git removes its locks on
// any signal but SIGKILL) into the integration worktree's git dir, changed
// age ago; dir makes it a directory, which no removal clears.
func integLock(t *testing.T, r *repo, name string, age time.Duration, dir bool) {
	t.Helper()
	p := filepath.Join(r.dir, ".git", "worktrees", "_integration", name)
	if _, err := os.Stat(filepath.Dir(p)); err != nil {
		t.Fatal(err)
	}
	var err error
	if dir {
		err = os.MkdirAll(filepath.Join(p, "x"), 0o755)
	} else {
		err = os.WriteFile(p, nil, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

// shortStaleAge makes a lock stale after 50 ms for the test's length (a
// sequential test: parallel ones start after it ends).
func shortStaleAge(t *testing.T) {
	old := staleLockAge
	staleLockAge = 50 * time.Millisecond
	t.Cleanup(func() { staleLockAge = old })
}

// A git killed in the integration worktree (the engine's restart found
// its HEAD.lock; CI's crash harness) left a lock that failed every
// checkout there: the items ran out of attempts and waited for a person,
// or a batch was retaken at once, round and round, with nothing said. A
// lock left long ago goes at the start; one left just now once it has
// stayed unchanged for staleLockAge (its git may still be finishing).
func TestKilledGitsLockInIntegrationWorktree(t *testing.T) {
	for _, c := range []struct {
		name  string
		lock  string
		age   time.Duration
		batch bool
	}{
		{"HEAD.lock long ago, one item", "HEAD.lock", time.Hour, false},
		{"HEAD.lock just now, one item", "HEAD.lock", 0, false},
		{"index.lock just now, a batch", "index.lock", 0, true},
		{"HEAD.lock just now, a batch", "HEAD.lock", 0, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, q := stoppedAfterALanding(t, c.batch)
			integLock(t, r, c.lock, c.age, false)
			h2 := start(t, r, q, nil)
			ids := []string{"ch-2"}
			if c.batch {
				ids = append(ids, "ch-3")
			}
			for _, id := range ids {
				if it := h2.waitStatus(id, StatusLanded, StatusWaitingHuman, StatusFailed); it.Status != StatusLanded {
					t.Fatalf("%s %s: %s", id, it.Status, it.LastError)
				}
			}
			if r.mergesOf("ch-2") != 1 || (c.batch && r.mergesOf("ch-3") != 1) {
				t.Fatal("not landed once")
			}
		})
	}
}

// A batch whose check cannot run (its checkout fails, whatever the cause)
// is not retaken at once forever: its items go the single path, which
// counts their attempts and holds them for a person once they run out.
func TestBatchThatCannotBeCheckedOutDoesNotSpin(t *testing.T) {
	r, q := stoppedAfterALanding(t, true)
	integLock(t, r, "HEAD.lock", time.Hour, true) // not removable: every checkout fails
	h2 := start(t, r, q, nil)
	for _, id := range []string{"ch-2", "ch-3"} {
		if it := h2.waitStatus(id, StatusWaitingHuman); it.Retries != 3 {
			t.Fatalf("%s after %d attempts", id, it.Retries)
		}
	}
}

// stoppedAfterALanding is a queue that landed ch-1 and was stopped with
// ch-2 (and ch-3 with batch) queued after it: what a restart finds.
func stoppedAfterALanding(t *testing.T, batch bool) (*repo, func(*Options)) {
	t.Helper()
	shortStaleAge(t)
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"1.txt": "1"}, false)
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"2.txt": "2"}, false)
	b3, _ := r.agentBranch("ch-3", "main", map[string]string{"3.txt": "3"}, false)
	q := func(o *Options) { o.Quality = quality("true") }
	h := start(t, r, q, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.stop()
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	if batch {
		h.enqueue(Request{TaskID: "ch-3", Branch: b3})
	}
	return r, q
}
