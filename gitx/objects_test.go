package gitx

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// obGit runs git in dir with extra environment; it fails the test on an
// error unless allowFail, and returns stdout and the exit code.
func obGitRun(tb testing.TB, dir string, env []string, allowFail bool, args ...string) (string, int) {
	tb.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=T", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=T", "GIT_COMMITTER_EMAIL=t@example.com", "LC_ALL=C")
	cmd.Env = append(cmd.Env, env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	code := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !allowFail {
			tb.Fatalf("git %v: %v %s", args, err, stderr.String())
		}
		code = ee.ExitCode()
	}
	return string(out), code
}

func obGit(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, _ := obGitRun(tb, dir, nil, false, args...)
	return strings.TrimSpace(out)
}

func obRepo(tb testing.TB, args ...string) string {
	tb.Helper()
	dir, err := filepath.EvalSymlinks(tb.TempDir())
	if err != nil {
		tb.Fatal(err)
	}
	obGit(tb, dir, append([]string{"init", "-q", "-b", "main"}, args...)...)
	obGit(tb, dir, "config", "commit.gpgsign", "false")
	return dir
}

// history builds random commits in a repository's working tree: nested
// directories, deletions, executable bits, symlinks, file/directory
// switches, and dates that sometimes go backwards.
type history struct {
	tb   testing.TB
	dir  string
	rng  *rand.Rand
	date int64
	n    int
}

var (
	histDirs  = []string{"", "a", "a/b", "a/b/c", "d", "q", "e/f", "x"}
	histFiles = []string{"f0", "f1", "f2", "f3", "f4", "f5", "x.txt", "x-y", "q", "sp é"}
)

func (h *history) path(files []string) string {
	d := histDirs[h.rng.Intn(len(histDirs))]
	f := files[h.rng.Intn(len(files))]
	if d == "" {
		return f
	}
	return d + "/" + f
}

// clear removes whatever is in the way of a file at rel.
func (h *history) clear(rel string) {
	parts := strings.Split(rel, "/")
	for i := 1; i < len(parts); i++ {
		p := filepath.Join(h.dir, filepath.Join(parts[:i]...))
		if st, err := os.Lstat(p); err == nil && !st.IsDir() {
			os.Remove(p)
		}
	}
	p := filepath.Join(h.dir, rel)
	if st, err := os.Lstat(p); err == nil && st.IsDir() {
		os.RemoveAll(p)
	}
}

// op makes one random change to a path from files; switches allows file
// and directory swaps.
func (h *history) op(files []string, switches bool) {
	rel := h.path(files)
	p := filepath.Join(h.dir, rel)
	if !switches {
		if st, err := os.Lstat(p); err == nil && st.IsDir() {
			return
		}
		for d := filepath.Dir(p); d != h.dir; d = filepath.Dir(d) {
			if st, err := os.Lstat(d); err == nil && !st.IsDir() {
				return
			}
		}
	}
	switch k := h.rng.Intn(10); {
	case k < 5:
		h.clear(rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.tb.Fatal(err)
		}
		os.Remove(p) // a symlink is replaced, not followed
		if err := os.WriteFile(p, []byte(fmt.Sprintf("%s %d\n", rel, h.rng.Intn(1000))), 0o644); err != nil {
			h.tb.Fatal(err)
		}
	case k < 7:
		os.Remove(p)
	case k < 8:
		if st, err := os.Lstat(p); err == nil && st.Mode().IsRegular() {
			os.Chmod(p, st.Mode().Perm()^0o111)
		}
	case k < 9:
		h.clear(rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			h.tb.Fatal(err)
		}
		os.Remove(p)
		if err := os.Symlink(fmt.Sprintf("target-%d", h.rng.Intn(5)), p); err != nil {
			h.tb.Fatal(err)
		}
	default:
		if switches {
			os.RemoveAll(filepath.Join(h.dir, histDirs[1+h.rng.Intn(len(histDirs)-1)]))
		}
	}
}

func (h *history) commit(files []string, ops int, switches bool) string {
	for i := 0; i < ops; i++ {
		h.op(files, switches)
	}
	h.n++
	h.date += int64(h.rng.Intn(5)) - 1 // sometimes older than its parent
	d := fmt.Sprintf("%d +0000", h.date)
	obGit(h.tb, h.dir, "add", "-A")
	obGitRun(h.tb, h.dir, []string{"GIT_AUTHOR_DATE=" + d, "GIT_COMMITTER_DATE=" + d}, false,
		"commit", "-q", "--allow-empty", "--no-verify", "-m", fmt.Sprintf("c%d", h.n))
	return obGit(h.tb, h.dir, "rev-parse", "HEAD")
}

