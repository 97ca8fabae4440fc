package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddNewIsGitsWorktreeAdd: a worktree made in-process is what `git
// worktree add -b` makes, as git reads it: the same files (modes, a
// symbolic link, nested directories), the same index entries, a clean
// status whose cache-tree is the commit's tree, the branch with its
// reflog, and git's own removal works on it.
func TestAddNewIsGitsWorktreeAdd(t *testing.T) {
	repo := newRepo(t, true)
	write(t, filepath.Join(repo, "src", "deep", "a.go"), "package a\n")
	write(t, filepath.Join(repo, "src", "b.txt"), "b\n")
	write(t, filepath.Join(repo, "a.txt"), "sorts before a/ in the index\n")
	write(t, filepath.Join(repo, "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(repo, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("src/b.txt", filepath.Join(repo, "link")); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "git", "add", "-A")
	run(t, repo, "git", "commit", "-q", "-m", "tree")
	m := &Manager{RepoDir: repo, Target: "main"}
	defer m.Close()
	ctx := context.Background()

	rel, branch, err := Name("claude", "ch-1")
	if err != nil {
		t.Fatal(err)
	}
	wt := Worktree{Dir: filepath.Join(repo, rel), Branch: branch}
	if err := os.MkdirAll(filepath.Dir(wt.Dir), 0o755); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.reg.Lock()
	head, fill, ok := m.addNew(ctx, wt.Dir, branch)
	m.reg.Unlock()
	m.mu.Unlock()
	if !ok {
		t.Fatal("the worktree was left to git")
	}
	if err := fill(ctx); err != nil {
		t.Fatal(err)
	}
	wt.Head, wt.Created = head, true
	run(t, repo, "git", "worktree", "add", "-q", "-b", "by-git", filepath.Join(repo, ".worktrees", "by-git"), "main")
	byGit := filepath.Join(repo, ".worktrees", "by-git")

	if got := run(t, repo, "git", "rev-parse", "main"); wt.Head != got || !wt.Created {
		t.Fatalf("Ensure = %+v, main is %s", wt, got)
	}
	admin := filepath.Join(repo, ".git", "worktrees", filepath.Base(wt.Dir))
	if exists(filepath.Join(admin, "locked")) {
		t.Fatal("the worktree is left locked")
	}
	for _, args := range [][]string{
		{"git", "ls-files", "-s"},
		{"git", "ls-tree", "-r", "HEAD"},
		{"git", "rev-parse", "HEAD", "--git-common-dir", "--show-toplevel"},
	} {
		got, want := run(t, wt.Dir, args...), run(t, byGit, args...)
		want = strings.ReplaceAll(want, "by-git", filepath.Base(wt.Dir))
		if got != want {
			t.Errorf("%v:\n%s\ngit's worktree:\n%s", args, got, want)
		}
	}
	if st := run(t, wt.Dir, "git", "status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("status of the new worktree: %q", st)
	}
	for _, f := range []string{"run.sh", "src/deep/a.go", "link"} {
		a, _ := os.Lstat(filepath.Join(wt.Dir, f))
		b, _ := os.Lstat(filepath.Join(byGit, f))
		if a == nil || b == nil || a.Mode() != b.Mode() {
			t.Errorf("%s: mode %v, git's %v", f, a, b)
		}
	}
	// The index's cache-tree is the commit's tree: git writes no new tree
	// for it, and the checks that read it find the worktree clean.
	if got, want := run(t, wt.Dir, "git", "write-tree"), run(t, repo, "git", "rev-parse", "main^{tree}"); got != want {
		t.Errorf("write-tree %s, want %s", got, want)
	}
	if got := run(t, repo, "git", "reflog", "show", "--format=%gs", wt.Branch); got != "branch: Created from main" {
		t.Errorf("branch reflog %q", got)
	}
	list := run(t, repo, "git", "worktree", "list", "--porcelain")
	if !strings.Contains(list, "worktree "+wt.Dir) || !strings.Contains(list, "branch refs/heads/"+wt.Branch) {
		t.Errorf("git worktree list:\n%s", list)
	}
	run(t, repo, "git", "fsck", "--no-progress")
	// The agent's work goes the usual way: commit, then remove once merged.
	write(t, filepath.Join(wt.Dir, "src", "b.txt"), "changed\n")
	run(t, wt.Dir, "git", "commit", "-q", "-am", "work")
	run(t, repo, "git", "merge", "-q", "--ff-only", wt.Branch)
	if err := m.Remove(ctx, wt, ""); err != nil {
		t.Fatal(err)
	}
	run(t, repo, "git", "worktree", "remove", byGit)
	if exists(wt.Dir) || exists(admin) {
		t.Error("the worktree or its registration is left after Remove")
	}
}

// TestAddNewLeavesUnusualReposToGit: with a setting that changes what a
// checkout writes, or a hook git would run, the worktree is git's own
// (the hook ran), and nothing of a half-made one is left.
func TestAddNewLeavesUnusualReposToGit(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, repo string)
	}{
		{"autocrlf", func(t *testing.T, repo string) { run(t, repo, "git", "config", "core.autocrlf", "true") }},
		{"attributes", func(t *testing.T, repo string) {
			write(t, filepath.Join(repo, ".gitattributes"), "*.txt text eol=crlf\n")
			run(t, repo, "git", "add", "-A")
			run(t, repo, "git", "commit", "-q", "-m", "attrs")
		}},
		{"post-checkout hook", func(t *testing.T, repo string) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			repo := newRepo(t, true)
			tc.setup(t, repo)
			hook := filepath.Join(repo, ".git", "hooks", "post-checkout")
			write(t, hook, "#!/bin/sh\ntouch \"$(git rev-parse --show-toplevel)/.hook-ran\"\n")
			if err := os.Chmod(hook, 0o755); err != nil {
				t.Fatal(err)
			}
			m := &Manager{RepoDir: repo, Target: "main"}
			defer m.Close()
			if tc.name != "post-checkout hook" {
				_ = os.Remove(hook)
			}
			abs := filepath.Join(repo, ".worktrees", "x")
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				t.Fatal(err)
			}
			m.mu.Lock()
			m.reg.Lock()
			_, _, ok := m.addNew(context.Background(), abs, "chorus/x/y")
			m.reg.Unlock()
			m.mu.Unlock()
			if ok {
				t.Fatal("made in-process")
			}
			if exists(abs) || exists(filepath.Join(repo, ".git", "worktrees", "x")) || exists(filepath.Join(repo, ".git", "refs", "heads", "chorus")) {
				t.Fatal("a half-made worktree or branch is left")
			}
			wt, err := m.Ensure(context.Background(), "claude", "ch-2", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.name == "post-checkout hook" && !exists(filepath.Join(wt.Dir, ".hook-ran")) {
				t.Error("git's hook did not run: the worktree was not git's")
			}
		})
	}
}

