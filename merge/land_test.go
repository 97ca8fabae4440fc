package merge

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
)

func TestCleanMergeCheckedOutMain(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	branch, wt := r.agentBranch("ch-1", "main", map[string]string{"new.txt": "new\n"}, true)
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: branch, Title: "add new", Agent: "a", Worktree: wt})
	it := h.waitStatus("ch-1", StatusLanded)
	if head := r.git("rev-parse", "HEAD"); head != it.MergeCommit {
		t.Fatalf("HEAD %s, merge %s", head, it.MergeCommit)
	}
	if st := r.git("status", "--porcelain"); st != "" {
		t.Fatalf("status not clean:\n%s", st)
	}
	if r.read("new.txt") != "new\n" {
		t.Fatal("file not in checkout")
	}
	if n := r.mergesOf("ch-1"); n != 1 {
		t.Fatalf("%d merges", n)
	}
	if p := r.git("log", "-1", "--format=%P", "main"); len(strings.Fields(p)) != 2 {
		t.Fatalf("not a merge commit: %q", p)
	}
	// Worktree and branch removed only now; the merge is kept on a Chorus ref.
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	if _, err := git(context.Background(), r.dir, "rev-parse", "--verify", "-q", "refs/heads/"+branch); err == nil {
		t.Fatal("branch still there")
	}
	if got := r.git("rev-parse", mergedRef("ch-1")); got != it.MergeCommit {
		t.Fatal("merged ref missing")
	}
	if _, err := git(context.Background(), r.dir, "rev-parse", "--verify", "-q", CheckpointPrefix+"pre-merge-ch-1"); err != nil {
		t.Fatal("no pre-merge checkpoint")
	}
	st := h.svc.Snapshot().Stats
	if st.MergesAuto != 1 || st.MergesManual != 0 {
		t.Fatalf("stats %+v", st)
	}
	// The state on disk says landed.
	p := h.store.load(t)
	if len(p.Items) != 1 || p.Items[0].Status != StatusLanded {
		t.Fatalf("persisted %+v", p.Items)
	}
}

func TestCleanMergeCASWhenNotCheckedOut(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	r.git("checkout", "-q", "-b", "mine")
	branch, _ := r.agentBranch("ch-2", "main", map[string]string{"x.txt": "x\n"}, false)
	before := r.git("rev-parse", "HEAD")
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-2", Branch: branch})
	it := h.waitStatus("ch-2", StatusLanded)
	if got := r.git("rev-parse", "main"); got != it.MergeCommit {
		t.Fatal("main not moved")
	}
	if r.git("rev-parse", "HEAD") != before || r.git("status", "--porcelain") != "" {
		t.Fatal("user's checkout changed")
	}
	if !strings.Contains(r.git("reflog", "-1", "main"), "chorus: merge ch-2") {
		t.Fatalf("reflog: %s", r.git("reflog", "-1", "main"))
	}
}

// The user edits an unrelated file (and stages another) in the main
// checkout while merges land: both survive, the index keeps their change.
func TestUserEditSurvivesLanding(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	var branches []string
	for _, id := range []string{"ch-1", "ch-2", "ch-3"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id + "\n"}, false)
		branches = append(branches, b)
	}
	r.write("README.md", "my local edit\n")
	r.write("b.txt", "staged edit\n")
	r.git("add", "b.txt")
	h := start(t, r, nil, nil)
	for i, id := range []string{"ch-1", "ch-2", "ch-3"} {
		h.enqueue(Request{TaskID: id, Branch: branches[i]})
	}
	for _, id := range []string{"ch-1", "ch-2", "ch-3"} {
		h.waitStatus(id, StatusLanded)
	}
	if r.read("README.md") != "my local edit\n" || r.read("b.txt") != "staged edit\n" {
		t.Fatal("user edit lost")
	}
	st := r.git("-c", "status.relativePaths=false", "status", "--porcelain")
	st = sortLines(st)
	want := " M README.md\nM  b.txt"
	if st != want {
		t.Fatalf("status:\n%s\nwant:\n%s", st, want)
	}
	for _, id := range []string{"ch-1", "ch-2", "ch-3"} {
		if r.read(id+".txt") != id+"\n" {
			t.Fatalf("%s not in checkout", id)
		}
	}
}