func newHistory(tb testing.TB, seed int64) *history {
	h := &history{tb: tb, dir: obRepo(tb), rng: rand.New(rand.NewSource(seed)), date: 1_700_000_000}
	h.commit(histFiles, 12, true)
	return h
}

// build makes branches off random commits with commits and merges.
func (h *history) build(commits int) []string {
	branches := []string{"main"}
	var all []string
	for i := 0; i < commits; i++ {
		switch r := h.rng.Intn(10); {
		case r < 2 && len(all) > 0:
			name := fmt.Sprintf("b%d", i)
			obGit(h.tb, h.dir, "checkout", "-q", "-f", "-b", name, all[h.rng.Intn(len(all))])
			obGit(h.tb, h.dir, "clean", "-q", "-fdx")
			branches = append(branches, name)
		case r < 4 && len(branches) > 1:
			other := branches[h.rng.Intn(len(branches))]
			// -s ours always succeeds: the shape of history is what
			// counts here.
			args := []string{"merge", "-q", "--no-edit", "--no-ff", other}
			if h.rng.Intn(2) == 0 {
				args = append(args, "-s", "ours")
			}
			_, code := obGitRun(h.tb, h.dir, []string{fmt.Sprintf("GIT_COMMITTER_DATE=%d +0000", h.date), fmt.Sprintf("GIT_AUTHOR_DATE=%d +0000", h.date)},
				true, args...)
			if code != 0 {
				obGitRun(h.tb, h.dir, nil, true, "merge", "--abort")
				obGit(h.tb, h.dir, "reset", "-q", "--hard")
				obGit(h.tb, h.dir, "clean", "-q", "-fdx")
			} else {
				all = append(all, obGit(h.tb, h.dir, "rev-parse", "HEAD"))
			}
			continue
		case r < 5:
			b := branches[h.rng.Intn(len(branches))]
			obGit(h.tb, h.dir, "checkout", "-q", "-f", b)
			obGit(h.tb, h.dir, "clean", "-q", "-fdx")
		}
		all = append(all, h.commit(histFiles, 1+h.rng.Intn(4), true))
	}
	return all
}

