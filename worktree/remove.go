package worktree

// Removing worktrees: the clean ones in-process, the rest through git,
// whatever removal would lose kept under refs/chorus/kept/ first.

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// Gone names a worktree to remove and the task its kept refs are named
// after.
type Gone struct {
	Task string
	Dir  string
}

// RemoveKeeping removes the linked worktree dir, keeping first under
// refs/chorus/kept/<task>/ whatever removing it would lose (its
// uncommitted files; the scratchpad is not work). A missing dir only has
// its registration pruned. An error means the worktree stays.
func (m *Manager) RemoveKeeping(ctx context.Context, task, dir, why string) error {
	return m.RemoveAllKeeping(ctx, []Gone{{Task: task, Dir: dir}}, why)[0]
}

// RemoveAllKeeping is RemoveKeeping for several worktrees: the clean ones
// (the usual case once their work landed) have their files checked and
// deleted without the registry lock and are unregistered under one hold
// of it. errs[i] is dirs[i]'s outcome.
func (m *Manager) RemoveAllKeeping(ctx context.Context, gone []Gone, why string) (errs []error) {
	errs = make([]error, len(gone))
	admins := make([]string, len(gone))
	done := make([]bool, len(gone))
	missing := false
	for i, g := range gone {
		if _, err := os.Lstat(g.Dir); errors.Is(err, fs.ErrNotExist) {
			done[i], missing = true, true
			continue
		}
		admins[i], done[i], errs[i] = m.deleteCleanFiles(ctx, g.Dir, IsScratchpad)
	}
	m.reg.Lock()
	defer m.reg.Unlock()
	for i := range gone {
		if done[i] && errs[i] == nil && admins[i] != "" {
			errs[i] = unregister(admins[i])
		}
	}
	if missing {
		_, _ = gitx.Git(ctx, m.RepoDir, "worktree", "prune")
	}
	for i, g := range gone {
		if !done[i] {
			errs[i] = m.removeKeepingLocked(ctx, KeepOptions{Repo: m.RepoDir, Task: g.Task, Worktree: g.Dir, Why: why})
		}
	}
	return errs
}

// removeKeepingLocked removes the linked worktree o.Worktree, keeping first
// whatever removing it would lose (Keep with the worktree alone). The
// usual case, a clean worktree, is one git process (a status, see
// removeClean); otherwise `git worktree remove` without --force refuses a
// worktree with changes or untracked files (ignored ones go, as with
// --force), and only then is the uncommitted state kept and the removal
// forced. The caller holds m.reg.
func (m *Manager) removeKeepingLocked(ctx context.Context, o KeepOptions) error {
	if done, err := m.removeClean(ctx, o.Worktree, true); done {
		return err
	}
	if _, err := gitx.Git(ctx, o.Repo, "worktree", "remove", o.Worktree); err == nil {
		return nil
	}
	if _, err := Keep(ctx, KeepOptions{Repo: o.Repo, Task: o.Task, Worktree: o.Worktree, Why: o.Why}); err != nil {
		return err
	}
	_, err := gitx.Git(ctx, o.Repo, "worktree", "remove", "--force", o.Worktree)
	return err
}

// removeClean removes the linked worktree dir as `git worktree remove`
// without --force does — only when git's status of it is empty — with at
// most one git process instead of two (git's remove starts a status of its
// own, then deletes the directory and its administrative directory), none
// when gitx.SurelyClean can tell; the scratchpad is not work.
// It is stricter than git: untracked files count whatever
// status.showUntrackedFiles says, and anything it does not handle the way
// git would (a locked worktree, submodules or any nested repository,
// environment overrides, an unusual layout) makes it answer done=false
// without changing anything, for the caller to ask git.
//
// Only unregistering the worktree (its administrative directory, which a
// concurrent `git worktree add` reads) happens under m.reg: locked says
// the caller holds it already; otherwise it is taken for just that, so the
// check and the deletion of the files (the slow part) do not hold up
// agents' worktrees being created.
func (m *Manager) removeClean(ctx context.Context, dir string, locked bool) (done bool, err error) {
	admin, done, err := m.deleteCleanFiles(ctx, dir, IsScratchpad)
	if !done || err != nil {
		return done, err
	}
	if !locked {
		m.reg.Lock()
		defer m.reg.Unlock()
	}
	return true, unregister(admin)
}

// deleteCleanFiles checks that dir is a plain, clean linked worktree and
// deletes its files (or keeps a surely clean one's as a spare, spare.go),
// returning its administrative directory for unregister; done=false:
// nothing changed, ask git.
func (m *Manager) deleteCleanFiles(ctx context.Context, dir string, notWork func(rel string) bool) (admin string, done bool, err error) {
	for _, k := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} {
		if os.Getenv(k) != "" {
			return "", false, nil
		}
	}
	admin, ok := gitx.WorktreeAdminDir(dir)
	if !ok || present(filepath.Join(admin, "locked")) || present(filepath.Join(admin, "modules")) {
		return "", false, nil
	}
	// Files only: a directory taken as not work could hide a repository.
	files := func(rel string) bool { return notWork != nil && !strings.HasSuffix(rel, "/") && notWork(rel) }
	// Surely clean also means no nested repository (SurelyClean stops at
	// one); otherwise look for one before asking git's status.
	if !gitx.SurelyClean(dir, files) {
		if nestedRepo(dir) {
			return "", false, nil
		}
		st, err := gitx.Git(ctx, dir, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")
		if err != nil || st != "" {
			return "", false, nil
		}
	} else if m.stash(dir, admin) {
		return admin, true, nil
	}
	// The files first: should this stop halfway, git still knows the
	// worktree and `git worktree prune` (or Chorus's next start) drops it.
	return admin, true, os.RemoveAll(dir)
}

// unregister drops a worktree's administrative directory (under m.reg:
// `git worktree add` reads every one).
func unregister(admin string) error {
	if err := os.RemoveAll(admin); err != nil {
		return err
	}
	_ = os.Remove(filepath.Dir(admin)) // git drops "worktrees" once it is empty
	return nil
}

func present(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}

// nestedRepo reports whether a .git entry exists anywhere below dir's
// top level (a submodule, or a repository an agent made): git decides
// about those, since deleting one could delete history.
func nestedRepo(dir string) bool {
	found := false
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && filepath.Dir(p) != dir {
			found = true
			return filepath.SkipAll
		}
		return nil
	})
	return found || err != nil && !errors.Is(err, filepath.SkipAll)
}
