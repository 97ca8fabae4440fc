package merge

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// gitLog puts a git first on PATH that logs each command line, for the
// test's duration (not parallel: PATH is the process's).
func gitLog(t *testing.T) func() []string {
	t.Helper()
	real, err := exec.LookPath("git")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	log := filepath.Join(dir, "log")
	script := "#!/bin/sh\nprintf '%s\\n' \"$*\" >>" + shellQuote(log) + "\nexec " + shellQuote(real) + " \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return func() []string {
		b, _ := os.ReadFile(log)
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
}

// Branches that change different files merge and commit in-process: no
// merge-tree, commit-tree, ref query or update-ref process per item, and the result is
// the tree git's own merge gives, in a commit git would have written.
func TestDisjointMergesInProcess(t *testing.T) {
	r := newRepo(t)
	b1, wt1 := r.agentBranch("ch-1", "main", map[string]string{"one/a.txt": "a\n"}, true)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"two/b.txt": "b\n"}, true)
	logged := gitLog(t)
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1, Title: "one", Agent: "a", Worktree: wt1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Title: "two", Agent: "a", Worktree: wt2})
	it := h.waitStatus("ch-2", StatusLanded)
	h.stop()

	refProcs := 0
	for _, l := range logged() {
		for _, sub := range []string{"merge-tree ", "commit-tree ", "rev-parse ", "merge-base "} {
			if strings.Contains(" "+l, " "+sub) {
				t.Errorf("ran git %s", l)
			}
		}
		if strings.Contains(l, "update-ref") {
			refProcs++
		}
	}
	if refProcs != 1 {
		t.Errorf("%d update-ref processes for two landings, want the one that serves the session", refProcs)
	}
	parents := strings.Fields(r.git("log", "-1", "--format=%P", it.MergeCommit))
	if len(parents) != 2 {
		t.Fatalf("merge commit parents %v", parents)
	}
	want := strings.Fields(r.git("merge-tree", "--write-tree", parents[0], parents[1]))[0]
	if got := r.git("rev-parse", it.MergeCommit+"^{tree}"); got != want {
		t.Fatalf("merged tree %s, git merges to %s", got, want)
	}
	if msg := r.git("log", "-1", "--format=%B", it.MergeCommit); !strings.HasPrefix(msg, "Merge "+b2+": two\n\nChorus-Task: ch-2") {
		t.Fatalf("message %q", msg)
	}
	if who, want := r.git("log", "-1", "--format=%an <%ae>|%cn <%ce>", it.MergeCommit), r.git("var", "GIT_AUTHOR_IDENT"); !strings.HasPrefix(want, strings.SplitN(who, "|", 2)[0]) {
		t.Fatalf("author %q, git would record %q", who, want)
	}
	if out := r.git("fsck", "--strict", "--no-dangling"); out != "" {
		t.Fatalf("fsck: %s", out)
	}
	if r.read("one/a.txt") != "a\n" || r.read("two/b.txt") != "b\n" {
		t.Fatal("checkout lacks the merged files")
	}
}

// The merge drivers are written to the repository config once: a later
// session reads them back and writes nothing, unless the command changed.
func TestDriversWrittenOnlyWhenChanged(t *testing.T) {
	r := newRepo(t)
	start(t, r, nil, nil).stop()
	logged := gitLog(t)
	start(t, r, nil, nil).stop()
	start(t, r, func(o *Options) { o.DriverCommand = "other-driver" }, nil).stop()
	var reads, writes []string
	for _, l := range logged() {
		switch {
		case strings.Contains(l, "config --local -z --get-regexp"):
			reads = append(reads, l)
		case strings.Contains(l, "config --local merge."):
			writes = append(writes, l)
		}
	}
	if len(reads) != 2 || len(writes) != 2 {
		t.Fatalf("config reads %q, writes %q: want one read per session and the two driver lines of the changed command", reads, writes)
	}
	if got := r.git("config", "merge.chorus-learnings.driver"); !strings.HasPrefix(got, "other-driver learnings ") {
		t.Fatalf("driver %q", got)
	}
}

// Landed items waiting for their clean-up (here: after a restart) are
// cleaned up together: worktrees and branches gone, and the queue saved
// once for all of them.
func TestCleanupBatch(t *testing.T) {
	r := newRepo(t)
	start(t, r, nil, nil).stop()
	var items []Item
	for i, task := range []string{"ch-1", "ch-2", "ch-3"} {
		b, wt := r.agentBranch(task, "main", map[string]string{task + ".txt": task + "\n"}, true)
		head := r.git("rev-parse", b)
		r.git("merge", "-q", "--no-ff", "-m", "Merge "+b, b)
		items = append(items, Item{Request: Request{TaskID: task, Branch: b, Title: task, Agent: "a", Worktree: wt},
			Status: StatusLanded, Seq: uint64(i + 1), Head: head, MergeCommit: r.git("rev-parse", "main")})
	}
	store := &fileStore{path: filepath.Join(r.dir, ".chorus", "state.json")}
	if err := store.persist(items, Stats{NextSeq: 4}); err != nil {
		t.Fatal(err)
	}
	h := start(t, r, nil, nil)
	h.waitFor("clean-up", func(s Snapshot) bool {
		n := 0
		for _, it := range s.Items {
			if it.Cleaned {
				n++
			}
		}
		return n == 3 && s.Idle
	})
	h.stop()
	for _, it := range items {
		if dirExists(it.Worktree) {
			t.Errorf("%s still there", it.Worktree)
		}
		if out := r.git("branch", "--list", it.Branch); out != "" {
			t.Errorf("branch %s still there", it.Branch)
		}
	}
	h.store.mu.Lock()
	defer h.store.mu.Unlock()
	for _, n := range h.store.cleaned {
		if n != 0 && n != 3 {
			t.Fatalf("cleaned-up items per save %v: want them saved together", h.store.cleaned)
		}
	}
}