// In random histories the store gives git's answers for tree diffs,
// ancestry and merge bases.
func TestObjectStoreWalksAgreeWithGit(t *testing.T) {
	ctx := context.Background()
	for seed := int64(1); seed <= 2; seed++ {
		h := newHistory(t, seed)
		h.build(40)
		// A criss-cross: two merges of the same two commits, crosswise.
		obGit(t, h.dir, "checkout", "-q", "-f", "-b", "cross1", "main")
		c1 := h.commit([]string{"f0"}, 1, false)
		obGit(t, h.dir, "checkout", "-q", "-f", "-b", "cross2", "main")
		c2 := h.commit([]string{"f1"}, 1, false)
		obGit(t, h.dir, "merge", "-q", "--no-edit", "-s", "ours", c1)
		obGit(t, h.dir, "checkout", "-q", "-f", "cross1")
		obGit(t, h.dir, "merge", "-q", "--no-edit", "-s", "ours", c2)
		trees, parents := map[string]string{}, map[string][]string{}
		var all []string
		for _, l := range strings.Split(obGit(t, h.dir, "log", "--all", "--format=%H %T %P"), "\n") {
			f := strings.Fields(l)
			all = append(all, f[0])
			trees[f[0]], parents[f[0]] = f[1], f[2:]
		}
		o := OpenObjects(h.dir)
		defer o.Close()
		multi, single, ancestors := 0, 0, 0
		for i := 0; i < 32; i++ {
			a, b := all[h.rng.Intn(len(all))], all[h.rng.Intn(len(all))]
			if i == 0 {
				a, b = obGit(t, h.dir, "rev-parse", "cross1"), obGit(t, h.dir, "rev-parse", "cross2")
			}

			out, _ := obGitRun(t, h.dir, nil, false, "diff", "--name-only", "-z", "--no-renames", a, b)
			want := strings.Split(strings.TrimSuffix(out, "\x00"), "\x00")
			if out == "" {
				want = []string{}
			}
			got, err := o.DiffNames(ctx, a, b)
			if err != nil {
				t.Fatalf("seed %d: DiffNames %s %s: %v", seed, a, b, err)
			}
			if !slices.Equal(got, want) {
				t.Fatalf("seed %d: DiffNames %s %s:\n got %q\nwant %q", seed, a, b, got, want)
			}
			// trees as well as commits
			ta, tb := trees[a], trees[b]
			if got, err := o.DiffNames(ctx, ta, tb); err != nil || !slices.Equal(got, want) {
				t.Fatalf("seed %d: DiffNames of trees: %q %v, want %q", seed, got, err, want)
			}

			for _, p := range [][2]string{{a, b}, {b, a}} {
				_, code := obGitRun(t, h.dir, nil, true, "merge-base", "--is-ancestor", p[0], p[1])
				anc, err := o.IsAncestor(ctx, p[0], p[1])
				if err != nil {
					t.Fatal(err)
				}
				if anc {
					ancestors++
				}
				if anc != (code == 0) {
					t.Fatalf("seed %d: IsAncestor %s %s = %v, git exit %d", seed, p[0], p[1], anc, code)
				}
			}

			outAll, _ := obGitRun(t, h.dir, nil, true, "merge-base", "--all", a, b)
			bases := strings.Fields(outAll)
			mb, err := o.MergeBase(ctx, a, b)
			switch {
			case len(bases) == 1:
				single++
				if err != nil || mb != bases[0] {
					t.Fatalf("seed %d: MergeBase %s %s = %s %v, want %s", seed, a, b, mb, err, bases[0])
				}
			case len(bases) == 0:
				if !errors.Is(err, ErrNoMergeBase) {
					t.Fatalf("MergeBase of unrelated commits: %s %v", mb, err)
				}
			default:
				multi++
				if !errors.Is(err, ErrUnsupported) {
					t.Fatalf("seed %d: MergeBase %s %s with bases %v = %s %v, want ErrUnsupported", seed, a, b, bases, mb, err)
				}
			}

			c, err := o.Commit(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			wantParents := parents[a]
			if c.Tree != trees[a] || !slices.Equal(c.Parents, wantParents) {
				t.Fatalf("Commit %s = %+v, want parents %v", a, c, wantParents)
			}
		}
		t.Logf("seed %d: %d pairs with one merge base, %d criss-cross; %d ordered pairs related by ancestry", seed, single, multi, ancestors)
		if single == 0 || multi == 0 {
			t.Fatalf("seed %d: %d pairs with one merge base, %d with several; the history generator is broken", seed, single, multi)
		}
	}
}

// Tree gives git's ls-tree entries.
func TestObjectStoreTreeMatchesLsTree(t *testing.T) {
	h := newHistory(t, 7)
	head := h.commit(histFiles, 10, true)
	o := OpenObjects(h.dir)
	defer o.Close()
	ctx := context.Background()
	var walk func(tree, prefix string)
	walk = func(tree, prefix string) {
		got, err := o.Tree(ctx, tree)
		if err != nil {
			t.Fatal(err)
		}
		var lines []string
		for _, e := range got {
			lines = append(lines, fmt.Sprintf("%06s %s\t%s", e.Mode, e.ID, e.Name))
			if e.IsTree() {
				walk(e.ID, prefix+e.Name+"/")
			}
		}
		var want []string
		for _, l := range strings.Split(obGit(t, h.dir, "ls-tree", "-z", tree), "\x00") {
			if l == "" {
				continue
			}
			f := strings.Fields(l)
			name := l[strings.IndexByte(l, '\t')+1:]
			want = append(want, fmt.Sprintf("%s %s\t%s", f[0], f[2], name))
		}
		if !slices.Equal(lines, want) {
			t.Fatalf("tree %s:\n got %q\nwant %q", prefix, lines, want)
		}
	}
	c, err := o.Commit(ctx, head)
	if err != nil {
		t.Fatal(err)
	}
	walk(c.Tree, "")
}

// MergeTrees gives git merge-tree's tree whenever it says ok, and says ok
// for almost every pair of branches whose changes are disjoint.
func TestMergeTreesAgreesWithMergeTree(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 11)
	base := h.commit(histFiles, 6, true)
	o := OpenObjects(h.dir)
	defer o.Close()
	oursFiles := []string{"f0", "f1", "f2", "x.txt"}
	theirsFiles := []string{"f3", "f4", "f5", "x-y"}
	var disjoint, disjointOK, overlap, overlapOK int
	for i := 0; i < 45; i++ {
		overlapping := i%3 == 2
		from := base
		var sides [2]string
		for s := 0; s < 2; s++ {
			obGit(t, h.dir, "checkout", "-q", "-f", "--detach", from)
			obGit(t, h.dir, "clean", "-q", "-fdx")
			files := oursFiles
			if s == 1 {
				files = theirsFiles
			}
			if overlapping {
				files = histFiles
			}
			for c := 0; c < 1+h.rng.Intn(2); c++ {
				sides[s] = h.commit(files, 1+h.rng.Intn(4), overlapping)
			}
		}
		if i%10 == 9 {
			// a .gitattributes change on one side always goes to git
			obGit(t, h.dir, "checkout", "-q", "-f", "--detach", sides[0])
			os.WriteFile(filepath.Join(h.dir, ".gitattributes"), []byte(fmt.Sprintf("*.txt text %d\n", i)), 0o644)
			sides[0] = h.commit(nil, 0, false)
		}
		mb := obGit(t, h.dir, "merge-base", sides[0], sides[1])
		out, code := obGitRun(t, h.dir, nil, true, "merge-tree", "--write-tree", sides[0], sides[1])
		wantTree := strings.SplitN(out, "\n", 2)[0]
		tree, ok, err := o.MergeTrees(ctx, mb, sides[0], sides[1])
		if err != nil {
			t.Fatalf("pair %d: %v", i, err)
		}
		if i%10 == 9 && ok {
			t.Fatalf("pair %d: a .gitattributes change was merged in-process", i)
		}
		if ok && (code != 0 || tree != wantTree) {
			t.Fatalf("pair %d (overlapping %v): MergeTrees = %s, git merge-tree = %s (exit %d)\n%s", i, overlapping, tree, wantTree, code, out)
		}
		if overlapping {
			overlap++
			if ok {
				overlapOK++
			}
		} else if i%10 != 9 {
			disjoint++
			if ok {
				disjointOK++
			} else {
				t.Logf("pair %d not in-process: ours %q theirs %q", i, obGit(t, h.dir, "diff", "--name-status", mb, sides[0]), obGit(t, h.dir, "diff", "--name-status", mb, sides[1]))
			}
		}
	}
	t.Logf("disjoint pairs merged in-process: %d of %d; overlapping: %d of %d", disjointOK, disjoint, overlapOK, overlap)
	if disjointOK*10 < disjoint*9 {
		t.Fatalf("only %d of %d disjoint pairs merged in-process", disjointOK, disjoint)
	}
	out, code := obGitRun(t, h.dir, nil, true, "fsck", "--strict", "--no-dangling")
	if code != 0 {
		t.Fatalf("git fsck after writes: exit %d\n%s", code, out)
	}
}

