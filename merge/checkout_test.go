package merge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// settle backdates a git dir past the racy window, as an idle worktree's
// would be, so the next scan caches it.
func settle(t *testing.T, gd string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(gd, old, old); err != nil {
		t.Fatal(err)
	}
}

// The landing check reads a worktree's git dir again only when it changed,
// and then sees what changed: the target checked out there, an operation
// started or finished, a worktree added or removed.
func TestTargetCheckoutFollowsCachedGitDirs(t *testing.T) {
	r := newRepo(t)
	svc, err := New(baseOptions(r.dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, wt := r.agentBranch("c-1", "main", map[string]string{"c.txt": "c\n"}, true)
	r.git("checkout", "-q", "--detach", "main") // main is free to check out elsewhere
	gd := filepath.Join(svc.commonDir, "worktrees", filepath.Base(wt))
	settleAll := func() {
		settle(t, svc.commonDir)
		settle(t, gd)
	}
	settleAll()
	co, err := svc.targetCheckout()
	if err != nil || co.worktree != "" || co.busy != "" || !co.branches["refs/heads/agent/a/c-1"] {
		t.Fatalf("first scan: %+v %v", co, err)
	}
	if e := svc.wtCache[gd]; !e.ok {
		t.Fatal("a settled git dir was not cached")
	}
	// The agent's worktree switches to main: its HEAD is replaced.
	r.gitIn(wt, "checkout", "-q", "main")
	if co, _ = svc.targetCheckout(); co.worktree != wt {
		t.Fatalf("main checked out in %s not seen: %+v", wt, co)
	}
	settleAll()
	if co, _ = svc.targetCheckout(); co.worktree != wt || co.busy != "" {
		t.Fatalf("settled again: %+v", co)
	}
	// A merge starts there.
	head := r.gitIn(wt, "rev-parse", "HEAD")
	if err := os.WriteFile(filepath.Join(gd, "MERGE_HEAD"), []byte(head+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if co, _ = svc.targetCheckout(); !strings.Contains(co.busy, "a merge is in progress in "+wt) {
		t.Fatalf("merge in progress not seen: %+v", co)
	}
	settleAll()
	if err := os.Remove(filepath.Join(gd, "MERGE_HEAD")); err != nil {
		t.Fatal(err)
	}
	if co, _ = svc.targetCheckout(); co.busy != "" {
		t.Fatalf("finished merge still seen: %+v", co)
	}
	// The worktree goes away.
	settleAll()
	r.git("worktree", "remove", "--force", wt)
	if co, _ = svc.targetCheckout(); co.worktree != "" {
		t.Fatalf("removed worktree still seen: %+v", co)
	}
	if _, ok := svc.wtCache[gd]; ok {
		t.Fatal("a removed worktree stays cached")
	}
}

// Landings pack the refs as they accumulate: the merged refs and
// checkpoints of landed tasks do not stay loose files.
func TestLandingsPackRefs(t *testing.T) {
	r := newRepo(t)
	h := start(t, r, func(o *Options) { o.PackRefsEvery = 2 }, nil)
	for _, id := range []string{"p-1", "p-2"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
		h.waitStatus(id, StatusLanded)
	}
	h.waitFor("cleaned", func(s Snapshot) bool {
		it, _ := item(s, "p-2")
		return it.Cleaned && s.Idle
	})
	h.stop()
	common := filepath.Join(r.dir, ".git")
	for _, id := range []string{"p-1", "p-2"} {
		if _, err := os.Stat(filepath.Join(common, mergedRef(id))); err == nil {
			t.Fatalf("%s is still a loose ref", mergedRef(id))
		}
		if got := r.git("rev-parse", mergedRef(id)); got == "" {
			t.Fatalf("%s lost", mergedRef(id))
		}
	}
	packed, _ := os.ReadFile(filepath.Join(common, "packed-refs"))
	if !strings.Contains(string(packed), mergedRef("p-2")) {
		t.Fatalf("packed-refs lacks %s:\n%s", mergedRef("p-2"), packed)
	}
}
