package merge

import (
	"context"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/worktree"
)

// Cleaning up after landings: worktrees, branches and the queue's refs.

// cleanup removes landed tasks' worktrees and branches once they are
// reachable from the target; a user's own branch is left alone. A batch's
// worktrees are unregistered under one hold of the worktree lock, its refs
// go in one transaction and the queue is saved once. Refs are read
// in-process, and what landed is known to be reachable while the target
// is still the merge that landed it (git is asked otherwise).
func (s *Service) cleanup(ctx context.Context, ids []string) {
	var items []Item
	for _, id := range ids {
		if it, ok := s.get(id); ok {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return
	}
	target := "refs/heads/" + s.opt.Target
	tip, _ := s.readTarget()
	reachable := make([]func(string) bool, len(items))
	for i, it := range items {
		landedHere := it.MergeCommit != "" && it.Head != "" && s.in.onChain(it.MergeCommit, tip)
		reachable[i] = func(h string) bool {
			if landedHere && h == it.Head {
				return true // the landed merge's second parent
			}
			in, _ := s.in.ancestor(ctx, h, target)
			return in
		}
	}
	// The branch is in; uncommitted files (an agent's last edits,
	// untracked files) are kept under refs/chorus/kept/ first, and the
	// worktree stays if they cannot be.
	var gone []worktree.Gone
	for i, it := range items {
		if it.User || it.Worktree == "" || !dirExists(it.Worktree) {
			continue
		}
		head := gitx.WorktreeHead(it.Worktree)
		if head == "" {
			head, _ = git(ctx, it.Worktree, "rev-parse", "HEAD")
		}
		if head != "" && reachable[i](head) {
			gone = append(gone, worktree.Gone{Task: it.TaskID, Dir: it.Worktree})
		}
	}
	for k, err := range s.opt.Worktrees.RemoveAllKeeping(ctx, gone, "removing a worktree") {
		if err != nil {
			s.emit(Event{Kind: EventHeld, TaskID: gone[k].Task, Message: "left " + gone[k].Dir + " in place: " + err.Error()})
		}
	}
	var dels []string
	for i, it := range items {
		dels = append(dels, s.cleanupRefs(ctx, it, reachable[i], dels)...)
	}
	if len(dels) > 0 {
		if err := s.in.refs.Apply(ctx, dels); err != nil {
			// One of them moved meanwhile: apply the others one by one.
			for _, d := range dels {
				_ = s.in.refs.Apply(ctx, []string{d})
			}
		}
	}
	s.packRefs(ctx, len(items))
	s.markCleaned(items)
}

// cleanupRefs lists the ref transaction lines that tidy up after a landed
// item: its branches deleted (those reachable from the target), its
// candidate ref gone, its merged ref and checkpoint written. have holds
// the lines of the batch so far.
func (s *Service) cleanupRefs(ctx context.Context, it Item, reachable func(string) bool, have []string) []string {
	id := it.TaskID
	readRef := func(ref string) (string, bool) {
		if h, exists, known := s.in.refValue(ref); known {
			return h, exists
		}
		h, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "-q", ref)
		return h, err == nil
	}
	var dels []string
	if !it.User {
		for _, b := range []string{it.Branch, it.MergeRef, resolveBranch(id)} {
			if b == "" {
				continue
			}
			ref := b
			if !strings.HasPrefix(ref, "refs/") {
				ref = "refs/heads/" + b
			}
			h, exists := readRef(ref)
			line := "delete " + ref + " " + h
			if !exists || slices.Contains(dels, line) || slices.Contains(have, line) || !reachable(h) {
				continue
			}
			if b == resolveBranch(id) {
				if dirExists(s.resolveDir(id)) && !s.removeWorktree(ctx, id, s.resolveDir(id)) {
					continue
				}
			}
			dels = append(dels, line)
		}
	}
	if _, exists := readRef(candidateRef(id)); exists {
		dels = append(dels, "delete "+candidateRef(id))
	}
	if it.MergeCommit != "" {
		// Idempotent after a landing transaction that wrote them already.
		dels = append(dels, "update "+mergedRef(id)+" "+it.MergeCommit)
		if ck := s.checkpointTxn(id, it.Base); ck != "" && it.Base != "" {
			dels = append(dels, strings.TrimSuffix(ck, "\n"))
		}
	}
	return dels
}

// removeWorktree removes a landed item's worktree, keeping its
// uncommitted files under refs/chorus/kept/ first, and reports whether it
// is gone; a worktree whose files cannot be kept stays, and the queue says
// so.
func (s *Service) removeWorktree(ctx context.Context, id, dir string) bool {
	if err := s.opt.Worktrees.RemoveKeeping(ctx, id, dir, "removing a worktree"); err != nil {
		s.emit(Event{Kind: EventHeld, TaskID: id, Message: "left " + dir + " in place: " + err.Error()})
		return false
	}
	return true
}
