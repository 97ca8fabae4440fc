package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
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

func (s *Service) rebaseDir(task string) string {
	return filepath.Join(s.opt.WorktreesDir, "_rebase-"+task)
}

// medium carries out the medium tier for a conflict of it's head against
// tip; false when the tier is spent (the caller escalates).
func (s *Service) medium(ctx context.Context, it Item, tip, tipTree, head string) bool {
	id := it.TaskID
	if queue.Medium(&it, tip) == queue.MediumEscalate {
		return false
	}
	why := ""
	if s.wasReverted(id) {
		// A re-landing re-applies its revert first: a rebase onto the
		// tip alone would leave that out.
		why = "it re-lands a rolled-back merge"
	} else if tree, err := s.rebaseTree(ctx, id, tip, head); err != nil {
		why = err.Error()
	} else {
		s.emit(Event{Kind: EventRebased, TaskID: id, Commit: tip,
			Message: fmt.Sprintf("%s rebases cleanly onto %s (%s): retrying with the rebased tree", it.Branch, s.opt.Target, short(tip))})
		if s.move(id, StatusMerging, nil) {
			s.candidate(ctx, id, it, tip, tipTree, tip, head, tree)
		}
		return true
	}
	if ctx.Err() != nil {
		s.move(id, StatusPending, nil)
		return true
	}
	n := 0
	if !s.step(id, func(it *Item, st *Stats) {
		if err := queue.Defer(it, tip, st.NextSeq); err != nil {
			s.refusedLocked(id, err) // the item stays as it is
			return
		}
		st.NextSeq++
		n = it.Deferrals
	}) || n == 0 {
		return true
	}
	s.emit(Event{Kind: EventDeferred, TaskID: id, Commit: tip, Files: it.ConflictFiles,
		Message: fmt.Sprintf("conflict %d of %d: %s (%s); deferred to the back of the queue, retried once %s moves",
			n, queue.MaxDeferrals, strings.Join(it.ConflictFiles, ", "), why, s.opt.Target)})
	return true
}

// rebaseTree rebases head onto tip in a detached throwaway worktree and
// returns the resulting tree; the error says why it did not apply. The
// rebased commits themselves are dropped (only their tree is used), so
// they carry a fixed identity and run no hooks.
func (s *Service) rebaseTree(ctx context.Context, id, tip, head string) (string, error) {
	wt := s.rebaseDir(id)
	s.removeScratch(ctx, wt)
	defer s.removeScratch(context.WithoutCancel(ctx), wt)
	gitx.WorktreeMu.Lock()
	_, err := git(ctx, s.opt.RepoDir, "worktree", "add", "-q", "--detach", wt, head)
	gitx.WorktreeMu.Unlock()
	if err != nil {
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

// removeScratch removes a throwaway worktree of the service's own.
func (s *Service) removeScratch(ctx context.Context, wt string) {
	if !dirExists(wt) {
		return
	}
	gitx.WorktreeMu.Lock()
	defer gitx.WorktreeMu.Unlock()
	if _, err := git(ctx, s.opt.RepoDir, "worktree", "remove", "--force", wt); err != nil {
		_ = os.RemoveAll(wt)
		_, _ = run(ctx, s.opt.RepoDir, "", "worktree", "prune")
	}
}
