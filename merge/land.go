package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/hooks"
)

// Landing: moving the target to a tested candidate and recording it.

// land moves the target to the tested candidate: a compare-and-swap when
// the target is not checked out anywhere, `merge --ff-only` in the worktree
// that has it checked out (git keeps unrelated edits and refuses overlapping
// ones), and a hold when neither is safe.
func (s *Service) land(ctx context.Context, id string) {
	it, _ := s.get(id)
	co, err := s.targetCheckout()
	if err != nil {
		s.attemptFailed(ctx, id, err.Error())
		return
	}
	if co.busy != "" {
		s.hold(id, co.busy, fmt.Sprintf("finish or abort it, then retry %s (or land it yourself: git merge --ff-only %s)", id, candidateRef(id)))
		return
	}
	// The fence: a resolver stop either happened before this check (the
	// step refuses and nothing lands) or waits until "landed" is recorded.
	s.fenceMu.Lock()
	locked := true
	defer func() {
		if locked {
			s.fenceMu.Unlock()
		}
	}()
	if !s.move(id, StatusLanding, nil) {
		return
	}
	s.phase(PhaseLanding)
	if ok, why := s.pushRemote(ctx, it.Base, it.Candidate); !ok {
		s.remoteRefused(ctx, []string{id}, it.Base, why)
		return
	}
	cleaned := false
	if co.worktree == "" {
		txn := "update refs/heads/" + s.opt.Target + " " + it.Candidate + " " + it.Base + "\n" +
			"update " + mergedRef(id) + " " + it.Candidate + "\n" +
			"delete " + candidateRef(id) + "\n" + s.checkpointTxn(id, it.Base)
		extra := ""
		if !it.User && (it.Worktree == "" || !dirExists(it.Worktree)) && !co.branches["refs/heads/"+it.Branch] && (it.MergeRef == "" || it.MergeRef == it.Branch) {
			// Nothing else holds the branch: delete it in the same atomic
			// update, only if it still points at what landed.
			extra = "delete refs/heads/" + it.Branch + " " + it.Head + "\n"
		}
		r, err := run(ctx, s.opt.RepoDir, txn+extra, s.in.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
		if err == nil && r.rc != 0 && extra != "" {
			r, err = run(ctx, s.opt.RepoDir, txn, s.in.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
		} else if err == nil && r.rc == 0 && extra != "" {
			cleaned = true
		}
		if err != nil || r.rc != 0 {
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = firstLines(r.err, 3)
			}
			s.landingFailed(ctx, id, it, msg)
			return
		}
	} else {
		cur, err := s.readTarget()
		if err != nil || cur != it.Base {
			s.landingFailed(ctx, id, it, "target moved")
			return
		}
		r, err := run(ctx, co.worktree, "", "merge", "--ff-only", "-q", it.Candidate)
		if err != nil || r.rc != 0 {
			why := "git refused to fast-forward"
			if err != nil {
				why = err.Error()
			} else if m := strings.TrimSpace(r.err + r.out); m != "" {
				why = firstLines(m, 8)
			}
			if now, _ := s.readTarget(); now == it.Candidate {
				// The fast-forward happened; only a hook complained.
			} else {
				s.move(id, StatusPending, nil)
				s.hold(id, fmt.Sprintf("%s is checked out in %s and the fast-forward was refused: %s", s.opt.Target, co.worktree, why),
					fmt.Sprintf("stash your changes to the files named, then retry %s (or run: git -C %s merge --ff-only %s); a commit of yours moves %s, which then needs %s", id, co.worktree, candidateRef(id), s.opt.Target, s.opt.AcceptCommand))
				return
			}
		}
		// The merged ref, the checkpoint and the candidate's removal go
		// into the clean-up's transaction, which follows every landing
		// (also one a crash interrupted).
	}
	s.phase(PhaseCAS)
	ok := s.recordLanded(id, it.Candidate, cleaned)
	s.fenceMu.Unlock()
	locked = false
	if ok {
		s.afterLanded(ctx, id, it.Candidate, cleaned)
	}
}

// landingFailed handles a refused ref update: a target moved by someone
// else holds the queue (see holdTarget).
func (s *Service) landingFailed(ctx context.Context, id string, it Item, msg string) {
	cur, err := s.readTarget()
	s.move(id, StatusPending, nil)
	if err == nil && cur != it.Base {
		if in, _ := s.in.ancestor(ctx, it.Candidate, cur); in {
			s.finishLanded(ctx, id, it.Candidate, false)
			return
		}
		s.holdTarget(ctx, id, it.Base, cur)
		return
	}
	s.attemptFailed(ctx, id, "landing refused: "+msg)
}

// chainOrder puts the items of a batch caught landing in the order of its
// chain (an item built on another's candidate after it), so settling them
// walks the target's baseline forward to the batch's end.
func chainOrder(items []Item) []Item {
	cand := map[string]bool{}
	for _, it := range items {
		if it.Candidate != "" {
			cand[it.Candidate] = true
		}
	}
	var out []Item
	done := map[int]bool{}
	for len(out) < len(items) {
		progress := false
		for i, it := range items {
			if done[i] {
				continue
			}
			if cand[it.Base] {
				continue // its base lands first
			}
			out = append(out, it)
			done[i] = true
			delete(cand, it.Candidate)
			progress = true
		}
		if !progress { // a cycle cannot come from git; keep the rest as they are
			for i, it := range items {
				if !done[i] {
					out = append(out, it)
					done[i] = true
				}
			}
		}
	}
	return out
}

// lostTasks lists landed tasks whose merge commit is not reachable from tip.
func (s *Service) lostTasks(ctx context.Context, tip string) []string {
	s.mu.Lock()
	var landed []Item
	for _, it := range s.items {
		if it.Status == StatusLanded && it.MergeCommit != "" {
			landed = append(landed, *it)
		}
	}
	s.mu.Unlock()
	var lost []string
	for _, it := range landed {
		if in, err := s.in.ancestor(ctx, it.MergeCommit, tip); err == nil && !in {
			lost = append(lost, it.TaskID)
		}
	}
	return lost
}

// finishLanded records the landing, then removes the task's worktree and
// branch (only now that their commits are reachable from the target).
func (s *Service) finishLanded(ctx context.Context, id, commit string, cleaned bool) {
	if s.recordLanded(id, commit, cleaned) {
		s.afterLanded(ctx, id, commit, cleaned)
	}
}

// recordLanded persists "landed" and the new baseline tip.
func (s *Service) recordLanded(id, commit string, cleaned bool) bool {
	return s.move(id, StatusLanded, func(it *Item, st *Stats) {
		manual := it.Human || it.User
		it.MergeCommit, it.LandedAt = commit, s.opt.Now()
		it.Recoveries, it.LastError, it.Action, it.Cleaned = 0, "", "", cleaned
		if commit != "" {
			st.TargetTip = commit
			s.in.extendChain(it.Base, commit)
		}
		if manual {
			st.MergesManual++
		} else {
			st.MergesAuto++
		}
		st.SinceCheckpoint++
		st.Reverted = without(st.Reverted, id)
		it.ResolvedFrom = ""
	})
}

// afterLanded announces a landing, then cleans up and checkpoints.
func (s *Service) afterLanded(ctx context.Context, id, commit string, cleaned bool) {
	s.phase(PhaseLanded)
	s.emit(Event{Kind: EventLanded, TaskID: id, Commit: commit})
	s.runHook(ctx, hooks.PostMerge, id)
	if !cleaned {
		s.clean.poke()
	} else {
		s.packRefs(ctx, 1)
	}
	st := s.statsCopy()
	if s.opt.Checkpoints.Enabled && s.opt.Checkpoints.Periodic > 0 && st.SinceCheckpoint >= s.opt.Checkpoints.Periodic {
		if _, err := s.checkpoint(ctx, "periodic"); err == nil {
			s.mu.Lock()
			s.stats.SinceCheckpoint = 0
			_ = s.saveLocked()
			s.mu.Unlock()
		}
	}
}

// packRefs packs the refs every Options.PackRefsEvery landings, so they do
// not pile up as loose files (git gc would, much later). Concurrent ref
// updates (agents committing) wait on git's ref locks, which git retries.
func (s *Service) packRefs(ctx context.Context, landed int) {
	s.mu.Lock()
	s.sincePack += landed
	due := s.sincePack >= s.opt.PackRefsEvery
	if due {
		s.sincePack = 0
	}
	s.mu.Unlock()
	if due {
		_, _ = run(ctx, s.opt.RepoDir, "", "pack-refs", "--all")
	}
}

func without(list []string, x string) []string {
	var out []string
	for _, v := range list {
		if v != x {
			out = append(out, v)
		}
	}
	return out
}
