package merge

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/hooks"
)

// Landing: moving the target to a tested candidate and recording it.

// land moves the target to the tested candidate: a compare-and-swap when
// the target is not checked out anywhere, `merge --ff-only` in the worktree
// that has it checked out (git keeps unrelated edits and refuses overlapping
// ones), and a hold when neither is safe.
func (in *integrator) land(ctx context.Context, id string) {
	it, _ := in.q.get(id)
	co, err := in.q.targetCheckout()
	if err != nil {
		in.q.attemptFailed(ctx, id, err.Error())
		return
	}
	if co.busy != "" {
		in.q.hold(id, co.busy, fmt.Sprintf("finish or abort it, then retry %s (or land it yourself: git merge --ff-only %s)", id, candidateRef(id)))
		return
	}
	// The fence: a resolver stop either happened before this check (the
	// step refuses and nothing lands) or waits until "landed" is recorded.
	in.q.fenceMu.Lock()
	locked := true
	defer func() {
		if locked {
			in.q.fenceMu.Unlock()
		}
	}()
	if !in.q.move(id, StatusLanding, nil) {
		return
	}
	in.q.phase(PhaseLanding)
	if ok, why := in.q.pushRemote(ctx, it.Base, it.Candidate); !ok {
		in.q.remoteRefused(ctx, []string{id}, it.Base, why)
		return
	}
	cleaned := false
	if co.worktree == "" {
		txn := "update refs/heads/" + in.q.opt.Target + " " + it.Candidate + " " + it.Base + "\n" +
			"update " + mergedRef(id) + " " + it.Candidate + "\n" +
			"delete " + candidateRef(id) + "\n" + in.q.checkpointTxn(id, it.Base)
		extra := ""
		if !it.User && (it.Worktree == "" || !dirExists(it.Worktree)) && !co.branches["refs/heads/"+it.Branch] && (it.MergeRef == "" || it.MergeRef == it.Branch) {
			// Nothing else holds the branch: delete it in the same atomic
			// update, only if it still points at what landed.
			extra = "delete refs/heads/" + it.Branch + " " + it.Head + "\n"
		}
		r, err := run(ctx, in.q.opt.RepoDir, txn+extra, in.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
		if err == nil && r.rc != 0 && extra != "" {
			r, err = run(ctx, in.q.opt.RepoDir, txn, in.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
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
			in.landingFailed(ctx, id, it, msg)
			return
		}
	} else {
		cur, err := in.readTarget()
		if err != nil || cur != it.Base {
			in.landingFailed(ctx, id, it, "target moved")
			return
		}
		r, err := fastForward(ctx, co.worktree, it.Candidate)
		if err != nil || r.rc != 0 {
			why := "git refused to fast-forward"
			if err != nil {
				why = err.Error()
			} else if m := strings.TrimSpace(r.err + r.out); m != "" {
				why = firstLines(m, 8)
			}
			if now, _ := in.readTarget(); now == it.Candidate {
				// The fast-forward happened; only a hook complained.
			} else {
				in.q.move(id, StatusPending, nil)
				in.q.hold(id, fmt.Sprintf("%s is checked out in %s and the fast-forward was refused: %s", in.q.opt.Target, co.worktree, why),
					fmt.Sprintf("stash your changes to the files named, then retry %s (or run: git -C %s merge --ff-only %s); a commit of yours moves %s, which then needs %s", id, co.worktree, candidateRef(id), in.q.opt.Target, in.q.opt.AcceptCommand))
				return
			}
		}
		// The merged ref, the checkpoint and the candidate's removal go
		// into the clean-up's transaction, which follows every landing
		// (also one a crash interrupted).
	}
	at := in.q.opt.Now() // the target holds the candidate from here on
	in.q.phase(PhaseCAS)
	ok := in.recordLanded(id, it.Candidate, cleaned, at)
	in.q.fenceMu.Unlock()
	locked = false
	if ok {
		in.afterLanded(ctx, id, it.Candidate, cleaned, at)
	}
}

// fastForward moves the target checked out in dir to commit as git does,
// keeping the checkout's unrelated edits and refusing overlapping ones.
// git's automatic maintenance after a merge (a second git process, on the
// landing's path) is left to the agents' commits, which run it as well;
// the queue packs its own refs (packRefs).
func fastForward(ctx context.Context, dir, commit string) (gitRes, error) {
	return run(ctx, dir, "", "-c", "maintenance.auto=false", "merge", "--ff-only", "-q", commit)
}

// landingFailed handles a refused ref update: a target moved by someone
// else holds the queue (see holdTarget).
func (in *integrator) landingFailed(ctx context.Context, id string, it Item, msg string) {
	cur, err := in.readTarget()
	in.q.move(id, StatusPending, nil)
	if err == nil && cur != it.Base {
		if landed, _ := in.ancestor(ctx, it.Candidate, cur); landed {
			in.finishLanded(ctx, id, it.Candidate, false)
			return
		}
		in.holdTarget(ctx, id, it.Base, cur)
		return
	}
	in.q.attemptFailed(ctx, id, "landing refused: "+msg)
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
func (in *integrator) finishLanded(ctx context.Context, id, commit string, cleaned bool) {
	at := in.q.opt.Now()
	if in.recordLanded(id, commit, cleaned, at) {
		in.afterLanded(ctx, id, commit, cleaned, at)
	}
}

// recordLanded persists "landed" (at: when the target took the commit)
// and the new baseline tip.
func (in *integrator) recordLanded(id, commit string, cleaned bool, at time.Time) bool {
	return in.q.move(id, StatusLanded, func(it *Item, st *Stats) { in.landed(it, st, commit, cleaned, at) })
}

// landed is what recording a landing changes on the item and the stats.
func (in *integrator) landed(it *Item, st *Stats, commit string, cleaned bool, at time.Time) {
	manual := it.Human || it.User
	it.MergeCommit, it.LandedAt = commit, at
	it.Recoveries, it.LastError, it.Action, it.Cleaned = 0, "", "", cleaned
	if commit != "" {
		st.TargetTip = commit
		in.extendChain(it.Base, commit)
	}
	if manual {
		st.MergesManual++
	} else {
		st.MergesAuto++
	}
	st.SinceCheckpoint++
	st.Reverted = without(st.Reverted, it.TaskID)
	it.ResolvedFrom = ""
}

// afterLanded announces a landing, dated when the target took it (at),
// then cleans up and checkpoints.
func (in *integrator) afterLanded(ctx context.Context, id, commit string, cleaned bool, at time.Time) {
	in.q.phase(PhaseLanded)
	in.q.emit(Event{Kind: EventLanded, TaskID: id, Commit: commit, Time: at})
	in.runHook(ctx, hooks.PostMerge, id)
	if !cleaned {
		in.q.clean.poke()
	} else {
		in.q.packRefs(ctx, 1)
	}
	st := in.q.statsCopy()
	if in.q.opt.Checkpoints.Enabled && in.q.opt.Checkpoints.Periodic > 0 && st.SinceCheckpoint >= in.q.opt.Checkpoints.Periodic {
		if _, err := in.q.checkpoint(ctx, "periodic"); err == nil {
			in.q.mu.Lock()
			in.q.stats.SinceCheckpoint = 0
			_ = in.q.saveLocked()
			in.q.mu.Unlock()
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