// Directories emptied by the two sides together disappear, as with git.
func TestMergeTreesDropsEmptiedDirectory(t *testing.T) {
	ctx := context.Background()
	dir := obRepo(t)
	os.MkdirAll(filepath.Join(dir, "d/e"), 0o755)
	os.WriteFile(filepath.Join(dir, "d/e/a"), []byte("a\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "d/e/b"), []byte("b\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "top"), []byte("t\n"), 0o644)
	obGit(t, dir, "add", "-A")
	obGit(t, dir, "commit", "-q", "-m", "base")
	base := obGit(t, dir, "rev-parse", "HEAD")
	obGit(t, dir, "rm", "-q", "d/e/a")
	obGit(t, dir, "commit", "-q", "-m", "ours")
	ours := obGit(t, dir, "rev-parse", "HEAD")
	obGit(t, dir, "checkout", "-q", base)
	obGit(t, dir, "rm", "-q", "d/e/b")
	obGit(t, dir, "commit", "-q", "-m", "theirs")
	theirs := obGit(t, dir, "rev-parse", "HEAD")
	o := OpenObjects(dir)
	defer o.Close()
	tree, ok, err := o.MergeTrees(ctx, base, ours, theirs)
	want := strings.SplitN(obGit(t, dir, "merge-tree", "--write-tree", ours, theirs), "\n", 2)[0]
	if err != nil || !ok || tree != want {
		t.Fatalf("MergeTrees = %s %v %v, want %s", tree, ok, err, want)
	}
	// The same change on both sides is git's to decide.
	if _, ok, err := o.MergeTrees(ctx, base, ours, ours); ok || err != nil {
		t.Fatalf("identical changes merged in-process: %v %v", ok, err)
	}
}

