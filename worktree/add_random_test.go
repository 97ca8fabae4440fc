package worktree

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"testing"
)

// TestAddNewCommitsLikeGit: on random trees (names that sort around "/",
// nested directories, executables), the same random edits committed in a
// worktree made in-process and in one git made give the same tree. A
// wrong cache-tree entry (an id or a count) would give a different one,
// since git takes an unchanged directory's tree from it.
func TestAddNewCommitsLikeGit(t *testing.T) {
	names := []string{"a", "a.txt", "a-b", "a0", "b", "z", "A", "é"}
	for seed := int64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewSource(seed))
			repo := newRepo(t, true)
			randPath := func() string {
				p := names[r.Intn(len(names))]
				for d := r.Intn(4); d > 0; d-- {
					p = filepath.Join(p, names[r.Intn(len(names))])
				}
				return p + ".f"
			}
			for i := 0; i < 40; i++ {
				p := filepath.Join(repo, randPath())
				write(t, p, fmt.Sprintf("file %d\n", i))
				if r.Intn(5) == 0 {
					if err := os.Chmod(p, 0o755); err != nil {
						t.Fatal(err)
					}
				}
			}
			run(t, repo, "git", "add", "-A")
			run(t, repo, "git", "commit", "-q", "-m", "tree")
			m := &Manager{RepoDir: repo, Target: "main"}
			defer m.Close()
			wt, err := m.Ensure(context.Background(), "claude", fmt.Sprintf("ch-%d", seed), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if _, half := halfMade(filepath.Join(repo, ".git"), wt.Dir); half {
				t.Fatal("left half made")
			}
			byGit := filepath.Join(repo, ".worktrees", "by-git")
			run(t, repo, "git", "worktree", "add", "-q", "-b", "by-git", byGit, "main")
			files := run(t, repo, "git", "-c", "core.quotepath=off", "ls-files")
			tracked := splitLines(files)
			// The same edits in both: change, delete, add.
			edits := r.Intn(4) + 1
			for e := 0; e < edits; e++ {
				var rel, body string
				del := false
				switch r.Intn(3) {
				case 0:
					rel, body = tracked[r.Intn(len(tracked))], fmt.Sprintf("changed %d\n", e)
				case 1:
					rel, del = tracked[r.Intn(len(tracked))], true
				default:
					rel, body = randPath(), fmt.Sprintf("new %d\n", e)
				}
				for _, dir := range []string{wt.Dir, byGit} {
					p := filepath.Join(dir, rel)
					if del {
						_ = os.Remove(p)
						continue
					}
					write(t, p, body)
				}
			}
			var trees [2]string
			for i, dir := range []string{wt.Dir, byGit} {
				run(t, dir, "git", "add", "-A")
				run(t, dir, "git", "commit", "-q", "--allow-empty", "-m", "edit")
				trees[i] = run(t, dir, "git", "rev-parse", "HEAD^{tree}")
			}
			if trees[0] != trees[1] {
				t.Fatalf("tree %s from the in-process worktree, %s from git's:\n%s",
					trees[0], trees[1], run(t, repo, "git", "diff", "--stat", trees[1], trees[0]))
			}
			run(t, repo, "git", "fsck", "--no-progress")
		})
	}
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '\n' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}
