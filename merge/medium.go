package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/merge/queue"
)

// The medium conflict tier (queue.Medium decides): before an agent or a
// person sees a conflict, the branch is rebased onto the target's tip in a
// throwaway worktree. When every commit applies (a change the target
// already has, picked up by another task, is skipped), the rebased tree
// becomes the candidate of an ordinary merge of the branch: the task's
// commits stay on the target's history and the quality gate decides as
// for any candidate. When the rebase stops on a conflict too, the item
// goes to the back of the queue and is retried against the tip the target
// has by then, up to queue.MaxDeferrals times.

func (rs *resolvers) rebaseDir(task string) string {
	return filepath.Join(rs.q.opt.WorktreesDir, "_rebase-"+task)
}

// medium carries out the medium tier for a conflict of it's head against
// tip: handled is false when the tier is spent (the caller escalates);
// tree is the branch rebased onto tip, when that applied cleanly.
func (rs *resolvers) medium(ctx context.Context, it Item, tip, head string) (tree string, handled bool) {
	id := it.TaskID
	if queue.Medium(&it, tip) == queue.MediumEscalate {
		return "", false
	}
	why := ""
	if rs.q.wasReverted(id) {
		// A re-landing re-applies its revert first: a rebase onto the
		// tip alone would leave that out.
		why = "it re-lands a rolled-back merge"
	} else if tree, err := rs.rebaseTree(ctx, id, tip, head); err != nil {
		why = err.Error()
	} else {
		rs.q.emit(Event{Kind: EventRebased, TaskID: id, Commit: tip,
			Message: fmt.Sprintf("%s rebases cleanly onto %s (%s): retrying with the rebased tree", it.Branch, rs.q.opt.Target, short(tip))})
		return tree, true
	}
	if ctx.Err() != nil {
		rs.q.move(id, StatusPending, nil)
		return "", true
	}
	n := 0
	if !rs.q.step(id, func(it *Item, st *Stats) {
		if err := queue.Defer(it, tip, st.NextSeq); err != nil {
			rs.q.refusedLocked(id, err) // the item stays as it is
			return
		}
		st.NextSeq++
		n = it.Deferrals
	}) || n == 0 {
		return "", true
	}
	rs.q.emit(Event{Kind: EventDeferred, TaskID: id, Commit: tip, Files: it.ConflictFiles,
		Message: fmt.Sprintf("conflict %d of %d: %s (%s); deferred to the back of the queue, retried once %s moves",
			n, queue.MaxDeferrals, strings.Join(it.ConflictFiles, ", "), why, rs.q.opt.Target)})
	return "", true
}

// rebaseTree rebases head onto tip in a detached throwaway worktree and
// returns the resulting tree; the error says why it did not apply. The
// rebased commits themselves are dropped (only their tree is used), so
// they carry a fixed identity and run no hooks.
func (rs *resolvers) rebaseTree(ctx context.Context, id, tip, head string) (string, error) {
	wt := rs.rebaseDir(id)
	rs.removeScratch(ctx, wt)
	defer rs.removeScratch(context.WithoutCancel(ctx), wt)
	if err := rs.q.opt.Worktrees.AddDetached(ctx, wt, head, ""); err != nil {
		return "", fmt.Errorf("no worktree to rebase in: %w", err)
	}
	r, err := run(ctx, wt, "", "-c", "user.name=Chorus", "-c", "user.email=chorus@localhost",
		"-c", "core.hooksPath="+os.DevNull, "-c", "commit.gpgsign=false", "-c", "rerere.enabled=true",
		"rebase", "--no-autosquash", "--no-update-refs", tip)
	if err != nil {
		return "", err
	}
	if r.rc != 0 {
		_, _ = run(ctx, wt, "", "rebase", "--abort")
		return "", fmt.Errorf("the rebase onto %s stops on a conflict too", short(tip))
	}
	return git(ctx, wt, "rev-parse", "HEAD^{tree}")
}

// removeScratch removes a throwaway worktree of the service's own: it
// holds only the rebase, whose tree was already read.
func (rs *resolvers) removeScratch(ctx context.Context, wt string) {
	rs.q.opt.Worktrees.RemoveScratch(ctx, wt)
}