// WriteCommit writes the bytes git commit-tree writes: same ids.
func TestWriteCommitMatchesCommitTree(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 5)
	p1 := h.commit(histFiles, 3, true)
	p2 := h.commit(histFiles, 3, true)
	tree := obGit(t, h.dir, "rev-parse", p2+"^{tree}")
	t.Setenv("GIT_AUTHOR_NAME", "Ann Author")
	t.Setenv("GIT_AUTHOR_EMAIL", "ann@example.com")
	t.Setenv("GIT_COMMITTER_NAME", "Carl Committer")
	t.Setenv("GIT_COMMITTER_EMAIL", "carl@example.com")
	t.Setenv("GIT_AUTHOR_DATE", "1700000000 +0130")
	t.Setenv("GIT_COMMITTER_DATE", "1700000100 -0800")
	o := OpenObjects(h.dir)
	defer o.Close()
	author, committer, err := o.Ident(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if author.Name != "Ann Author" || committer.Email != "carl@example.com" {
		t.Fatalf("Ident = %+v %+v", author, committer)
	}
	cases := []struct {
		parents []string
		msgs    []string
	}{
		{nil, []string{"one"}},
		{[]string{p1}, []string{"subject", "body line\nsecond"}},
		{[]string{p1, p2}, []string{"merge x\n", "", "Trailer: y\n\n"}},
		{[]string{p1, p1, p2}, []string{"héllo ✓"}},
		{[]string{p2, p1}, []string{"", "after empty"}},
	}
	for i, c := range cases {
		args := []string{"commit-tree", tree}
		for _, p := range c.parents {
			args = append(args, "-p", p)
		}
		for _, m := range c.msgs {
			args = append(args, "-m", m)
		}
		want, _ := obGitRun(t, h.dir, []string{"GIT_AUTHOR_NAME=Ann Author", "GIT_AUTHOR_EMAIL=ann@example.com",
			"GIT_COMMITTER_NAME=Carl Committer", "GIT_COMMITTER_EMAIL=carl@example.com"}, false, args...)
		want = strings.TrimSpace(want)
		got, err := o.WriteCommit(ctx, NewCommit{Tree: tree, Parents: c.parents, Messages: c.msgs,
			Author: author, Committer: committer, Durable: i%2 == 0})
		if err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("case %d: WriteCommit = %s, git commit-tree = %s\n%s", i, got, want, obGit(t, h.dir, "cat-file", "-p", want))
		}
	}
	// A new object (not written by git first) reads back through git.
	got, err := o.WriteCommit(ctx, NewCommit{Tree: tree, Parents: []string{p1}, Messages: []string{"only here"},
		Author: Ident{Name: "Z", Email: "z@z", When: time.Unix(1600000000, 0).UTC()}, Committer: committer})
	if err != nil {
		t.Fatal(err)
	}
	if typ := obGit(t, h.dir, "cat-file", "-t", got); typ != "commit" {
		t.Fatalf("written object type %q", typ)
	}
	st, err := os.Stat(filepath.Join(h.dir, ".git/objects", got[:2], got[2:]))
	if err != nil || st.Mode().Perm() != 0o444 {
		t.Fatalf("loose object: %v %v", st, err)
	}
	// Without a fixed date the time of the write is recorded, in the
	// local zone as git records it.
	before := time.Now().Unix()
	got, err = o.WriteCommit(ctx, NewCommit{Tree: tree, Messages: []string{"now"},
		Author: Ident{Name: "N", Email: "n@n"}, Committer: Ident{Name: "N", Email: "n@n"}})
	if err != nil {
		t.Fatal(err)
	}
	var secs int64
	var zone string
	line := obGit(t, h.dir, "log", "-1", "--format=%ct %cd", "--date=format:%z", got)
	if _, err := fmt.Sscanf(line, "%d %s", &secs, &zone); err != nil || secs < before || secs > time.Now().Unix() || zone != time.Now().Format("-0700") {
		t.Fatalf("commit written now has date %q (want %d.. in zone %s)", line, before, time.Now().Format("-0700"))
	}
	if _, err := o.WriteCommit(ctx, NewCommit{Tree: p1, Messages: []string{"x"}, Author: author, Committer: committer}); err == nil {
		t.Fatal("a commit id accepted as a tree")
	}
	if _, err := o.WriteCommit(ctx, NewCommit{Tree: tree, Messages: []string{"x"}, Author: Ident{Name: "a <b>", Email: "c"}, Committer: committer}); err == nil {
		t.Fatal("an identity git would rewrite accepted")
	}
	out, code := obGitRun(t, h.dir, nil, true, "fsck", "--strict")
	if code != 0 {
		t.Fatalf("git fsck: %s", out)
	}
}

