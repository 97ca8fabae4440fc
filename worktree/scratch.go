package worktree

// Worktrees Chorus makes for itself beside the agents': the merge
// service's integration and rebase worktrees, the Plan Agent's checkout and
// a conflict resolver's fresh branch. All go through the registry lock.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/chorus-dev/chorus/gitx"
)

// LockRegistry holds the registry lock until the returned function is
// called, for a caller's own `git worktree` command in this process (a
// test building fixtures beside a running engine); Chorus's code goes
// through the Manager's methods instead.
func (m *Manager) LockRegistry() (unlock func()) {
	m.reg.Lock()
	return m.reg.Unlock
}

// AddDetached adds a worktree at dir, detached at rev, after pruning
// registrations whose directory is gone. A non-empty lockReason locks it
// (`git worktree lock`) so no prune drops it while its directory is away.
func (m *Manager) AddDetached(ctx context.Context, dir, rev, lockReason string) error {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	args := []string{"worktree", "add", "-q", "--detach"}
	if lockReason != "" {
		args = append(args, "--lock", "--reason", lockReason)
	}
	m.reg.Lock()
	defer m.reg.Unlock()
	_, _ = gitx.Git(ctx, m.RepoDir, "worktree", "prune")
	_, err := gitx.Git(ctx, m.RepoDir, append(args, dir, rev)...)
	return err
}

// RemoveScratch removes a detached worktree that holds only Chorus's own
// computation (a rebase whose result the caller already read, an
// integration worktree whose .git is gone), with whatever is in it: it
// never holds an agent's work, so nothing is kept. A directory git does
// not know as a worktree is deleted all the same and registrations pruned.
func (m *Manager) RemoveScratch(ctx context.Context, dir string) {
	if _, err := os.Lstat(dir); err != nil {
		return
	}
	m.reg.Lock()
	defer m.reg.Unlock()
	// Forced twice: a locked one (the integration worktree) goes too.
	if _, err := gitx.Git(ctx, m.RepoDir, "worktree", "remove", "--force", "--force", dir); err != nil {
		_ = os.RemoveAll(dir)
		_, _ = gitx.Git(ctx, m.RepoDir, "worktree", "prune")
	}
}

// Renew puts a fresh worktree at dir on branch, which is made to point at
// at: whatever an earlier worktree there and the branch held (its
// uncommitted files, a tip at does not contain) is kept under
// refs/chorus/kept/<task>/ first, and nothing is replaced when that fails.
func (m *Manager) Renew(ctx context.Context, task, dir, branch, at, why string) error {
	if _, err := Keep(ctx, KeepOptions{Repo: m.RepoDir, Task: task, Worktree: dir, Branch: branch, Target: at, Why: why}); err != nil {
		return fmt.Errorf("could not keep the earlier work in %s, so it stays: %w", dir, err)
	}
	m.reg.Lock()
	defer m.reg.Unlock()
	if _, err := os.Lstat(dir); err == nil {
		if _, err := gitx.Git(ctx, m.RepoDir, "worktree", "remove", "--force", dir); err != nil {
			_ = os.RemoveAll(dir)
		}
	}
	_, _ = gitx.Git(ctx, m.RepoDir, "worktree", "prune")
	if _, err := gitx.Git(ctx, m.RepoDir, "update-ref", "refs/heads/"+branch, at); err != nil {
		return err
	}
	_, err := gitx.Git(ctx, m.RepoDir, "worktree", "add", "-q", dir, branch)
	return err
}

// DeleteBranch deletes branch (short name) after keeping its tip under
// refs/chorus/kept/<task>/<time>-tip, and returns what it kept. git
// refuses to delete a branch a worktree has checked out; the tip is kept
// all the same, and the error says so.
func (m *Manager) DeleteBranch(ctx context.Context, task, branch, why string) ([]Kept, error) {
	kept, err := Keep(ctx, KeepOptions{Repo: m.RepoDir, Task: task, Branch: "refs/heads/" + branch, Why: why})
	if err != nil {
		return kept, fmt.Errorf("keeping %s: %w; nothing deleted", branch, err)
	}
	if _, err := gitx.Git(ctx, m.RepoDir, "branch", "-D", "--", branch); err != nil {
		return kept, fmt.Errorf("branch %s left in place: %w", branch, err)
	}
	return kept, nil
}
