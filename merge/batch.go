package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// Batches (bors / Refinery style): when quality commands are configured
// and several plain items wait, the integrator merges them one on another into
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

// inBatchLocked: the integrator holds this item as part of a batch.
func (s *Service) inBatchLocked(id string) bool { return s.batch[id] }

type link struct {
	id                     string
	base, head, tree, cand string
}

// processBatch runs one batch. Items that cannot join the chain (a
// conflict, nothing to merge, a pre-merge hook's block) leave it and take
// the single path. Items queued while the batch is built or checked may
// join it (join.go).
func (in *integrator) processBatch(ctx context.Context, ids []string) {
	var chain []link
	var joined []string // items that joined the batch (join.go)
	defer in.q.batchOver()
	defer func() {
		// Whatever is still marked merging or testing goes back to the queue.
		for _, id := range append(ids, joined...) {
			in.q.apply(id, func(it *Item) bool { return it.Status == StatusMerging || it.Status == StatusTesting },
				StatusPending, nil)
		}
	}()
	if why := in.q.syncRemote(ctx); why != "" {
		in.soloLater(ids[0]) // the single path holds with the reason
		return
	}
	tip, err := in.readTarget()
	if err != nil {
		return
	}
	if prev := in.q.statsCopy().TargetTip; prev != "" && prev != tip {
		in.holdTarget(ctx, ids[0], prev, tip)
		return
	}
	baseTree := in.treeOf(tip)
	if baseTree == "" {
		if baseTree, err = git(ctx, in.q.opt.RepoDir, "rev-parse", tip+"^{tree}"); err != nil {
			return
		}
	}
	test := func(ctx context.Context, k int) (bool, error) {
		if err := in.q.checkoutInteg(ctx, chain[k-1].cand); err != nil {
			return false, err
		}
		_, _, err := in.quality(ctx, in.integ, chain[k-1].id, chain[k-1].cand)
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		return err == nil, nil
	}
	// The whole chain's check, restarted from its new end while items join.
	var ok bool
	for add := ids; ; {
		var more bool
		if chain, baseTree, more = in.extendBatch(ctx, tip, chain, baseTree, add); !more || len(chain) == 0 {
			return
		}
		in.q.phase(PhaseCandidate)
		run, stop := context.WithCancel(ctx)
		in.q.batchChecking(stop)
		ok, err = test(run, len(chain))
		in.q.batchChecking(nil)
		joining := run.Err() != nil // read before stop() cancels it too
		stop()
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			return
		}
		if !joining {
			in.cannotTest(chain[0].id)
			return
		}
		add = in.q.join() // stopped for items joining
		joined = append(joined, add...)
	}
	// Bisect for the longest passing prefix: good = a prefix known to
	// pass (0: the tip itself), bad = one known to fail.
	good, bad := 0, len(chain)
	if ok {
		good = len(chain)
	}
	for bad-good > 1 && good < len(chain) {
		k := (good + bad + 1) / 2
		ok, err := test(ctx, k)
		if err != nil {
			if ctx.Err() == nil {
				in.cannotTest(chain[0].id)
			}
			return
		}
		if ok {
			good = k
		} else {
			bad = k
		}
	}
	in.q.phase(PhaseTesting)
	if bad <= len(chain) && good < len(chain) {
		// The item after the passing prefix is tried alone: its own test
		// says whether it fails, and its agent hears why.
		in.soloLater(chain[good].id)
	}
	for _, l := range chain[good:] {
		// Behind the culprit: rebuilt on the new tip by a later batch.
		in.q.move(l.id, StatusPending, func(it *Item, _ *Stats) {
			it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
		})
		_ = in.refTxn(ctx, "delete "+candidateRef(l.id))
	}
	if good > 0 {
		in.landBatch(ctx, tip, chain[:good])
	}
}

// extendBatch merges ids one on another onto the end of chain (the tip
// when it is empty) and records their candidates before anything is
// tested; false when the batch cannot go on.
func (in *integrator) extendBatch(ctx context.Context, tip string, chain []link, baseTree string, ids []string) ([]link, string, bool) {
	base, n := tip, len(chain)
	if n > 0 {
		base = chain[n-1].cand
	}
	for _, id := range ids {
		it, ok := in.q.get(id)
		if !ok || it.Status != StatusPending {
			continue
		}
		if in.preMergeBlocked(ctx, it) {
			continue
		}
		in.q.mark(id, StatusMerging)
		head, ok := "", false
		if h, exists, known := in.refValue("refs/heads/" + it.Branch); known && exists {
			head, ok = h, true
		} else if h, err := git(ctx, in.q.opt.RepoDir, "rev-parse", "--verify", "-q", "refs/heads/"+it.Branch+"^{commit}"); err == nil {
			head, ok = h, true
		}
		if !ok {
			in.soloLater(id) // the single path says what is wrong
			continue
		}
		if it.Worktree != "" {
			if nh, err := in.extractLearnings(ctx, it, head); err == nil {
				head = nh
			}
		}
		mt, err := in.mergeTree(ctx, base, head)
		if err != nil || !mt.clean {
			in.soloLater(id) // a conflict goes to its agent from the single path
			continue
		}
		c, err := in.commitTree(ctx, mt.tree, []string{base, head}, mergeMessage(it), trailer(it))
		if err != nil {
			in.soloLater(id)
			continue
		}
		if mt.tree == baseTree {
			in.soloLater(id) // adds nothing on top of the batch: settled alone
			continue
		}
		chain = append(chain, link{id: id, base: base, head: head, tree: mt.tree, cand: c})
		base, baseTree = c, mt.tree
	}
	if len(chain) == n {
		return chain, baseTree, true
	}
	// The candidates are kept reachable (and findable after a crash) and
	// recorded before anything is tested.
	var txn strings.Builder
	for _, l := range chain[n:] {
		txn.WriteString("update " + candidateRef(l.id) + " " + l.cand + "\n" + in.q.checkpointTxn(l.id, tip))
	}
	if err := in.refTxn(ctx, txn.String()); err != nil {
		return chain, baseTree, false
	}
	ids, links := make([]string, 0, len(chain)-n), map[string]link{}
	for _, l := range chain[n:] {
		ids, links[l.id] = append(ids, l.id), l
	}
	for _, ok := range in.q.moveAll(ids, StatusTesting, func(it *Item, _ *Stats) {
		l := links[it.TaskID]
		it.Candidate, it.Base, it.Head, it.Tested = l.cand, l.base, l.head, false
		it.ConflictFiles = nil
	}) {
		if !ok {
			return chain, baseTree, false
		}
	}
	return chain, baseTree, true
}

