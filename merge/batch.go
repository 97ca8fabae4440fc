package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// Batches (bors / Refinery style): when quality commands are configured
// and several plain items wait, the worker merges them one on another into
// a chain of candidates C1…Cn on the target's tip, runs the quality
// commands once on Cn and lands Cn: every merge of the batch in one move
// of the target. When Cn fails, the longest passing prefix is found by
// bisection (each Ck is a valid landing point: it is the tip plus the
// first k merges), landed, and the item after it goes back to the queue to
// be tried alone, where a failure is handled as any other (its agent is
// told); the items behind it are queued again. The target only ever moves
// to a candidate whose tree passed, so it stays green.

// maxBatch bounds a batch: a failing batch costs about log2(maxBatch)+1
// quality runs to find its culprit.
const maxBatch = 8

// batchable reports an item that can go into a batch: a plain branch of an
// agent's task, fresh, with nothing about it that needs the single path
// (a resolver's branch, a user's branch, a re-landing after a rollback, a
// culprit of an earlier batch).
func (s *Service) batchableLocked(it *Item) bool {
	return it.Status == StatusPending && !it.User && !it.Human && it.Candidate == "" &&
		(it.MergeRef == "" || it.MergeRef == it.Branch) && it.ResolvedFrom == "" &&
		!has(s.stats.Reverted, it.TaskID) && !s.solo[it.TaskID] && s.res.job(it.TaskID) == nil
}

// batchLocked picks the batch to run now: the runnable items in queue
// order while they are batchable, when batching applies at all.
func (s *Service) batchLocked(r []*Item) []string {
	if !s.batchingLocked() || len(r) < 2 {
		return nil
	}
	var ids []string
	for _, it := range r {
		if len(ids) == maxBatch || !s.batchableLocked(it) {
			break
		}
		ids = append(ids, it.TaskID)
	}
	if len(ids) < 2 {
		return nil
	}
	return ids
}

// batchingLocked: batches apply at all (a required check to share, no
// approval or lock-file step per item).
func (s *Service) batchingLocked() bool {
	return len(s.required) > 0 && !s.opt.Merge.RequireApproval && s.opt.Merge.LockfileCommand == ""
}

// inBatchLocked: the worker holds this item as part of a batch.
func (s *Service) inBatchLocked(id string) bool { return s.batch[id] }

type link struct {
	id                     string
	base, head, tree, cand string
}

// processBatch runs one batch. Items that cannot join the chain (a
// conflict, nothing to merge, a pre-merge hook's block) leave it and take
// the single path.
func (s *Service) processBatch(ctx context.Context, ids []string) {
	var chain []link
	defer func() {
		// Whatever is still marked merging or testing goes back to the queue.
		for _, id := range ids {
			s.apply(id, func(it *Item) bool { return it.Status == StatusMerging || it.Status == StatusTesting },
				StatusPending, nil)
		}
	}()
	if why := s.syncRemote(ctx); why != "" {
		s.soloLater(ids[0]) // the single path holds with the reason
		return
	}
	tip, err := s.readTarget()
	if err != nil {
		return
	}
	if prev := s.statsCopy().TargetTip; prev != "" && prev != tip {
		s.holdTarget(ctx, ids[0], prev, tip)
		return
	}
	base, baseTree := tip, s.in.treeOf(tip)
	if baseTree == "" {
		if baseTree, err = git(ctx, s.opt.RepoDir, "rev-parse", tip+"^{tree}"); err != nil {
			return
		}
	}
	for _, id := range ids {
		it, ok := s.get(id)
		if !ok || it.Status != StatusPending {
			continue
		}
		if s.preMergeBlocked(ctx, it) {
			continue
		}
		s.mark(id, StatusMerging)
		head, ok := "", false
		if h, exists, known := s.in.refValue("refs/heads/" + it.Branch); known && exists {
			head, ok = h, true
		} else if h, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "-q", "refs/heads/"+it.Branch+"^{commit}"); err == nil {
			head, ok = h, true
		}
		if !ok {
			s.soloLater(id) // the single path says what is wrong
			continue
		}
		if it.Worktree != "" {
			if nh, err := s.extractLearnings(ctx, it, head); err == nil {
				head = nh
			}
		}
		mt, err := s.in.mergeTree(ctx, base, head)
		if err != nil || !mt.clean {
			s.soloLater(id) // a conflict goes to its agent from the single path
			continue
		}
		c, err := s.in.commitTree(ctx, mt.tree, []string{base, head}, mergeMessage(it), trailer(it))
		if err != nil {
			s.soloLater(id)
			continue
		}
		if mt.tree == baseTree {
			s.soloLater(id) // adds nothing on top of the batch: settled alone
			continue
		}
		chain = append(chain, link{id: id, base: base, head: head, tree: mt.tree, cand: c})
		base, baseTree = c, mt.tree
	}
	if len(chain) == 0 {
		return
	}
	// The candidates are kept reachable (and findable after a crash) and
	// recorded before anything is tested.
	var txn strings.Builder
	for _, l := range chain {
		txn.WriteString("update " + candidateRef(l.id) + " " + l.cand + "\n" + s.checkpointTxn(l.id, tip))
	}
	if err := s.in.refTxn(ctx, txn.String()); err != nil {
		return
	}
	for _, l := range chain {
		l := l
		if !s.move(l.id, StatusTesting, func(it *Item, _ *Stats) {
			it.Candidate, it.Base, it.Head, it.Tested = l.cand, l.base, l.head, false
			it.ConflictFiles = nil
		}) {
			return
		}
	}
	s.phase(PhaseCandidate)
	// Bisect for the longest passing prefix: good = a prefix known to
	// pass (0: the tip itself), bad = one known to fail.
	good, bad := 0, len(chain)
	test := func(k int) (bool, error) {
		if err := s.checkoutInteg(ctx, chain[k-1].cand); err != nil {
			return false, err
		}
		_, _, err := s.quality(ctx, s.in.integ, chain[k-1].id, chain[k-1].cand)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return err == nil, nil
	}
	k := len(chain)
	for {
		ok, err := test(k)
		if err != nil {
			return
		}
		if ok {
			good = k
		} else {
			bad = k
		}
		if bad-good <= 1 || good == len(chain) {
			break
		}
		k = (good + bad + 1) / 2
	}
	s.phase(PhaseTesting)
	if bad <= len(chain) && good < len(chain) {
		// The item after the passing prefix is tried alone: its own test
		// says whether it fails, and its agent hears why.
		s.soloLater(chain[good].id)
	}
	for _, l := range chain[good:] {
		// Behind the culprit: rebuilt on the new tip by a later batch.
		s.move(l.id, StatusPending, func(it *Item, _ *Stats) {
			it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
		})
		_ = s.in.refTxn(ctx, "delete "+candidateRef(l.id))
	}
	if good > 0 {
		s.landBatch(ctx, tip, chain[:good])
	}
}