// Idents git would sign, sha256 repositories and unusual object
// directories are refused, so callers keep running git.
func TestObjectStoreUnsupported(t *testing.T) {
	ctx := context.Background()
	dir, head := oneCommitRepo(t)
	tree := obGit(t, dir, "rev-parse", "HEAD^{tree}")
	obGit(t, dir, "config", "commit.gpgSign", "true")
	o := OpenObjects(dir)
	if _, _, err := o.Ident(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Ident with commit.gpgSign: %v", err)
	}
	if _, err := o.WriteCommit(ctx, NewCommit{Tree: tree, Messages: []string{"m"}, Author: Ident{Name: "a", Email: "b"}, Committer: Ident{Name: "a", Email: "b"}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("WriteCommit with commit.gpgSign: %v", err)
	}
	o.Close()
	obGit(t, dir, "config", "commit.gpgSign", "false")
	obGit(t, dir, "config", "i18n.commitEncoding", "ISO-8859-1")
	o = OpenObjects(dir)
	if _, _, err := o.Ident(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Ident with i18n.commitEncoding: %v", err)
	}
	o.Close()
	obGit(t, dir, "config", "--unset", "i18n.commitEncoding")
	o = OpenObjects(dir)
	if _, _, err := o.Ident(ctx); err != nil {
		t.Fatalf("Ident in a plain repository: %v", err)
	}
	if _, err := o.Commit(ctx, head); err != nil {
		t.Fatal(err)
	}
	o.Close()

	sha := obRepo(t, "--object-format=sha256")
	obGit(t, sha, "commit", "-q", "--allow-empty", "-m", "x")
	h256 := obGit(t, sha, "rev-parse", "HEAD")
	o = OpenObjects(sha)
	defer o.Close()
	if _, err := o.Commit(ctx, h256); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Commit in a sha256 repository: %v", err)
	}
	if _, _, err := o.Ident(ctx); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("Ident in a sha256 repository: %v", err)
	}
	if _, _, err := o.MergeTrees(ctx, h256, h256, h256); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("MergeTrees in a sha256 repository: %v", err)
	}

	t.Setenv("GIT_OBJECT_DIRECTORY", filepath.Join(dir, ".git/objects"))
	o2 := OpenObjects(dir)
	defer o2.Close()
	if _, err := o2.WriteCommit(ctx, NewCommit{Tree: tree, Messages: []string{"m"}, Author: Ident{Name: "a", Email: "b"}, Committer: Ident{Name: "a", Email: "b"}}); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("WriteCommit with GIT_OBJECT_DIRECTORY: %v", err)
	}
}

// Bad ids never reach cat-file; missing objects are reported as such.
func TestObjectStoreBadAndMissingIDs(t *testing.T) {
	ctx := context.Background()
	dir, head := oneCommitRepo(t)
	o := OpenObjects(dir)
	defer o.Close()
	for _, bad := range []string{"HEAD", "main", head[:12], strings.ToUpper(head), head + "\n" + head, "HEAD~1", "", head[:39] + " "} {
		if _, err := o.Commit(ctx, bad); err == nil || errors.Is(err, ErrMissing) {
			t.Fatalf("Commit(%q) = %v, want a refusal", bad, err)
		}
		if _, err := o.IsAncestor(ctx, bad, head); err == nil {
			t.Fatalf("IsAncestor(%q) accepted", bad)
		}
	}
	if pid := o.pid(); pid != 0 {
		t.Fatalf("a bad id started cat-file (pid %d)", pid)
	}
	missing := strings.Repeat("ab", 20)
	if _, err := o.Commit(ctx, missing); !errors.Is(err, ErrMissing) {
		t.Fatalf("Commit of a missing object: %v", err)
	}
	// The process survives a missing object.
	pid := o.pid()
	if _, err := o.Commit(ctx, head); err != nil || o.pid() != pid {
		t.Fatalf("after a missing object: %v, pid %d then %d", err, pid, o.pid())
	}
	tree := obGit(t, dir, "rev-parse", "HEAD^{tree}")
	if _, err := o.Commit(ctx, tree); err == nil {
		t.Fatal("a tree read as a commit")
	}
}

