package gitx

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// benchRepo makes a repository of 400 files in 40 directories and 300
// commits, each changing two files, with one git fast-import.
func benchRepo(b *testing.B) (dir string, commits []string) {
	b.Helper()
	dir = obRepo(b)
	var s bytes.Buffer
	mark := 0
	for c := 0; c < 300; c++ {
		mark++
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata 4\nc%03d\n", mark, 1_700_000_000+c, c)
		if c > 0 {
			fmt.Fprintf(&s, "from :%d\n", mark-1)
		}
		n := 2
		if c == 0 {
			n = 400
		}
		for k := 0; k < n; k++ {
			f := k
			if c > 0 {
				f = (c*37 + k*101) % 400
			}
			body := fmt.Sprintf("file %d version %d\n", f, c)
			fmt.Fprintf(&s, "M 100644 inline d%02d/sub/f%03d\ndata %d\n%s\n", f%40, f, len(body), body)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = &s
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("fast-import: %v %s", err, out)
	}
	commits = strings.Fields(obGit(b, dir, "rev-list", "--reverse", "main"))
	return dir, commits
}

func benchGit(b *testing.B, dir string, env []string, args ...string) int {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(cmd.Environ(), env...)
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		b.Fatal(err)
	}
	return 0
}

// The store against the git command each call replaces. "store" keeps
// its caches between calls (as the engine does); "store-cold" clears them
// first, so every object comes through cat-file.
func BenchmarkObjects(b *testing.B) {
	ctx := context.Background()
	dir, commits := benchRepo(b)
	tip, old := commits[len(commits)-1], commits[len(commits)-6]
	far := commits[len(commits)-51]
	o := OpenObjects(dir)
	defer o.Close()
	cold := func() {
		o.cacheMu.Lock()
		clear(o.commits)
		clear(o.trees)
		o.cacheMu.Unlock()
	}
	author, committer, err := o.Ident(ctx)
	if err != nil {
		b.Fatal(err)
	}
	when := time.Unix(1_700_000_000, 0).UTC()
	author.When, committer.When = when, when
	tree := obGit(b, dir, "rev-parse", tip+"^{tree}")
	env := []string{"GIT_AUTHOR_DATE=1700000000 +0000", "GIT_COMMITTER_DATE=1700000000 +0000"}
	// distinct messages so that every write is a new object
	seq := 0

	b.Run("DiffNames/git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchGit(b, dir, nil, "diff", "--name-only", "--no-renames", old, tip)
		}
	})
	for _, mode := range []string{"store", "store-cold"} {
		b.Run("DiffNames/"+mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if mode == "store-cold" {
					cold()
				}
				if n, err := o.DiffNames(ctx, old, tip); err != nil || len(n) != 10 {
					b.Fatal(n, err)
				}
			}
		})
	}
	b.Run("IsAncestor/git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchGit(b, dir, nil, "merge-base", "--is-ancestor", far, tip)
		}
	})
	for _, mode := range []string{"store", "store-cold"} {
		b.Run("IsAncestor/"+mode, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if mode == "store-cold" {
					cold()
				}
				if ok, err := o.IsAncestor(ctx, far, tip); err != nil || !ok {
					b.Fatal(ok, err)
				}
			}
		})
	}
	b.Run("WriteCommit/git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			seq++
			benchGit(b, dir, env, "commit-tree", tree, "-p", tip, "-m", fmt.Sprintf("bench %d", seq))
		}
	})
	b.Run("WriteCommit/store", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			seq++
			if _, err := o.WriteCommit(ctx, NewCommit{Tree: tree, Parents: []string{tip}, Messages: []string{fmt.Sprintf("bench %d", seq)},
				Author: author, Committer: committer}); err != nil {
				b.Fatal(err)
			}
		}
	})
	// Two branches off old, each changing its own file.
	obGit(b, dir, "checkout", "-q", "-b", "x", old)
	ours := benchCommitFile(b, dir, "d01/sub/mine")
	obGit(b, dir, "checkout", "-q", "-b", "y", old)
	theirs := benchCommitFile(b, dir, "d02/sub/theirs")
	b.Run("MergeTrees/git", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			benchGit(b, dir, nil, "merge-tree", "--write-tree", ours, theirs)
		}
	})
	b.Run("MergeTrees/store", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			cold()
			if _, ok, err := o.MergeTrees(ctx, old, ours, theirs); err != nil || !ok {
				b.Fatal(ok, err)
			}
		}
	})
}

func benchCommitFile(b *testing.B, dir, rel string) string {
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(rel+"\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	obGit(b, dir, "add", rel)
	obGit(b, dir, "commit", "-q", "-m", rel)
	return obGit(b, dir, "rev-parse", "HEAD")
}

// SurelyClean against the git status it saves, on a clean linked worktree
// of the 400-file repository, side by side.
func BenchmarkSurelyClean(b *testing.B) {
	dir, _ := benchRepo(b)
	wt := filepath.Join(dir, "wt")
	obGit(b, dir, "worktree", "add", "-q", "--detach", wt, "main")
	// An agent's commit: loose, as the one SurelyClean reads (fast-import
	// packed the rest).
	if err := os.WriteFile(filepath.Join(wt, "agent.txt"), []byte("work\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	obGit(b, wt, "add", "agent.txt")
	obGit(b, wt, "commit", "-q", "-m", "agent work")
	// Entries written in the same instant as the index are racily clean
	// for both; a refresh a moment later settles them.
	past := time.Now().Add(-time.Hour)
	filepath.WalkDir(wt, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() && d.Name() != ".git" {
			os.Chtimes(p, past, past)
		}
		return nil
	})
	obGit(b, wt, "update-index", "-q", "--really-refresh")
	if !SurelyClean(wt, nil) {
		b.Fatal("a clean worktree is not surely clean")
	}
	b.Run("in-process", func(b *testing.B) {
		for range b.N {
			if !SurelyClean(wt, nil) {
				b.Fatal("not clean")
			}
		}
	})
	b.Run("git-status", func(b *testing.B) {
		for range b.N {
			benchGit(b, wt, nil, "status", "--porcelain", "--untracked-files=all")
		}
	})
}
