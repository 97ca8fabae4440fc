package worktree

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/gitx"
)

// Rewind puts the branch checked out in dir back at commit, an earlier
// commit of it (a person rolling back an agent's last iteration). The tip
// it leaves is kept under refs/chorus/kept/<task>/<time>-rewound and any
// uncommitted state, untracked files included, as …-wip, before the
// worktree is reset and cleaned. Call it only while no agent runs there.
func (m *Manager) Rewind(ctx context.Context, task, dir, commit string) error {
	head, err := gitx.Git(ctx, dir, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	target, err := gitx.Git(ctx, dir, "rev-parse", "--verify", commit+"^{commit}")
	if err != nil {
		return err
	}
	if !isAncestor(ctx, dir, target, head) {
		return fmt.Errorf("worktree: %s is not an earlier commit of this worktree's branch", commit[:min(12, len(commit))])
	}
	now := time.Now()
	wip, err := SnapshotWIP(ctx, dir, "chorus: kept uncommitted work of "+task+" before a rollback")
	if err != nil {
		return fmt.Errorf("worktree: saving the uncommitted work in %s, so nothing was rolled back: %w", dir, err)
	}
	if wip != "" {
		if _, err := keepRef(ctx, dir, task, KeptWIP, wip, now); err != nil {
			return err
		}
	}
	if head != target {
		if _, err := keepRef(ctx, dir, task, KeptRewound, head, now); err != nil {
			return err
		}
	}
	if _, err := gitx.Git(ctx, dir, "reset", "-q", "--hard", target); err != nil {
		return err
	}
	_, err = gitx.Git(ctx, dir, "clean", "-q", "-f", "-d")
	return err
}
