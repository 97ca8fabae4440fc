package gitx

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// In-process reads agree with git for loose and packed refs, missing refs,
// the main checkout and a linked worktree, attached or detached.
func TestRefsAgreeWithGit(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	common, err := Git(context.Background(), dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		t.Fatal(err)
	}
	one := gitT(t, dir, "rev-parse", "HEAD")
	if h, ok, known := ReadRef(common, "refs/heads/main"); !known || !ok || h != one {
		t.Fatalf("loose: %s %v %v, want %s", h, ok, known, one)
	}
	if got := WorktreeHead(dir); got != one {
		t.Fatalf("main checkout head %q, want %s", got, one)
	}
	wt := filepath.Join(dir, "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	gitT(t, wt, "commit", "-q", "--allow-empty", "-m", "two")
	two := gitT(t, wt, "rev-parse", "HEAD")
	gitT(t, dir, "pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(common, "refs/heads/side")); err == nil {
		t.Fatal("pack-refs left the loose ref")
	}
	if h, ok, known := ReadRef(common, "refs/heads/side"); !known || !ok || h != two {
		t.Fatalf("packed: %s %v %v, want %s", h, ok, known, two)
	}
	if got := WorktreeHead(wt); got != two {
		t.Fatalf("worktree head %q, want %s", got, two)
	}
	if _, ok, known := ReadRef(common, "refs/heads/nothing"); !known || ok {
		t.Fatalf("a missing ref: exists %v known %v", ok, known)
	}
	gitT(t, wt, "checkout", "-q", "--detach", one)
	if got := WorktreeHead(wt); got != one {
		t.Fatalf("detached worktree head %q, want %s", got, one)
	}
	gitT(t, dir, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
	if _, err := os.Stat(filepath.Join(common, "refs/heads/alias")); err == nil {
		if _, _, known := ReadRef(common, "refs/heads/alias"); known {
			t.Fatal("a symbolic ref read as known")
		}
	}
}