// cannotTest is a batch whose check could not run (its checkout
// failed): taken again at once, it would fail again at once, round and
// round. Its first item goes the single path, which counts the attempt
// and, when they run out, holds it for a person.
func (in *integrator) cannotTest(id string) { in.soloLater(id) }

// soloLater sends an item back to the queue to be processed alone.
func (in *integrator) soloLater(id string) {
	in.q.mu.Lock()
	if in.q.solo == nil {
		in.q.solo = map[string]bool{}
	}
	in.q.solo[id] = true
	in.q.mu.Unlock()
	in.q.apply(id, func(it *Item) bool { return it.Status != StatusPending }, StatusPending, nil)
}

// landBatch moves the target from tip to the last candidate of the chain:
// the same compare-and-swap or fast-forward as a single landing, fenced
// the same way, with every item recorded as landing before and landed
// after. After a crash, each item's candidate is an ancestor of the
// target (all landed) or none is.
func (in *integrator) landBatch(ctx context.Context, tip string, chain []link) {
	last := chain[len(chain)-1]
	requeue := func(why, action string) {
		for _, l := range chain[1:] {
			in.q.move(l.id, StatusPending, func(it *Item, _ *Stats) {
				it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
			})
		}
		in.q.hold(chain[0].id, why, action)
	}
	co, err := in.q.targetCheckout()
	if err != nil {
		requeue("cannot read the worktrees: "+err.Error(), "retry "+chain[0].id)
		return
	}
	if co.busy != "" {
		requeue(co.busy, fmt.Sprintf("finish or abort it, then retry %s", chain[0].id))
		return
	}
	ids := make([]string, len(chain))
	for i, l := range chain {
		ids[i] = l.id
	}
	in.q.fenceMu.Lock()
	for _, ok := range in.q.moveAll(ids, StatusLanding, nil) {
		if !ok {
			in.q.fenceMu.Unlock()
			return
		}
	}
	in.q.phase(PhaseLanding)
	if ok, why := in.q.pushRemote(ctx, tip, last.cand); !ok {
		in.q.fenceMu.Unlock()
		in.q.remoteRefused(ctx, ids, tip, why)
		return
	}
	moved := false
	if co.worktree == "" {
		var txn strings.Builder
		txn.WriteString("update refs/heads/" + in.q.opt.Target + " " + last.cand + " " + tip + "\n")
		for _, l := range chain {
			txn.WriteString("update " + mergedRef(l.id) + " " + l.cand + "\n" + "delete " + candidateRef(l.id) + "\n")
		}
		r, err := run(ctx, in.q.opt.RepoDir, txn.String(), in.durable("update-ref", "-m", "chorus: merge batch of "+fmt.Sprint(len(chain)), "--stdin")...)
		moved = err == nil && r.rc == 0
	} else if cur, err := in.readTarget(); err == nil && cur == tip {
		r, err := fastForward(ctx, co.worktree, last.cand)
		moved = err == nil && r.rc == 0
		if !moved {
			if now, _ := in.readTarget(); now == last.cand {
				moved = true // the fast-forward happened; only a hook complained
			}
		}
	}
	if !moved {
		for _, l := range chain {
			in.q.move(l.id, StatusPending, func(it *Item, _ *Stats) {
				it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
			})
		}
		in.q.fenceMu.Unlock()
		if cur, err := in.readTarget(); err == nil && cur != tip {
			in.holdTarget(ctx, chain[0].id, tip, cur) // moved behind the service's back
		} else {
			in.soloLater(chain[0].id) // the single path counts the attempts
		}
		return
	}
	at := in.q.opt.Now()
	in.q.phase(PhaseCAS)
	cands := map[string]string{}
	for _, l := range chain {
		cands[l.id] = l.cand
	}
	landed := in.q.moveAll(ids, StatusLanded, func(it *Item, st *Stats) { in.landed(it, st, cands[it.TaskID], false, at) })
	in.q.fenceMu.Unlock()
	in.rememberTree(last.cand, last.tree)
	for i, l := range chain {
		if landed[i] {
			in.afterLanded(ctx, l.id, l.cand, false, at)
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
