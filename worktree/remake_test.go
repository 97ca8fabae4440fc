package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A branch that outlived its worktree (a making stopped after it made the
// branch, undone at the next start) is checked out in-process as it
// stands, as `git worktree add dir branch` does: the old code left it to
// git, a process a killed engine leaves running to go on making the
// worktree the start after it takes for a stopped one. A branch another
// worktree has out is still left to git, which refuses it.
func TestAddNewOnABranchThatOutlivedItsWorktree(t *testing.T) {
	repo := newRepo(t, true)
	rel, branch, err := Name("claude", "ch-4")
	if err != nil {
		t.Fatal(err)
	}
	side := filepath.Join(repo, Dir, "side")
	run(t, repo, "git", "worktree", "add", "-q", "-b", branch, side, "main")
	write(t, filepath.Join(side, "work.txt"), "work\n")
	run(t, side, "git", "add", "work.txt")
	run(t, side, "git", "commit", "-q", "-m", "work")
	tip := run(t, side, "git", "rev-parse", "HEAD")
	abs := filepath.Join(repo, rel)
	m := &Manager{RepoDir: repo, Target: "main"}
	defer m.Close()
	add := func() (string, func(context.Context) error, bool) {
		m.mu.Lock()
		m.reg.Lock()
		defer m.mu.Unlock()
		defer m.reg.Unlock()
		return m.addNew(context.Background(), abs, branch)
	}
	if _, _, ok := add(); ok {
		t.Fatal("made on a branch another worktree has out")
	}
	run(t, repo, "git", "worktree", "remove", side)
	head, fill, ok := add()
	if !ok {
		t.Fatal("left to git")
	}
	if err := fill(context.Background()); err != nil {
		t.Fatal(err)
	}
	if head != tip || read(t, filepath.Join(abs, "work.txt")) != "work\n" {
		t.Fatalf("head %s, want the branch's %s", head, tip)
	}
	if got := run(t, abs, "git", "rev-parse", "HEAD"); got != tip {
		t.Fatalf("HEAD %s, want %s", got, tip)
	}
	if got := run(t, abs, "git", "branch", "--show-current"); got != branch {
		t.Fatalf("on %q", got)
	}
	if st := run(t, abs, "git", "status", "--porcelain"); st != "" {
		t.Fatalf("status %q", st)
	}
}

// What a `git worktree add` stopped during its making leaves unregistered
// — its directory empty, or its .git naming an administrative directory
// the next start removed while that git still ran — is made again; a
// directory holding anything else is still refused.
func TestUnregisteredHalfMadeDirectoryIsMadeAgain(t *testing.T) {
	for _, c := range []struct {
		name   string
		leave  func(t *testing.T, abs, common string)
		refuse bool
	}{
		{"empty", func(*testing.T, string, string) {}, false},
		{".git naming a removed registration", func(t *testing.T, abs, common string) {
			write(t, filepath.Join(abs, ".git"), "gitdir: "+filepath.Join(common, "worktrees", "claude-ch-5")+"\n")
			write(t, filepath.Join(abs, "README.md"), "hello\n")
		}, false},
		{"someone's files", func(t *testing.T, abs, _ string) {
			write(t, filepath.Join(abs, "notes.txt"), "mine\n")
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			repo := newRepo(t, true)
			common, _ := filepath.EvalSymlinks(filepath.Join(repo, ".git"))
			rel, branch, err := Name("claude", "ch-5")
			if err != nil {
				t.Fatal(err)
			}
			abs := filepath.Join(repo, rel)
			if err := os.MkdirAll(abs, 0o755); err != nil {
				t.Fatal(err)
			}
			c.leave(t, abs, common)
			m := &Manager{RepoDir: repo, Target: "main"}
			defer m.Close()
			wt, err := m.Ensure(context.Background(), "claude", "ch-5", Options{})
			if c.refuse {
				if err == nil || !strings.Contains(err.Error(), "not a registered worktree") || read(t, filepath.Join(abs, "notes.txt")) != "mine\n" {
					t.Fatalf("err %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := run(t, wt.Dir, "git", "branch", "--show-current"); got != branch || read(t, filepath.Join(wt.Dir, "README.md")) != "hello\n" {
				t.Fatalf("on %q", got)
			}
			if st := run(t, wt.Dir, "git", "status", "--porcelain"); st != "" {
				t.Fatalf("status %q", st)
			}
		})
	}
}