// Check 1b: an overlapping dirty file keeps main where it is and the
// user's file untouched; the item is held with what to do, and lands on
// retry once the user committed.
func TestOverlappingDirtyFileHolds(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	branch, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nA2\na3\na4\na5\n"}, false)
	r.write("a.txt", "a1\na2\na3\na4\nmine\n")
	before := r.git("rev-parse", "main")
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: branch})
	it := h.waitStatus("ch-1", StatusHeld)
	if r.git("rev-parse", "main") != before {
		t.Fatal("main moved")
	}
	if r.read("a.txt") != "a1\na2\na3\na4\nmine\n" {
		t.Fatal("user file changed")
	}
	if !strings.Contains(it.LastError, "a.txt") || !strings.Contains(it.Action, "retry") {
		t.Fatalf("hold message: %q / %q", it.LastError, it.Action)
	}
	// Held is published before the worker lets go; a held item must not
	// keep the queue busy once it has.
	h.waitFor("idle", func(s Snapshot) bool { return s.Idle })
	r.git("commit", "-q", "-am", "user work")
	if err := h.svc.Retry("ch-1"); err != nil {
		t.Fatal(err)
	}
	// The user's commit moved main: nothing lands on it until accepted.
	snap := h.waitFor("hold", func(s Snapshot) bool { return s.Stats.Moved != nil && s.Idle })
	if it, _ := item(snap, "ch-1"); it.Status != StatusPending || r.mergesOf("ch-1") != 0 {
		t.Fatalf("ch-1 %s with main moved", it.Status)
	}
	if err := h.svc.AcceptTarget(r.git("rev-parse", "main")); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("ch-1", StatusLanded)
	if got := r.read("a.txt"); got != "a1\nA2\na3\na4\nmine\n" {
		t.Fatalf("merged a.txt = %q", got)
	}
	if h.svc.Snapshot().Stats.MergesManual != 1 {
		t.Fatal("a retried hold counts as a manual merge")
	}
}

// Check 2: a rebase of main in progress in the user's checkout: Chorus does
// not move main, and `rebase --abort` loses nothing of Chorus's.
func TestRebaseInProgressHolds(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	// A user commit on main and a side branch that conflicts with it.
	r.git("checkout", "-q", "-b", "side")
	r.write("b.txt", "side\n")
	r.git("commit", "-q", "-am", "side")
	r.git("checkout", "-q", "main")
	r.write("b.txt", "main\n")
	r.git("commit", "-q", "-am", "main change")
	before := r.git("rev-parse", "main")
	cmd := exec.Command("git", "rebase", "side")
	cmd.Dir = r.dir
	if err := cmd.Run(); err == nil {
		t.Fatal("rebase should stop on a conflict")
	}
	branch, _ := r.agentBranch("ch-1", before, map[string]string{"n.txt": "n\n"}, false)
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: branch})
	it := h.waitStatus("ch-1", StatusHeld)
	if !strings.Contains(it.LastError, "rebase") {
		t.Fatalf("hold reason %q", it.LastError)
	}
	if r.git("rev-parse", "main") != before {
		t.Fatal("main moved during the user's rebase")
	}
	r.git("rebase", "--abort")
	if r.git("rev-parse", "main") != before {
		t.Fatal("abort changed main")
	}
	if err := h.svc.Retry("ch-1"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("ch-1", StatusLanded)
	if r.read("n.txt") != "n\n" || r.read("b.txt") != "main\n" {
		t.Fatal("merge or user commit missing")
	}
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "rebase-merge")); err == nil {
		t.Fatal("rebase state left")
	}
}

func sortLines(s string) string {
	l := strings.Split(s, "\n")
	sort.Strings(l)
	return strings.Join(l, "\n")
}

// TestCleanupKeepsUncommittedWork lands a branch whose worktree still holds
// an uncommitted edit and an untracked file: the worktree goes, the work is
// kept on a refs/chorus/kept/ ref.
func TestCleanupKeepsUncommittedWork(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	branch, wt := r.agentBranch("ch-1", "main", map[string]string{"new.txt": "new\n"}, true)
	r.writeIn(wt, "notes/untracked.md", "late idea\n")
	r.writeIn(wt, "new.txt", "edited after the commit\n")
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: branch, Title: "add new", Agent: "a", Worktree: wt})
	h.waitFor("cleanup", func(s Snapshot) bool { it, ok := item(s, "ch-1"); return ok && it.Cleaned })
	if _, err := os.Stat(wt); !os.IsNotExist(err) {
		t.Fatalf("worktree still there: %v", err)
	}
	refs := strings.Fields(r.git("for-each-ref", "--format=%(refname)", "refs/chorus/kept/ch-1/"))
	if len(refs) != 1 || !strings.HasSuffix(refs[0], "-wip") {
		t.Fatalf("kept refs %v", refs)
	}
	if got := r.show(refs[0], "notes/untracked.md"); got != "late idea" {
		t.Fatalf("untracked file kept as %q", got)
	}
	if got := r.show(refs[0], "new.txt"); got != "edited after the commit" {
		t.Fatalf("edit kept as %q", got)
	}
}

