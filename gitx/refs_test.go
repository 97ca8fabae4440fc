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

// A reftable repository keeps no loose refs and no packed-refs: the
// in-process reader must leave the answer to git instead of calling every
// ref missing. The local git may be too old to create one, so the
// extension is written by hand (and the reftable/ directory alone is
// recognised too).
func TestReadRefDefersOnReftable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		dir    bool
		known  bool
	}{
		{"files", "[core]\n\trepositoryformatversion = 1\n[extensions]\n\trefStorage = files\n", false, true},
		{"no extension", "[core]\n\trepositoryformatversion = 0\n", false, true},
		{"reftable", "[core]\n\trepositoryformatversion = 1\n[extensions]\n\trefStorage = reftable\n", false, false},
		{"reftable capitals", "[Extensions]\n\tREFSTORAGE = reftable\n", false, false},
		{"reftable directory", "[core]\n\tbare = false\n", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			gitT(t, dir, "init", "-q", "-b", "main")
			gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
			common := filepath.Join(dir, ".git")
			gitT(t, dir, "pack-refs", "--all")
			if err := os.WriteFile(filepath.Join(common, "config"), []byte(tc.config), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.dir {
				if err := os.Mkdir(filepath.Join(common, "reftable"), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, ref := range []string{"refs/chorus/candidate/x", "refs/heads/nope"} {
				if h, ok, known := ReadRef(common, ref); ok || known != tc.known {
					t.Errorf("%s: ReadRef = %q, exists %v, known %v; want missing known=%v", ref, h, ok, known, tc.known)
				}
			}
			if err := os.Remove(filepath.Join(common, "packed-refs")); err != nil {
				t.Fatal(err)
			}
			if _, ok, known := ReadRef(common, "refs/heads/nope"); ok || known != tc.known {
				t.Errorf("no packed-refs: exists %v, known %v; want known=%v", ok, known, tc.known)
			}
		})
	}
}

// NoRefsUnder says "none" only when git lists none: loose and packed refs
// under the prefix, from the main checkout and a linked worktree, a
// neighbouring namespace, and a reftable repository (never "none").
func TestNoRefsUnderAgreesWithGit(t *testing.T) {
	dir := t.TempDir()
	gitT(t, dir, "init", "-q", "-b", "main")
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	wt := filepath.Join(dir, "wt")
	gitT(t, dir, "worktree", "add", "-q", "-b", "side", wt)
	const prefix = "refs/chorus/kept/"
	check := func(what string, wantNone bool) {
		t.Helper()
		listed := gitT(t, dir, "for-each-ref", prefix) != ""
		if listed == wantNone {
			t.Fatalf("%s: git lists %v, the test wants none=%v", what, listed, wantNone)
		}
		for _, d := range []string{dir, wt} {
			if got := NoRefsUnder(d, prefix); got != wantNone {
				t.Errorf("%s, from %s: NoRefsUnder = %v, want %v", what, d, got, wantNone)
			}
		}
	}
	check("fresh", true)
	gitT(t, dir, "update-ref", "refs/chorus/keptother/a", "HEAD")
	gitT(t, dir, "update-ref", "refs/chorus/kept2", "HEAD")
	check("neighbours only", true)
	gitT(t, wt, "update-ref", "refs/chorus/kept/t1/x-uncommitted", "HEAD")
	check("loose", false)
	gitT(t, dir, "pack-refs", "--all")
	check("packed", false)
	gitT(t, dir, "update-ref", "-d", "refs/chorus/kept/t1/x-uncommitted")
	if _, err := os.Stat(filepath.Join(dir, ".git", "refs", "chorus", "kept")); err == nil {
		t.Log("git left the empty directory; NoRefsUnder asks git then")
	} else {
		check("deleted", true)
	}
	if NoRefsUnder(dir, "refs/chorus/kept") || NoRefsUnder(dir, "chorus/kept/") {
		t.Error("a prefix that is not a refs/ directory answered")
	}
	cfg := filepath.Join(dir, ".git", "config")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg, append(b, "[extensions]\n\trefStorage = reftable\n"...), 0o644); err != nil {
		t.Fatal(err)
	}
	if NoRefsUnder(dir, prefix) {
		t.Error("a reftable repository answered from files")
	}
}