// TestHalfMadeWorktreeIsMadeAgain: an engine stopped at any point of
// making a worktree (registered, not checked out; its .git file torn or
// not written; its directory not made; only its lock written) left it
// locked as being made; the next start makes it again on its branch,
// whole, and leaves no stale registration.
func TestHalfMadeWorktreeIsMadeAgain(t *testing.T) {
	cases := []struct {
		name string
		cut  func(t *testing.T, abs, admin string)
	}{
		{"before its checkout", func(*testing.T, string, string) {}},
		{"torn .git", func(t *testing.T, abs, _ string) {
			if err := os.WriteFile(filepath.Join(abs, ".git"), nil, 0o666); err != nil {
				t.Fatal(err)
			}
		}},
		{"no .git", func(t *testing.T, abs, _ string) {
			if err := os.Remove(filepath.Join(abs, ".git")); err != nil {
				t.Fatal(err)
			}
		}},
		{"no directory", func(t *testing.T, abs, _ string) {
			if err := os.RemoveAll(abs); err != nil {
				t.Fatal(err)
			}
		}},
		{"only its lock", func(t *testing.T, abs, admin string) {
			for _, p := range []string{abs, filepath.Join(admin, "gitdir"), filepath.Join(admin, "HEAD"), filepath.Join(admin, "commondir")} {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"its branch not yet made", func(t *testing.T, abs, admin string) {
			// Stopped inside CreateRef: the ref's lock written, not renamed.
			_, branch, _ := Name("claude", "ch-3")
			ref := filepath.Join(filepath.Dir(filepath.Dir(admin)), "refs", "heads", filepath.FromSlash(branch))
			for _, p := range []string{abs, filepath.Join(admin, "gitdir"), filepath.Join(admin, "HEAD"), filepath.Join(admin, "commondir")} {
				if err := os.RemoveAll(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Rename(ref, ref+".lock"); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, true)
			common := filepath.Join(repo, ".git")
			m := &Manager{RepoDir: repo, Target: "main"}
			rel, branch, err := Name("claude", "ch-3")
			if err != nil {
				t.Fatal(err)
			}
			abs := filepath.Join(repo, rel)
			if err := os.MkdirAll(filepath.Dir(abs), 0o755); err != nil {
				t.Fatal(err)
			}
			m.mu.Lock()
			m.reg.Lock()
			_, _, ok := m.addNew(context.Background(), abs, branch)
			m.reg.Unlock()
			m.mu.Unlock()
			m.Close()
			admin, half := halfMade(common, abs)
			if !ok || !half || exists(filepath.Join(abs, "README.md")) {
				t.Fatalf("not a half-made worktree: ok %v", ok)
			}
			c.cut(t, abs, admin)
			if _, half := halfMade(common, abs); !half {
				t.Fatal("a stopped making is not recognised")
			}
			m2 := &Manager{RepoDir: repo, Target: "main"}
			defer m2.Close()
			wt, err := m2.Ensure(context.Background(), "claude", "ch-3", Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, half := halfMade(common, wt.Dir); half || read(t, filepath.Join(wt.Dir, "README.md")) != "hello\n" {
				t.Fatal("the worktree was not made again")
			}
			if st := run(t, wt.Dir, "git", "status", "--porcelain"); st != "" {
				t.Fatalf("status %q", st)
			}
			if got := run(t, wt.Dir, "git", "branch", "--show-current"); got != branch {
				t.Fatalf("on %q, want %q", got, branch)
			}
			list := run(t, repo, "git", "worktree", "list", "--porcelain")
			if strings.Count(list, "worktree ") != 2 || strings.Contains(list, "locked") || strings.Contains(list, "prunable") {
				t.Fatalf("registrations:\n%s", list)
			}
		})
	}
}

// TestLandedWorktreeIsReusedForTheNext: a clean worktree removed once its
// work landed is kept as a spare, and the next new worktree is made from
// it: the target's files as they are now (the landed change included),
// nothing of the last task's scratchpad, a clean status; spares left at
// Close are deleted by the next session.
func TestLandedWorktreeIsReusedForTheNext(t *testing.T) {
	repo := newRepo(t, true)
	write(t, filepath.Join(repo, "a", "b", "c.txt"), "c\n")
	run(t, repo, "git", "add", "-A")
	run(t, repo, "git", "commit", "-q", "-m", "more")
	m := &Manager{RepoDir: repo, Target: "main"}
	ctx := context.Background()
	spares := func() []string {
		m, _ := filepath.Glob(filepath.Join(repo, Dir, sparePrefix+"*"))
		return m
	}
	wt, err := m.Ensure(ctx, "claude", "ch-1", Options{Scratchpad: "notes\n"})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Dir, "a", "b", "c.txt"), "changed\n")
	write(t, filepath.Join(wt.Dir, "new.txt"), "new\n")
	if err := os.Remove(filepath.Join(wt.Dir, "README.md")); err != nil {
		t.Fatal(err)
	}
	run(t, wt.Dir, "git", "add", "-A", "--", "a", "new.txt", "README.md") // the scratchpad stays untracked
	run(t, wt.Dir, "git", "commit", "-q", "-m", "work")
	run(t, repo, "git", "merge", "-q", "--ff-only", wt.Branch)
	// Refresh the index as an agent's next git command would, so the
	// worktree is surely clean (its index not racy).
	run(t, wt.Dir, "git", "status", "--porcelain")
	if err := m.Remove(ctx, wt, ""); err != nil {
		t.Fatal(err)
	}
	if len(spares()) != 1 || exists(wt.Dir) {
		t.Fatalf("spares %v after the removal", spares())
	}
	// The target moves on after the spare was kept.
	run(t, repo, "git", "rm", "-q", "-r", "a/b")
	write(t, filepath.Join(repo, "a", "b"), "a file where a directory was\n")
	run(t, repo, "git", "add", "-A")
	run(t, repo, "git", "commit", "-q", "-m", "switch")
	wt2, err := m.Ensure(ctx, "claude", "ch-2", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(spares()) != 0 {
		t.Fatalf("the spare was not used: %v", spares())
	}
	if got, want := run(t, wt2.Dir, "git", "ls-files", "-s"), run(t, repo, "git", "ls-files", "-s"); got != want {
		t.Fatalf("ls-files -s\n%s\nwant\n%s", got, want)
	}
	if st := run(t, wt2.Dir, "git", "status", "--porcelain", "--untracked-files=all", "--ignored"); st != "" {
		t.Fatalf("status %q", st)
	}
	if read(t, filepath.Join(wt2.Dir, "a", "b")) != "a file where a directory was\n" || exists(filepath.Join(wt2.Dir, "README.md")) ||
		exists(filepath.Join(wt2.Dir, filepath.FromSlash(ScratchpadPath))) {
		t.Fatal("the worktree does not hold the target's files")
	}
	run(t, wt2.Dir, "git", "commit", "-q", "--allow-empty", "-m", "still works")
	run(t, repo, "git", "merge", "-q", "--ff-only", wt2.Branch)
	run(t, wt2.Dir, "git", "status", "--porcelain")
	if err := m.Remove(ctx, wt2, ""); err != nil {
		t.Fatal(err)
	}
	if len(spares()) != 1 {
		t.Fatalf("spares %v", spares())
	}
	// Close leaves it; the next session deletes it.
	m.Close()
	if len(spares()) != 1 {
		t.Fatalf("spares %v after Close", spares())
	}
	m = &Manager{RepoDir: repo, Target: "main"}
	if _, err := m.Ensure(ctx, "claude", "ch-3", Options{}); err != nil {
		t.Fatal(err)
	}
	m.Close()
	if len(spares()) != 0 {
		t.Fatalf("the next session left %v", spares())
	}
}
