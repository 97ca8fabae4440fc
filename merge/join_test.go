package merge

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestJoinRunning(t *testing.T) {
	const w = 1500 * time.Millisecond
	s := time.Second
	for _, c := range []struct {
		name              string
		inBatch, newcomer int
		since, check      time.Duration
		want              bool
	}{
		{"before the check starts", 3, 1, 0, 5 * s, true},
		{"early in a 5 s check", 3, 2, 2 * s, 5 * s, true},
		{"past half a 5 s check", 3, 1, 2500 * time.Millisecond, 5 * s, false},
		{"short check: the window", 3, 1, s, 200 * time.Millisecond, true},
		{"short check: past the window", 3, 1, w, 200 * time.Millisecond, false},
		{"no check measured: the window", 3, 1, s, 0, true},
		{"no newcomer", 3, 0, 0, 5 * s, false},
		{"a full batch", maxBatch, 1, 0, 5 * s, false},
	} {
		window := w
		if got := joinRunning(c.inBatch, c.newcomer, c.since, c.check, window); got != c.want {
			t.Errorf("%s: joins %v, want %v", c.name, got, c.want)
		}
	}
	if joinRunning(1, 1, 0, 5*s, -1) {
		t.Error("joins with gathering off")
	}
}

// An item queued while a batch's check runs joins the batch: the check
// stops and runs again on the chain's new end, and the three land in one
// move of the target.
func TestItemJoinsRunningBatch(t *testing.T) {
	r := newRepo(t)
	dir := t.TempDir()
	log, started, gate := filepath.Join(dir, "runs"), filepath.Join(dir, "started"), filepath.Join(dir, "go")
	for _, p := range []string{started, gate} {
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Each run says it started, then waits for the test to let it pass.
	h := checkingService(t, r, `echo "$CHORUS_TASK_ID" >> `+log+`; echo > `+started+`; read x < `+gate)
	before := r.git("rev-parse", "main")
	h.svc.Checking("j-2", true) // j-1 waits for it: the two start the batch
	for _, id := range []string{"j-1", "j-2"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id + "\n"}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
	}
	wait := func() {
		if _, err := os.ReadFile(started); err != nil {
			t.Fatal(err)
		}
	}
	wait() // the batch of two in its check
	b3, _ := r.agentBranch("j-3", "main", map[string]string{"j-3.txt": "j-3\n"}, false)
	h.enqueue(Request{TaskID: "j-3", Branch: b3})
	wait() // checked again with j-3 on
	if err := os.WriteFile(gate, []byte("pass\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"j-1", "j-2", "j-3"} {
		h.waitStatus(id, StatusLanded)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); len(got) != 2 || got[0] != "j-2" || got[1] != "j-3" {
		t.Fatalf("checks ran on %v, want the batch's end before and after j-3 joined: [j-2 j-3]", got)
	}
	if moves := strings.Fields(r.git("reflog", "show", "--format=%H", "refs/heads/main")); len(moves) != 2 || moves[1] != before {
		t.Fatalf("main moved %d times (%v), want once", len(moves)-1, moves)
	}
	for _, id := range []string{"j-1", "j-2", "j-3"} {
		if r.show("main", id+".txt") != id {
			t.Fatalf("%s's file missing on main", id)
		}
	}
}
