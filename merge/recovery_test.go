package merge

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Check 3: main force-moved back (reset --hard main~3) while the queue
// runs: the queue pauses and names the merged tasks no longer on main.
func TestForceMovedTargetPausesAndReportsLost(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, nil, nil)
	base := r.git("rev-parse", "main")
	for _, id := range []string{"ch-1", "ch-2", "ch-3"} {
		b, _ := r.agentBranch(id, base, map[string]string{id + ".txt": id}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
		h.waitStatus(id, StatusLanded)
	}
	r.git("reset", "-q", "--hard", "main~3")
	b4, _ := r.agentBranch("ch-4", "main", map[string]string{"ch-4.txt": "4"}, false)
	h.enqueue(Request{TaskID: "ch-4", Branch: b4})
	// Paused is published before the worker lets go of ch-4; wait for both.
	snap := h.waitFor("pause", func(s Snapshot) bool { return s.Stats.Paused && s.Idle })
	if got := strings.Join(snap.Stats.Lost, ","); got != "ch-1,ch-2,ch-3" {
		t.Fatalf("lost %q (%s)", got, snap.Stats.PauseReason)
	}
	if !strings.Contains(snap.Stats.PauseReason, "ch-2") || !h.svc.Idle() {
		t.Fatalf("reason %q idle %v", snap.Stats.PauseReason, h.svc.Idle())
	}
	if it, _ := item(snap, "ch-4"); it.Status != StatusPending {
		t.Fatalf("ch-4 %s", it.Status)
	}
	// The lost merges are still reachable through Chorus refs.
	r.git("cat-file", "-e", mergedRef("ch-2")+":ch-2.txt")
	if err := h.svc.Resume(); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("ch-4", StatusLanded)
}

// The target moves under a candidate (another writer commits on main while
// the quality commands run): the landing is refused and the queue holds
// with the old and new tips and what to do; nothing lands on the
// unverified tip until a person accepts it, then the candidate is rebuilt
// on it, tested and landed.
func TestTargetMovedDuringTestHolds(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	other := filepath.Join(t.TempDir(), "other")
	r.git("worktree", "add", "-q", "--detach", other, "main")
	// The first quality run moves main once (a marker file keeps it to one).
	script := `if [ ! -f "` + other + `/n" ]; then touch "` + other + `/n"
git -C "` + other + `" checkout -q --detach main && echo x > "` + other + `/moved" && git -C "` + other + `" add moved && git -C "` + other + `" commit -q -m "other writer" && git -C "` + other + `" update-ref refs/heads/main HEAD
fi`
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"x.txt": "x"}, false)
	before := r.git("rev-parse", "main")
	h := start(t, r, func(o *Options) { o.Quality = quality(script) }, nil)
	events := collect(t, h.svc)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	snap := h.waitFor("hold", func(s Snapshot) bool { return s.Stats.Moved != nil && s.Idle })
	moved := r.git("rev-parse", "main")
	if m := snap.Stats.Moved; m.From != before || m.To != moved || m.Rewrite {
		t.Fatalf("moved %+v, want %s → %s", m, before, moved)
	}
	if r.mergesOf("ch-1") != 0 {
		t.Fatal("ch-1 landed on an unverified tip")
	}
	ev := events.wait(t, EventTargetMoved)
	for _, want := range []string{short(before), short(moved), "chorus merge accept-target", "git update-ref refs/heads/main " + before + " " + moved} {
		if !strings.Contains(ev.Message, want) {
			t.Fatalf("event lacks %q: %s", want, ev.Message)
		}
	}
	if err := h.svc.AcceptTarget(before); err == nil {
		t.Fatal("accepted a tip main is no longer at")
	}
	if err := h.svc.AcceptTarget(moved); err != nil {
		t.Fatal(err)
	}
	it := h.waitStatus("ch-1", StatusLanded)
	if r.git("rev-parse", "main") != it.MergeCommit || r.git("rev-parse", it.MergeCommit+"^1") != moved {
		t.Fatal("the merge is not on the accepted tip")
	}
}

// Check 4: kill -9 the worker at each phase; after a restart there is
// exactly one merge commit for the task, nothing is lost, and no lock file
// or unfinished merge is left in Chorus's worktrees.
func TestKill9AtEachPhase(t *testing.T) {
	t.Parallel()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, phase := range []string{PhasePrecheck, PhaseCandidate, PhaseTesting, PhaseLanding, PhaseCAS, PhaseLanded} {
		t.Run(phase, func(t *testing.T) {
			r := newRepo(t)
			b, wt := r.agentBranch("ch-1", "main", map[string]string{"k.txt": "k\n"}, true)
			r.write("README.md", "user edit\n")
			cmd := exec.Command(exe)
			cmd.Env = append(os.Environ(), "CHORUS_MERGE_CRASH="+phase, "CHORUS_MERGE_REPO="+r.dir,
				"CHORUS_MERGE_TASK=ch-1", "CHORUS_MERGE_BRANCH="+b, "CHORUS_MERGE_WORKTREE="+wt)
			out, err := cmd.CombinedOutput()
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Fatalf("child did not die at %s: %v\n%s", phase, err, out)
			}
			h := start(t, r, func(o *Options) { o.Quality = quality("true") }, nil)
			it := h.waitStatus("ch-1", StatusLanded)
			if n := r.mergesOf("ch-1"); n != 1 {
				t.Fatalf("%d merge commits for ch-1", n)
			}
			if r.git("rev-parse", "main") != it.MergeCommit || r.read("k.txt") != "k\n" {
				t.Fatal("merge lost or checkout not updated")
			}
			if r.read("README.md") != "user edit\n" {
				t.Fatal("user edit lost")
			}
			if _, err := os.Stat(wt); !os.IsNotExist(err) {
				t.Fatal("agent worktree not removed after landing")
			}
			_ = filepath.WalkDir(filepath.Join(r.dir, ".git"), func(p string, d fs.DirEntry, err error) error {
				if err == nil && (strings.HasSuffix(p, ".lock") || d.Name() == "MERGE_HEAD") {
					t.Errorf("left behind: %s", p)
				}
				return nil
			})
			st := h.svc.Snapshot().Stats
			if st.MergesAuto+st.MergesManual != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// The queue lives in the persisted state and resumes after a restart.
func TestQueueResumesAfterRestart(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"1.txt": "1"}, false)
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"2.txt": "2"}, false)
	h := start(t, r, nil, nil)
	if err := h.svc.Resume(); err != nil { // any state change is fine; keeps Run busy-free
		t.Fatal(err)
	}
	h.stop()
	// Enqueue with no worker running, then "crash".
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Priority: 0})
	p := h.store.load(t)
	if len(p.Items) != 2 {
		t.Fatalf("persisted %d items", len(p.Items))
	}
	h2 := start(t, r, nil, nil)
	h2.waitStatus("ch-1", StatusLanded)
	h2.waitStatus("ch-2", StatusLanded)
}
