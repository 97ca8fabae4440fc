package gitx

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// In random histories (nested directories, executable bits, symbolic
// links, names that sort around "/"), a checkout written in-process gives
// the index git's read-tree gives (same entries), with the commit's tree
// as its cache-tree root, and files git finds unchanged against it.
func TestCheckoutAgreesWithGit(t *testing.T) {
	h := newHistory(t, 7)
	commits := h.build(12)
	o := OpenObjects(h.dir)
	defer o.Close()
	ctx := context.Background()
	for i, c := range commits {
		if i%3 != 0 {
			continue
		}
		co, err := o.PlanCheckout(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(t.TempDir(), "wt")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		raw, err := co.Write(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		agreesWithGit(t, h.dir, c, dir, raw)
	}
}

// agreesWithGit checks the checkout of commit in dir, with index raw,
// against git: the commit's tree as the cache-tree root, the entries git's
// read-tree gives, files git finds unchanged, nothing the tree lacks.
func agreesWithGit(t *testing.T, repo, commit, dir string, raw []byte) {
	t.Helper()
	idx, ok := parseIndex(raw)
	if tree := obGit(t, repo, "rev-parse", commit+"^{tree}"); !ok || idx.tree != tree {
		t.Fatalf("%s: index parsed %v, cache-tree root %q, want %s", commit, ok, idx.tree, tree)
	}
	mine := filepath.Join(t.TempDir(), "index")
	if err := os.WriteFile(mine, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	gits := filepath.Join(t.TempDir(), "index")
	obGitRun(t, repo, []string{"GIT_INDEX_FILE=" + gits}, false, "read-tree", commit)
	got, _ := obGitRun(t, repo, []string{"GIT_INDEX_FILE=" + mine}, false, "ls-files", "-s")
	want, _ := obGitRun(t, repo, []string{"GIT_INDEX_FILE=" + gits}, false, "ls-files", "-s")
	if got != want {
		t.Fatalf("%s: ls-files -s\n%s\ngit's read-tree:\n%s", commit, got, want)
	}
	env := []string{"GIT_INDEX_FILE=" + mine, "GIT_WORK_TREE=" + dir}
	if out, code := obGitRun(t, repo, env, true, "diff-files", "--name-status"); code != 0 || out != "" {
		t.Fatalf("%s: files differ from the index: %q", commit, out)
	}
	if out, _ := obGitRun(t, repo, env, false, "ls-files", "--others", "--directory"); out != "" {
		t.Fatalf("%s: files or directories the tree lacks: %q", commit, out)
	}
}

func TestCheckoutRefusesWhatGitWouldConvert(t *testing.T) {
	for _, n := range []string{".gitattributes", ".GIT", ".git.", "git~1", ".gitmodules", "a\\b", "x\x01"} {
		if plainName(n) {
			t.Errorf("plainName(%q)", n)
		}
	}
	for _, n := range []string{"a", ".github", ".gitignore", "sp é", "x.txt"} {
		if !plainName(n) {
			t.Errorf("!plainName(%q)", n)
		}
	}
	dir := obRepo(t)
	obGit(t, dir, "config", "core.autocrlf", "input")
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	obGit(t, dir, "add", "-A")
	obGit(t, dir, "commit", "-q", "-m", "a")
	o := OpenObjects(dir)
	defer o.Close()
	if _, err := o.PlanCheckout(context.Background(), obGit(t, dir, "rev-parse", "HEAD")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("core.autocrlf input: %v", err)
	}
}

// CreateRef refuses a ref that exists (loose or packed) or clashes with
// one, and its undo leaves no trace.
func TestCreateRefRefusesClashes(t *testing.T) {
	dir := obRepo(t)
	writeFile(t, filepath.Join(dir, "a"), "a\n")
	obGit(t, dir, "add", "-A")
	obGit(t, dir, "commit", "-q", "-m", "a")
	head := obGit(t, dir, "rev-parse", "HEAD")
	obGit(t, dir, "branch", "loose")
	obGit(t, dir, "branch", "packed/x")
	obGit(t, dir, "pack-refs", "--all")
	obGit(t, dir, "branch", "dir/y")
	o := OpenObjects(dir)
	defer o.Close()
	ctx := context.Background()
	for _, n := range []string{"refs/heads/main", "refs/heads/packed/x", "refs/heads/packed", "refs/heads/packed/x/z", "refs/heads/dir"} {
		if _, err := o.CreateRef(ctx, n, head, "m"); !errors.Is(err, ErrRefExists) {
			t.Errorf("CreateRef(%s): %v", n, err)
		}
	}
	undo, err := o.CreateRef(ctx, "refs/heads/new/one", head, "branch: Created from main")
	if err != nil {
		t.Fatal(err)
	}
	if got := obGit(t, dir, "rev-parse", "new/one"); got != head {
		t.Fatalf("new/one at %s", got)
	}
	if got := obGit(t, dir, "reflog", "show", "--format=%gs", "new/one"); got != "branch: Created from main" {
		t.Fatalf("reflog %q", got)
	}
	undo()
	if _, code := obGitRun(t, dir, nil, true, "rev-parse", "--verify", "-q", "new/one"); code == 0 {
		t.Fatal("undo left the ref")
	}
}

// A tree whose files are more than a checkout may hold is git's to check
// out; within the budget the same tree is written, and the store still
// answers the next read (the skipped contents were read past, not left in
// the pipe).
func TestCheckoutLeavesLargeTreesToGit(t *testing.T) {
	dir := obRepo(t)
	writeFile(t, filepath.Join(dir, "a"), string(make([]byte, 3000)))
	writeFile(t, filepath.Join(dir, "b"), string(make([]byte, 1500)))
	obGit(t, dir, "add", "-A")
	obGit(t, dir, "commit", "-q", "-m", "big")
	head := obGit(t, dir, "rev-parse", "HEAD")
	o := OpenObjects(dir)
	defer o.Close()
	ctx := context.Background()
	defer func(old int64) { maxCheckoutBytes = old }(maxCheckoutBytes)
	for _, tc := range []struct {
		budget int64
		ok     bool
	}{{4000, false}, {2999, false}, {4500, true}} {
		maxCheckoutBytes = tc.budget
		co, err := o.PlanCheckout(ctx, head)
		if err != nil {
			t.Fatal(err)
		}
		wt := filepath.Join(t.TempDir(), "wt")
		if err := os.Mkdir(wt, 0o755); err != nil {
			t.Fatal(err)
		}
		_, err = co.Write(ctx, wt)
		if tc.ok != (err == nil) || !tc.ok && !errors.Is(err, ErrUnsupported) {
			t.Fatalf("budget %d: %v", tc.budget, err)
		}
		if b, err := o.FileAt(ctx, head, "b"); err != nil || len(b) != 1500 {
			t.Fatalf("budget %d: the store's next read: %d bytes, %v", tc.budget, len(b), err)
		}
	}
}

// makeDirs never goes through a symbolic link: on a filesystem that folds
// case a tree's link "A" and its file "a/f" meet, and the file would be
// written where the link points.
func TestCheckoutDirsNotThroughLinks(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	made := map[string]bool{}
	if err := makeDirs(dir, "a/b", made); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("through a link: %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Fatalf("made %v where the link points", ents)
	}
	if err := makeDirs(dir, "c/d/e", made); err != nil || !made["c/d"] {
		t.Fatalf("plain dirs: %v %v", err, made)
	}
	if fi, err := os.Lstat(filepath.Join(dir, "c", "d", "e")); err != nil || !fi.IsDir() {
		t.Fatalf("c/d/e: %v", err)
	}
}

// Over a checkout of one commit, WriteOver leaves the checkout of another
// (files switching between file and directory, modes, links, deletions,
// a file changed since its index was written):
// the index git's read-tree gives, files git finds unchanged, nothing the
// tree lacks.
func TestCheckoutWriteOverAgreesWithGit(t *testing.T) {
	h := newHistory(t, 11)
	commits := h.build(16)
	o := OpenObjects(h.dir)
	defer o.Close()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "wt")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	prev, err := o.PlanCheckout(ctx, commits[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := prev.Write(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range commits[1:] {
		co, err := o.PlanCheckout(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		// A file changed behind the index's back is written again.
		for _, f := range prev.files {
			if f.mode == 0o100644 {
				if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f.path)), []byte("tampered\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				break
			}
		}
		if raw, err = co.WriteOver(ctx, dir, prev, raw); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		prev = co
		agreesWithGit(t, h.dir, c, dir, raw)
	}
}

func TestReusable(t *testing.T) {
	head := func(magic string, version, n uint32) []byte {
		b := []byte(magic)
		b = binary.BigEndian.AppendUint32(b, version)
		return binary.BigEndian.AppendUint32(b, n)
	}
	for _, tc := range []struct {
		index []byte
		want  bool
	}{
		{head("DIRC", 2, 3), true},
		{head("DIRC", 2, maxCheckoutFiles), true},
		{head("DIRC", 2, maxCheckoutFiles+1), false}, // git's to check out: no use kept
		{head("DIRC", 4, 3), false},
		{head("DIRX", 2, 3), false},
		{[]byte("DIRC"), false},
		{nil, false},
	} {
		if got := Reusable(tc.index); got != tc.want {
			t.Errorf("Reusable(% x) = %v", tc.index, got)
		}
	}
}