// A killed batch process is replaced on the next read; a stuck one is
// killed at the read timeout instead of hanging.
func TestObjectStoreRestarts(t *testing.T) {
	ctx := context.Background()
	dir, head := oneCommitRepo(t)
	o := OpenObjects(dir)
	defer o.Close()
	if _, err := o.Commit(ctx, head); err != nil {
		t.Fatal(err)
	}
	pid := o.pid()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	forgetCommits(o)
	if _, err := o.Commit(ctx, head); err != nil {
		t.Fatalf("after kill: %v", err)
	}
	if o.pid() == pid || o.pid() == 0 {
		t.Fatalf("no new process: %d", o.pid())
	}

	// A git that never answers.
	bin := t.TempDir()
	script := "#!/bin/sh\nexec sleep 600\n"
	if err := os.WriteFile(filepath.Join(bin, "git"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	o2 := OpenObjects(dir)
	defer o2.Close()
	o2.timeout = 200 * time.Millisecond
	realPath := os.Getenv("PATH")
	t.Setenv("PATH", bin+string(os.PathListSeparator)+realPath)
	_, err := o2.Commit(ctx, head)
	if !errors.Is(err, errReadTimeout) {
		t.Fatalf("stuck process: %v", err)
	}
	if o2.pid() != 0 {
		t.Fatal("stuck process kept")
	}
	// The caller's deadline ends a stuck read as well.
	o2.timeout = time.Minute
	dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer dcancel()
	if _, err := o2.Commit(dctx, head); !errors.Is(err, context.DeadlineExceeded) || o2.pid() != 0 {
		t.Fatalf("stuck process past the caller's deadline: %v (pid %d)", err, o2.pid())
	}
	os.Setenv("PATH", realPath)
	o2.timeout = defaultReadTimeout
	if _, err := o2.Commit(ctx, head); err != nil {
		t.Fatalf("after a stuck process: %v", err)
	}

	// A cancelled context stops a read too.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := o2.Commit(cctx, strings.Repeat("cd", 20)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := o2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := o2.Commit(ctx, strings.Repeat("cd", 20)); err == nil {
		t.Fatal("read after Close")
	}
}

// Concurrent readers and writers get the answers a single caller gets.
func TestObjectStoreConcurrent(t *testing.T) {
	ctx := context.Background()
	h := newHistory(t, 3)
	all := h.build(20)
	o := OpenObjects(h.dir)
	defer o.Close()
	author, committer, err := o.Ident(ctx)
	if err != nil {
		t.Fatal(err)
	}
	author.When, committer.When = time.Unix(1700000000, 0).UTC(), time.Unix(1700000000, 0).UTC()
	type answer struct {
		names []string
		anc   bool
		id    string
	}
	ref := OpenObjects(h.dir)
	defer ref.Close()
	want := make([]answer, len(all))
	for i := range all {
		a, b := all[i], all[(i*7+3)%len(all)]
		n, err1 := ref.DiffNames(ctx, a, b)
		anc, err2 := ref.IsAncestor(ctx, b, a)
		c, _ := ref.Commit(ctx, a)
		id, err3 := ref.WriteCommit(ctx, NewCommit{Tree: c.Tree, Parents: []string{a}, Messages: []string{"m"}, Author: author, Committer: committer})
		if err := errors.Join(err1, err2, err3); err != nil {
			t.Fatal(err)
		}
		want[i] = answer{n, anc, id}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for k := range all {
				i := (k + g*5) % len(all)
				a, b := all[i], all[(i*7+3)%len(all)]
				n, err1 := o.DiffNames(ctx, a, b)
				anc, err2 := o.IsAncestor(ctx, b, a)
				c, err3 := o.Commit(ctx, a)
				id, err4 := o.WriteCommit(ctx, NewCommit{Tree: c.Tree, Parents: []string{a}, Messages: []string{"m"}, Author: author, Committer: committer})
				if err := errors.Join(err1, err2, err3, err4); err != nil {
					errs <- err
					return
				}
				if !slices.Equal(n, want[i].names) || anc != want[i].anc || id != want[i].id {
					errs <- fmt.Errorf("goroutine %d, pair %d: %v %v %s, want %+v", g, i, n, anc, id, want[i])
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// Commit headers are read the way git reads them.
func TestParseCommit(t *testing.T) {
	tr, p1, p2 := strings.Repeat("1", 40), strings.Repeat("2", 40), strings.Repeat("3", 40)
	c, err := parseCommit([]byte("tree " + tr + "\nparent " + p1 + "\nparent " + p2 + "\nauthor A <a> 5 +0000\ncommitter C <c> 7 +0100\nparent " + tr + "\n\nmsg\nparent x\n"))
	if err != nil || c.Tree != tr || !slices.Equal(c.Parents, []string{p1, p2}) || c.date != 7 {
		t.Fatalf("parse: %+v %v", c, err)
	}
	if c, err := parseCommit([]byte("tree " + tr + "\ncommitter C <c> 9 +0000\n")); err != nil || c.date != 9 || len(c.Parents) != 0 {
		t.Fatalf("no message: %+v %v", c, err)
	}
	for _, bad := range []string{"", "parent " + p1 + "\n\n", "tree xyz\n\n", "tree " + tr + "\nparent 12\n\n", "tree " + tr} {
		if _, err := parseCommit([]byte(bad)); err == nil {
			t.Fatalf("accepted %q", bad)
		}
	}
	if _, err := parseTree([]byte("100644 a\x00short")); err == nil {
		t.Fatal("truncated tree accepted")
	}
	if _, err := parseTree([]byte("10x644 a\x00" + strings.Repeat("x", 20))); err == nil {
		t.Fatal("bad mode accepted")
	}
}

// Several objects asked for at once come back in step, missing ones
// included, also beyond one batch.
func TestObjectStoreBatches(t *testing.T) {
	ctx := context.Background()
	dir, head := oneCommitRepo(t)
	tree := obGit(t, dir, "rev-parse", "HEAD^{tree}")
	o := OpenObjects(dir)
	defer o.Close()
	var ids []string
	for i := 0; i < 150; i++ {
		ids = append(ids, head, strings.Repeat(fmt.Sprintf("%02x", i%256), 20), tree)
	}
	objs, err := o.readObjects(ctx, ids)
	if err != nil || len(objs) != len(ids) {
		t.Fatalf("%d answers, %v", len(objs), err)
	}
	for i := 0; i < len(ids); i += 3 {
		if objs[i].typ != "commit" || !errors.Is(objs[i+1].err, ErrMissing) || objs[i+2].typ != "tree" {
			t.Fatalf("answer %d out of step: %+v %+v %+v", i, objs[i], objs[i+1], objs[i+2])
		}
	}
}

// Walks stop at their bound, and grafted history goes to git.
func TestObjectStoreWalkLimits(t *testing.T) {
	ctx := context.Background()
	dir := obRepo(t)
	var s strings.Builder
	for c := 0; c <= MaxWalk+10; c++ {
		fmt.Fprintf(&s, "commit refs/heads/main\nmark :%d\ncommitter T <t@example.com> %d +0000\ndata 0\n", c+1, 1_700_000_000+c)
		if c > 0 {
			fmt.Fprintf(&s, "from :%d\n", c)
		}
	}
	cmd := exec.Command("git", "fast-import", "--quiet")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(s.String())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("fast-import: %v %s", err, out)
	}
	tip := obGit(t, dir, "rev-parse", "main")
	root := obGit(t, dir, "rev-list", "--max-parents=0", "main")
	o := OpenObjects(dir)
	defer o.Close()
	if _, err := o.IsAncestor(ctx, root, tip); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("walk of %d commits: %v", MaxWalk+10, err)
	}
	near := obGit(t, dir, "rev-parse", "main~100")
	if ok, err := o.IsAncestor(ctx, near, tip); err != nil || !ok {
		t.Fatalf("short walk: %v %v", ok, err)
	}
	if ok, err := o.IsAncestor(ctx, tip, near); err != nil || ok {
		t.Fatalf("short walk, other way: %v %v", ok, err)
	}

	shallow := filepath.Join(t.TempDir(), "shallow")
	obGit(t, dir, "clone", "-q", "--depth", "3", "file://"+dir, shallow)
	so := OpenObjects(shallow)
	defer so.Close()
	sh := obGit(t, shallow, "rev-parse", "HEAD")
	if _, err := so.IsAncestor(ctx, sh, sh); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("shallow repository: %v", err)
	}
	if _, err := so.MergeBase(ctx, sh, obGit(t, shallow, "rev-parse", "HEAD~1")); !errors.Is(err, ErrUnsupported) {
		t.Fatalf("shallow repository: %v", err)
	}
}

// A shared store keeps its process until every user has closed it.
func TestObjectStoreShare(t *testing.T) {
	ctx := context.Background()
	dir, head := oneCommitRepo(t)
	o := OpenObjects(dir)
	shared := o.Share()
	if _, err := o.Commit(ctx, head); err != nil {
		t.Fatal(err)
	}
	pid := o.pid()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	forgetCommits(o)
	if _, err := shared.Commit(ctx, head); err != nil || o.pid() != pid {
		t.Fatalf("after the first Close: %v, pid %d (was %d)", err, o.pid(), pid)
	}
	if err := shared.Close(); err != nil {
		t.Fatal(err)
	}
	forgetCommits(o)
	if _, err := shared.Commit(ctx, head); err == nil || o.pid() != 0 {
		t.Fatalf("after the last Close: %v, pid %d", err, o.pid())
	}
}

// oneCommitRepo is a repository with one empty commit, and its id.
func oneCommitRepo(t *testing.T) (dir, head string) {
	dir = obRepo(t)
	obGit(t, dir, "commit", "-q", "--allow-empty", "-m", "x")
	return dir, obGit(t, dir, "rev-parse", "HEAD")
}

// forgetCommits empties the store's commit cache, so the next read goes
// to cat-file.
func forgetCommits(o *ObjectStore) {
	o.cacheMu.Lock()
	clear(o.commits)
	o.cacheMu.Unlock()
}
