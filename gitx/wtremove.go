package gitx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// RemoveCleanWorktree removes the linked worktree dir as `git worktree
// remove` without --force does — only when git's status of it is empty —
// with at most one git process instead of two (git's remove starts a
// status of its own, then deletes the directory and its administrative
// directory), none when SurelyClean can tell (notWork as there).
// It is stricter than git: untracked files count whatever status.showUntrackedFiles
// says, and anything it does not handle the way git would (a locked
// worktree, submodules or any nested repository, environment overrides,
// an unusual layout) makes it answer done=false without changing
// anything, for the caller to ask git.
//
// Only unregistering the worktree (its administrative directory, which a
// concurrent `git worktree add` reads) happens under WorktreeMu: locked
// says the caller holds it already; otherwise it is taken for just that,
// so the check and the deletion of the files (the slow part) do not hold
// up agents' worktrees being created.
func RemoveCleanWorktree(ctx context.Context, dir string, notWork func(rel string) bool, locked bool) (done bool, err error) {
	admin, done, err := deleteCleanFiles(ctx, dir, notWork)
	if !done || err != nil {
		return done, err
	}
	if !locked {
		WorktreeMu.Lock()
		defer WorktreeMu.Unlock()
	}
	return true, unregister(admin)
}

// RemoveCleanWorktrees is RemoveCleanWorktree (caller not holding
// WorktreeMu) for several worktrees, unregistering them all under one
// hold of the lock.
func RemoveCleanWorktrees(ctx context.Context, dirs []string, notWork func(rel string) bool) (done []bool, errs []error) {
	done, errs = make([]bool, len(dirs)), make([]error, len(dirs))
	admins := make([]string, len(dirs))
	for i, dir := range dirs {
		admins[i], done[i], errs[i] = deleteCleanFiles(ctx, dir, notWork)
	}
	WorktreeMu.Lock()
	defer WorktreeMu.Unlock()
	for i := range dirs {
		if done[i] && errs[i] == nil {
			errs[i] = unregister(admins[i])
		}
	}
	return done, errs
}

// deleteCleanFiles checks that dir is a plain, clean linked worktree and
// deletes its files, returning its administrative directory for
// unregister; done=false: nothing changed, ask git.
func deleteCleanFiles(ctx context.Context, dir string, notWork func(rel string) bool) (admin string, done bool, err error) {
	for _, k := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"} {
		if os.Getenv(k) != "" {
			return "", false, nil
		}
	}
	admin, ok := worktreeAdminDir(dir)
	if !ok || exists(filepath.Join(admin, "locked")) || exists(filepath.Join(admin, "modules")) {
		return "", false, nil
	}
	// Files only: a directory taken as not work could hide a repository.
	files := func(rel string) bool { return notWork != nil && !strings.HasSuffix(rel, "/") && notWork(rel) }
	// Surely clean also means no nested repository (SurelyClean stops at
	// one); otherwise look for one before asking git's status.
	if !SurelyClean(dir, files) {
		if nestedRepo(dir) {
			return "", false, nil
		}
		st, err := Git(ctx, dir, "status", "--porcelain", "--untracked-files=all", "--ignore-submodules=none")
		if err != nil || st != "" {
			return "", false, nil
		}
	}
	// The files first: should this stop halfway, git still knows the
	// worktree and `git worktree prune` (or Chorus's next start) drops it.
	return admin, true, os.RemoveAll(dir)
}

// unregister drops a worktree's administrative directory (under
// WorktreeMu: `git worktree add` reads every one).
func unregister(admin string) error {
	if err := os.RemoveAll(admin); err != nil {
		return err
	}
	_ = os.Remove(filepath.Dir(admin)) // git drops "worktrees" once it is empty
	return nil
}

// worktreeAdminDir is the administrative directory of the linked worktree
// dir ($GIT_COMMON_DIR/worktrees/<id>), when its .git file and the
// directory point at each other.
func worktreeAdminDir(dir string) (string, bool) {
	dotgit := filepath.Join(dir, ".git")
	if st, err := os.Lstat(dotgit); err != nil || !st.Mode().IsRegular() || !ownedByMe(st) {
		return "", false
	}
	gd, _, ok := worktreeGitDirs(dir)
	if !ok || filepath.Base(filepath.Dir(gd)) != "worktrees" {
		return "", false
	}
	back, err := os.ReadFile(filepath.Join(gd, "gitdir"))
	if err != nil || !sameFile(strings.TrimSpace(string(back)), dotgit) {
		return "", false
	}
	return gd, true
}

func sameFile(a, b string) bool {
	sa, err := os.Stat(a)
	if err != nil {
		return false
	}
	sb, err := os.Stat(b)
	return err == nil && os.SameFile(sa, sb)
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