// soloLater sends an item back to the queue to be processed alone.
func (s *Service) soloLater(id string) {
	s.mu.Lock()
	if s.solo == nil {
		s.solo = map[string]bool{}
	}
	s.solo[id] = true
	s.mu.Unlock()
	s.apply(id, func(it *Item) bool { return it.Status != StatusPending }, StatusPending, nil)
}

// landBatch moves the target from tip to the last candidate of the chain:
// the same compare-and-swap or fast-forward as a single landing, fenced
// the same way, with every item recorded as landing before and landed
// after. After a crash, each item's candidate is an ancestor of the
// target (all landed) or none is.
func (s *Service) landBatch(ctx context.Context, tip string, chain []link) {
	last := chain[len(chain)-1]
	requeue := func(why, action string) {
		for _, l := range chain[1:] {
			s.move(l.id, StatusPending, func(it *Item, _ *Stats) {
				it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
			})
		}
		s.hold(chain[0].id, why, action)
	}
	co, err := s.targetCheckout()
	if err != nil {
		requeue("cannot read the worktrees: "+err.Error(), "retry "+chain[0].id)
		return
	}
	if co.busy != "" {
		requeue(co.busy, fmt.Sprintf("finish or abort it, then retry %s", chain[0].id))
		return
	}
	s.fenceMu.Lock()
	for _, l := range chain {
		if !s.move(l.id, StatusLanding, nil) {
			s.fenceMu.Unlock()
			return
		}
	}
	s.phase(PhaseLanding)
	if ok, why := s.pushRemote(ctx, tip, last.cand); !ok {
		s.fenceMu.Unlock()
		ids := make([]string, len(chain))
		for i, l := range chain {
			ids[i] = l.id
		}
		s.remoteRefused(ctx, ids, tip, why)
		return
	}
	moved := false
	if co.worktree == "" {
		var txn strings.Builder
		txn.WriteString("update refs/heads/" + s.opt.Target + " " + last.cand + " " + tip + "\n")
		for _, l := range chain {
			txn.WriteString("update " + mergedRef(l.id) + " " + l.cand + "\n" + "delete " + candidateRef(l.id) + "\n")
		}
		r, err := run(ctx, s.opt.RepoDir, txn.String(), s.in.durable("update-ref", "-m", "chorus: merge batch of "+fmt.Sprint(len(chain)), "--stdin")...)
		moved = err == nil && r.rc == 0
	} else if cur, err := s.readTarget(); err == nil && cur == tip {
		r, err := run(ctx, co.worktree, "", "merge", "--ff-only", "-q", last.cand)
		moved = err == nil && r.rc == 0
		if !moved {
			if now, _ := s.readTarget(); now == last.cand {
				moved = true // the fast-forward happened; only a hook complained
			}
		}
	}
	if !moved {
		for _, l := range chain {
			s.move(l.id, StatusPending, func(it *Item, _ *Stats) {
				it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
			})
		}
		s.fenceMu.Unlock()
		if cur, err := s.readTarget(); err == nil && cur != tip {
			s.holdTarget(ctx, chain[0].id, tip, cur) // moved behind the service's back
		} else {
			s.soloLater(chain[0].id) // the single path counts the attempts
		}
		return
	}
	s.phase(PhaseCAS)
	landed := make([]bool, len(chain))
	for i, l := range chain {
		landed[i] = s.recordLanded(l.id, l.cand, false)
	}
	s.fenceMu.Unlock()
	s.in.rememberTree(last.cand, last.tree)
	for i, l := range chain {
		if landed[i] {
			s.afterLanded(ctx, l.id, l.cand, false)
		}
	}
}

// mergeMessage is a landing's subject. The title is the task's, written by
// whoever filed it: only its first line, with no escape sequence or control
// byte, goes into history, which `git log` prints to terminals.
func mergeMessage(it Item) string {
	msg := "Merge " + it.Branch
	if t := gitx.OneLine(it.Title); t != "" {
		msg += ": " + t
	}
	return msg
}

func trailer(it Item) string {
	t := "Chorus-Task: " + it.TaskID
	if a := gitx.OneLine(it.Agent); a != "" {
		t += "\nChorus-Agent: " + a
	}
	return t
}
