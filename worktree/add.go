package worktree

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// addNew does what `git worktree add -q -b branch abs target` does for a
// new task — the branch at the target's tip (or, when it exists, what
// `git worktree add abs branch` does), the worktree registered
// (its administrative directory under the common dir's worktrees/, the
// .git file pointing there), the tree checked out with its index — without
// a git process: that process (most of its CPU a checkout) ran under the
// registry lock once per task, and agents' starts queued behind it.
//
// Under the caller's m.mu and m.reg (abs does not exist) it registers the
// worktree, locked as git locks one it is making; fill, called after both
// are released, checks the tree out, writes the index and unlocks it. ok
// is false when nothing was changed and git should do it: an unusual
// repository or tree (gitx.ErrUnsupported), a branch another worktree
// has out, an existing administrative directory, any failure. What a
// failed fill made is undone before it returns (a branch it made only
// ever pointed at the target's tip; one it found stays).
func (m *Manager) addNew(ctx context.Context, abs, branch string) (head string, fill func(context.Context) error, ok bool) {
	for _, k := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"} {
		if os.Getenv(k) != "" {
			return "", nil, false
		}
	}
	objs, common, ok := m.objects(ctx)
	if !ok {
		return "", nil, false
	}
	tip, found, known := gitx.ReadRef(common, "refs/heads/"+m.Target)
	if !found || !known || present(filepath.Join(common, "hooks", "post-checkout")) {
		return "", nil, false
	}
	// A branch that outlived its worktree (a making stopped after making
	// it and undone at the next start) is checked out as it is, as `git
	// worktree add abs branch` would: a git process a killed engine leaves
	// running would go on making a worktree the next start takes for a
	// stopped one.
	had, kept, known := gitx.ReadRef(common, "refs/heads/"+branch)
	if !known || kept && checkedOut(common, branch) {
		return "", nil, false
	}
	if kept {
		tip = had
	}
	co, err := objs.PlanCheckout(ctx, tip)
	if err != nil {
		return "", nil, false
	}
	admin := filepath.Join(common, "worktrees", filepath.Base(abs))
	if err := os.MkdirAll(filepath.Dir(admin), 0o777); err != nil {
		return "", nil, false
	}
	if err := os.Mkdir(admin, 0o777); err != nil {
		return "", nil, false // git picks another name
	}
	undo := func() { _ = os.RemoveAll(admin) }
	// As git does: "locked" while the worktree is being made keeps a
	// prune (or Chorus's own removal) away from it, and tells a later
	// start that its making never finished (halfMade).
	if err := os.WriteFile(filepath.Join(admin, "locked"), []byte(making), 0o666); err != nil {
		undo()
		return "", nil, false
	}
	dropRef := func() {}
	if !kept {
		dropRef, err = objs.CreateRef(ctx, "refs/heads/"+branch, tip, "branch: Created from "+m.Target)
		if err != nil {
			undo()
			return "", nil, false
		}
	}
	undo = func() {
		_ = os.RemoveAll(abs)
		_ = os.RemoveAll(admin)
		dropRef()
	}
	// A spare checkout, when there is one, becomes the worktree's
	// directory; only its files that differ are rewritten.
	sp, old := m.takeSpare(ctx, objs)
	if sp != nil && os.Rename(sp.dir, abs) != nil {
		_ = os.RemoveAll(sp.dir)
		sp = nil
	}
	if sp == nil {
		if err := os.Mkdir(abs, 0o777); err != nil {
			undo()
			return "", nil, false
		}
	}
	if err := register(abs, admin, branch); err != nil {
		undo()
		return "", nil, false
	}
	// Until it is filled, its lock says "being made" to this process
	// too, and must not read as a stopped making (halfMade).
	if m.filling == nil {
		m.filling = map[string]bool{}
	}
	m.filling[abs] = true
	fill = func(ctx context.Context) error {
		var err error
		if sp != nil {
			err = checkOutOver(ctx, co, abs, admin, old, sp.index)
		} else {
			err = checkOut(ctx, co, abs, admin)
		}
		m.mu.Lock()
		defer m.mu.Unlock()
		delete(m.filling, abs)
		if err != nil {
			m.reg.Lock()
			undo()
			m.reg.Unlock()
		}
		return err
	}
	return tip, fill, true
}

// checkedOut reports whether a worktree of the repository whose common
// dir is common, the main one included, has branch checked out (or it
// cannot tell).
func checkedOut(common, branch string) bool {
	heads := []string{filepath.Join(common, "HEAD")}
	ents, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return true
	}
	for _, e := range ents {
		heads = append(heads, filepath.Join(common, "worktrees", e.Name(), "HEAD"))
	}
	for _, h := range heads {
		b, err := os.ReadFile(h)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return true
		}
		if strings.TrimSpace(string(b)) == "ref: refs/heads/"+branch {
			return true
		}
	}
	return false
}

