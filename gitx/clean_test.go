package gitx

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// SurelyClean never says clean where git's status lists anything, and says
// clean after the usual agent flow (files written, added, committed) in a
// linked worktree and in a main checkout.
func TestSurelyCleanAgreesWithStatus(t *testing.T) {
	past := time.Now().Add(-time.Hour)
	// settle moves every file's time an hour back and lets git record it,
	// so no entry is racily clean (a timestamp git itself cannot trust).
	settle := func(t *testing.T, wt string) {
		t.Helper()
		filepath.WalkDir(wt, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && d.Type().IsRegular() {
				os.Chtimes(p, past, past)
			}
			if d != nil && d.IsDir() && d.Name() == ".git" {
				return filepath.SkipDir
			}
			return nil
		})
		git(t, wt, "update-index", "-q", "--really-refresh")
	}
	commitFile := func(t *testing.T, wt, rel, text string) {
		t.Helper()
		writeFile(t, filepath.Join(wt, rel), text)
		settle(t, wt)
		git(t, wt, "add", "-A")
		git(t, wt, "commit", "-q", "-m", "work on "+rel)
	}
	newWorktree := func(t *testing.T) (repo, wt string) {
		repo = repoWith(t)
		writeFile(t, filepath.Join(repo, "src", "a.go"), "package a\n")
		writeFile(t, filepath.Join(repo, "tool.sh"), "#!/bin/sh\n")
		os.Chmod(filepath.Join(repo, "tool.sh"), 0o755)
		os.Symlink("README", filepath.Join(repo, "link"))
		git(t, repo, "add", "-A")
		git(t, repo, "commit", "-q", "-m", "more files")
		wt = filepath.Join(repo, ".worktrees", "a")
		git(t, repo, "worktree", "add", "-q", "-b", "agent", wt, "main")
		commitFile(t, wt, "f-1.txt", "task 1\n")
		return repo, wt
	}
	cases := []struct {
		name    string
		change  func(t *testing.T, repo, wt string)
		notWork func(string) bool
		want    bool // what SurelyClean must say (false: git's turn)
	}{
		{"committed work", func(*testing.T, string, string) {}, nil, true},
		{"the main checkout", func(t *testing.T, repo, wt string) {
			commitFile(t, repo, "g.txt", "on main\n")
		}, func(rel string) bool { return rel == ".worktrees/" }, true},
		{"modified", func(t *testing.T, repo, wt string) { writeFile(t, filepath.Join(wt, "README"), "changed\n") }, nil, false},
		{"same size and time, other bytes", func(t *testing.T, repo, wt string) {
			p := filepath.Join(wt, "src", "a.go")
			st, _ := os.Stat(p)
			writeFile(t, p, "package b\n")
			os.Chtimes(p, st.ModTime(), st.ModTime())
		}, nil, false},
		{"staged", func(t *testing.T, repo, wt string) {
			writeFile(t, filepath.Join(wt, "README"), "staged\n")
			settle(t, wt)
			git(t, wt, "add", "README")
		}, nil, false},
		{"commit undone with the index kept", func(t *testing.T, repo, wt string) {
			git(t, wt, "reset", "-q", "--soft", "HEAD~1")
		}, nil, false},
		{"untracked", func(t *testing.T, repo, wt string) { writeFile(t, filepath.Join(wt, "new", "x.txt"), "x\n") }, nil, false},
		{"ignored", func(t *testing.T, repo, wt string) { writeFile(t, filepath.Join(wt, "build.log"), "x\n") }, nil, false},
		{"ignored, accepted as not work", func(t *testing.T, repo, wt string) {
			writeFile(t, filepath.Join(wt, "build.log"), "x\n")
		}, func(rel string) bool { return rel == "build.log" }, true},
		{"deleted", func(t *testing.T, repo, wt string) { os.Remove(filepath.Join(wt, "src", "a.go")) }, nil, false},
		{"made executable", func(t *testing.T, repo, wt string) { os.Chmod(filepath.Join(wt, "README"), 0o755) }, nil, false},
		{"symlink replaced by a file", func(t *testing.T, repo, wt string) {
			os.Remove(filepath.Join(wt, "link"))
			writeFile(t, filepath.Join(wt, "link"), "README")
		}, nil, false},
		{"racily clean", func(t *testing.T, repo, wt string) {
			future := time.Now().Add(time.Hour)
			os.Chtimes(filepath.Join(wt, "README"), future, future)
			git(t, wt, "update-index", "-q", "--really-refresh")
		}, nil, false},
		{"a nested repository", func(t *testing.T, repo, wt string) {
			git(t, wt, "init", "-q", "inner")
		}, func(rel string) bool { return !strings.HasSuffix(rel, "/") }, false},
		{"HEAD packed", func(t *testing.T, repo, wt string) { git(t, repo, "gc", "-q") }, nil, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			repo, wt := newWorktree(t)
			c.change(t, repo, wt)
			dir := wt
			if c.name == "the main checkout" {
				dir = repo
			}
			got := SurelyClean(dir, c.notWork)
			st := git(t, dir, "status", "--porcelain", "--untracked-files=all")
			if got && st != "" {
				t.Fatalf("clean, but git status says:\n%s", st)
			}
			if got != c.want {
				t.Fatalf("SurelyClean %v, want %v (git status %q)", got, c.want, st)
			}
		})
	}
}

func writeFile(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func repoWith(t *testing.T) string {
	dir := repo(t)
	writeFile(t, filepath.Join(dir, "README"), "hello\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "*.log\n/.worktrees/\n")
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "files")
	return dir
}