// A landing on a checked-out target is git's fast-forward alone: git's
// automatic maintenance, a second git process after every merge, stays
// off the landing's path (agents' commits run it). The landed event is
// dated when the target took the commit, as the item's LandedAt.
func TestCheckedOutLandingRunsNoMaintenance(t *testing.T) {
	r := newRepo(t)
	branch, wt := r.agentBranch("mt-1", "main", map[string]string{"new.txt": "new\n"}, true)
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("GIT_TRACE", trace) // every git from here on, and what it runs
	h := start(t, r, nil, nil)
	evs := collect(t, h.svc)
	h.enqueue(Request{TaskID: "mt-1", Branch: branch, Title: "add new", Agent: "a", Worktree: wt})
	it := h.waitStatus("mt-1", StatusLanded)
	if head := r.git("rev-parse", "HEAD"); head != it.MergeCommit {
		t.Fatalf("HEAD %s, merge %s", head, it.MergeCommit)
	}
	if ev := evs.wait(t, EventLanded); !ev.Time.Equal(it.LandedAt) {
		t.Fatalf("landed event dated %v, the landing %v", ev.Time, it.LandedAt)
	}
	h.stop()
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "merge --ff-only") {
		t.Fatalf("no fast-forward traced:\n%s", raw)
	}
	if strings.Contains(string(raw), "maintenance") {
		t.Fatalf("the landing ran git maintenance:\n%s", raw)
	}
}

// With nothing to test, a candidate goes from the queue to the landing
// with one save before the target moves: "landing", holding the
// candidate; "merging" and "testing" are never written (a crash there
// finds the item pending, as it would find either of them). With a
// check, "testing" is saved before the check runs.
func TestUntestedCandidateSavedOnceBeforeLanding(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		quality []string
		want    []Status
	}{
		{"no check", nil, []Status{StatusPending, StatusLanding, StatusLanded}},
		{"a check", []string{"true"}, []Status{StatusPending, StatusTesting, StatusLanding, StatusLanded}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newRepo(t)
			branch, _ := r.agentBranch("sv-1", "main", map[string]string{"sv.txt": "sv\n"}, false)
			var mu sync.Mutex
			var saved []Status
			rec := func(items []Item, st Stats) error {
				for _, it := range items {
					if it.TaskID != "sv-1" {
						continue
					}
					if it.Status == StatusLanding && it.Candidate == "" {
						t.Errorf("landing saved without its candidate: %+v", it)
					}
					mu.Lock()
					if n := len(saved); n == 0 || saved[n-1] != it.Status {
						saved = append(saved, it.Status)
					}
					mu.Unlock()
				}
				return nil
			}
			opt := baseOptions(r.dir)
			opt.Quality = quality(tc.quality...)
			svc, err := New(opt, rec, nil)
			if err != nil {
				t.Fatal(err)
			}
			h := &harness{t: t, r: r, svc: svc, done: make(chan error, 1)}
			h.run()
			t.Cleanup(h.stop)
			h.enqueue(Request{TaskID: "sv-1", Branch: branch})
			h.waitStatus("sv-1", StatusLanded)
			h.stop()
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(saved, tc.want) {
				t.Fatalf("saved %v, want %v", saved, tc.want)
			}
		})
	}
}

// The first landing of a service starts no git process of its own but
// the fast-forward: the object store's reader and the settings and
// identities commits are written with were read when the service started
// (before its baseline).
func TestFirstLandingStartsOnlyTheFastForward(t *testing.T) {
	r := newRepo(t)
	branch, _ := r.agentBranch("fl-1", "main", map[string]string{"fl.txt": "fl\n"}, false)
	trace := filepath.Join(t.TempDir(), "trace")
	t.Setenv("GIT_TRACE", trace)
	h := start(t, r, nil, nil)
	<-h.svc.Baseline() // taken once the service has warmed up
	if err := os.WriteFile(trace, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.enqueue(Request{TaskID: "fl-1", Branch: branch})
	h.waitStatus("fl-1", StatusLanded)
	raw, err := os.ReadFile(trace)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(raw), "\n")
	ff := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "merge --ff-only") })
	if ff < 0 {
		t.Fatalf("no fast-forward traced:\n%s", raw)
	}
	for _, l := range lines[:ff] {
		if strings.Contains(l, "trace: built-in: git") || strings.Contains(l, "trace: exec:") {
			t.Errorf("started on the landing's path: %s", l)
		}
	}
}