// making is what git writes in the "locked" file of a worktree it is
// making.
const making = "initializing\n"

// halfMade finds the administrative directory of a worktree at abs
// whose making never finished (the engine stopped during it): still
// locked as being made, and naming abs as its worktree — or, when it was
// stopped before writing that, an in-process one's directory named for
// abs. Its .git file may be missing, empty or torn, so abs is never read.
func halfMade(common, abs string) (admin string, ok bool) {
	if common == "" {
		return "", false
	}
	dir := filepath.Join(common, "worktrees")
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", false
	}
	want := filepath.Join(realDir(filepath.Dir(abs)), filepath.Base(abs), ".git")
	for _, e := range ents {
		a := filepath.Join(dir, e.Name())
		if b, err := os.ReadFile(filepath.Join(a, "locked")); err != nil || string(b) != making {
			continue
		}
		gd, err := os.ReadFile(filepath.Join(a, "gitdir"))
		switch {
		case err == nil && filepath.Clean(strings.TrimSpace(string(gd))) == want:
			return a, true
		case errors.Is(err, fs.ErrNotExist) && e.Name() == filepath.Base(abs):
			return a, true
		}
	}
	return "", false
}

// madeHalfByGit reports a directory at abs, never registered, that a
// `git worktree add` stopped or undone during its making left: empty (git
// makes it first), or with a .git file naming an administrative directory
// under the common dir's worktrees/ that is gone (git writes that file
// before the checkout). Anything else is not known to be git's.
func madeHalfByGit(abs string) bool {
	if ents, err := os.ReadDir(abs); err == nil && len(ents) == 0 {
		return true
	}
	b, err := os.ReadFile(filepath.Join(abs, ".git"))
	if err != nil {
		return false
	}
	gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	gd = filepath.Clean(strings.TrimSpace(gd))
	if !ok || !filepath.IsAbs(gd) || filepath.Base(filepath.Dir(gd)) != "worktrees" {
		return false
	}
	_, err = os.Lstat(gd)
	return errors.Is(err, fs.ErrNotExist)
}

// realDir is dir with its links resolved, as git records paths; dir
// itself when that fails.
func realDir(dir string) string {
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}

// register makes abs (an existing directory) the worktree whose administrative directory is admin,
// on branch.
func register(abs, admin, branch string) error {
	// git records both paths resolved (a symlinked /tmp included).
	realAbs, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return err
	}
	realAdmin, err := filepath.EvalSymlinks(admin)
	if err != nil {
		return err
	}
	files := []struct{ path, text string }{
		{filepath.Join(admin, "gitdir"), filepath.Join(realAbs, ".git") + "\n"},
		{filepath.Join(admin, "commondir"), "../..\n"},
		{filepath.Join(admin, "HEAD"), "ref: refs/heads/" + branch + "\n"},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte(f.text), 0o666); err != nil {
			return err
		}
	}
	// Whole or absent, never torn: a stop while it is written leaves
	// a worktree halfMade finds by its administrative directory anyway.
	tmp := filepath.Join(abs, ".git.chorus-tmp")
	if err := os.WriteFile(tmp, []byte("gitdir: "+realAdmin+"\n"), 0o666); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(abs, ".git"))
}

// checkOut writes the files and the index, then unlocks the worktree.
func checkOut(ctx context.Context, co *gitx.Checkout, abs, admin string) error {
	index, err := co.Write(ctx, abs)
	if err != nil {
		return err
	}
	return writeIndex(index, admin)
}

// checkOutOver is checkOut over a spare checkout of old with its index.
func checkOutOver(ctx context.Context, co *gitx.Checkout, abs, admin string, old *gitx.Checkout, oldIndex []byte) error {
	index, err := co.WriteOver(ctx, abs, old, oldIndex)
	if err != nil {
		return err
	}
	return writeIndex(index, admin)
}

// writeIndex puts the worktree's index in place and unlocks it.
func writeIndex(index []byte, admin string) error {
	// As git writes an index: a lock file renamed into place.
	lock := filepath.Join(admin, "index.lock")
	if err := os.WriteFile(lock, index, 0o666); err != nil {
		return err
	}
	if err := os.Rename(lock, filepath.Join(admin, "index")); err != nil {
		return err
	}
	return os.Remove(filepath.Join(admin, "locked"))
}
