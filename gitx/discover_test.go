package gitx

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	return obGit(t, dir, append([]string{"-c", "protocol.file.allow=always"}, args...)...)
}

func repo(t *testing.T) string {
	t.Helper()
	dir := obRepo(t)
	git(t, dir, "commit", "-q", "--allow-empty", "-m", "init")
	return dir
}

// gitCommon is git's own answer, "" outside a repository.
func gitCommon(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return ""
	}
	return filepath.Clean(strings.TrimSpace(string(out)))
}

// The file-reading discovery gives git's answer wherever it answers at all,
// and CommonDir (which asks git otherwise) always does.
func TestCommonDirMatchesGit(t *testing.T) {
	main := repo(t)
	sub := filepath.Join(main, "a", "b")
	os.MkdirAll(sub, 0o755)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, main, "worktree", "add", "-q", "-b", "w", wt)
	wtSub := filepath.Join(wt, "x")
	os.MkdirAll(wtSub, 0o755)
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(sub, link); err != nil {
		t.Fatal(err)
	}
	// A submodule's .git file points at a gitdir without commondir.
	lib := repo(t)
	git(t, main, "submodule", "add", "-q", lib, "lib")
	outside := t.TempDir()

	for _, c := range []struct {
		name, dir string
		fast      bool
	}{
		{"root", main, true},
		{"subdir", sub, true},
		{"linked worktree", wtSub, true},
		{"through a symlink", link, true},
		{"outside", outside, gitCommon(t, outside) == ""},
		{"submodule", filepath.Join(main, "lib"), false},
		{"inside .git", filepath.Join(main, ".git", "refs"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := gitCommon(t, c.dir)
			got, ok := fastCommonDir(c.dir)
			if ok != c.fast {
				t.Fatalf("fast path ok = %v, want %v", ok, c.fast)
			}
			if ok && got != want {
				t.Errorf("fast path %q, git %q", got, want)
			}
			if got, err := CommonDir(context.Background(), c.dir); err != nil || got != want {
				t.Errorf("CommonDir %q %v, git %q", got, err, want)
			}
		})
	}
}

func TestCommonDirLeavesOverridesToGit(t *testing.T) {
	main := repo(t)
	t.Setenv("GIT_DIR", filepath.Join(main, ".git"))
	if _, ok := fastCommonDir(t.TempDir()); ok {
		t.Error("GIT_DIR set but the fast path answered")
	}
}

func TestMainRootFromWorktree(t *testing.T) {
	main := repo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, main, "worktree", "add", "-q", "-b", "w", wt)
	for _, d := range []string{main, wt} {
		if got, err := MainRoot(context.Background(), d); err != nil || got != main {
			t.Errorf("MainRoot(%s) = %q %v, want %q", d, got, err, main)
		}
	}
	outside := t.TempDir()
	if _, err := MainRoot(context.Background(), outside); gitCommon(t, outside) == "" && !errors.Is(err, ErrNotRepo) {
		t.Errorf("outside a repository: %v", err)
	}
}

func TestMainRootBareRepository(t *testing.T) {
	dir := t.TempDir()
	git(t, dir, "init", "-q", "--bare", "b.git")
	_, err := MainRoot(context.Background(), filepath.Join(dir, "b.git"))
	if !errors.Is(err, ErrBare) || !strings.Contains(err.Error(), "git clone") {
		t.Fatalf("got %v", err)
	}
}

func TestNoGitOnPath(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	if err := LookGit(); !errors.Is(err, ErrNoGit) {
		t.Fatalf("LookGit: %v", err)
	}
	if _, err := CurrentBranch(context.Background(), t.TempDir()); err == nil {
		t.Fatal("CurrentBranch without git reported no error (would read as a detached HEAD)")
	}
}
