package merge

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/hooks"
)

// process takes one item as far as it can go: landed, or parked in a state
// that says why (conflict handed to an agent, waiting for a person, …).
func (in *integrator) process(ctx context.Context, id string) {
	it, ok := in.q.get(id)
	if !ok {
		return
	}
	in.q.mu.Lock()
	delete(in.q.solo, id) // taken alone now
	in.q.mu.Unlock()
	if in.preMergeBlocked(ctx, it) {
		return
	}
	in.q.phase(PhasePrecheck)
	in.q.mark(id, StatusMerging)
	if why := in.q.syncRemote(ctx); why != "" {
		in.q.move(id, StatusPending, nil)
		in.q.hold(id, why, fmt.Sprintf("then retry %s", id))
		return
	}
	mergeRef := it.MergeRef
	if mergeRef == "" {
		mergeRef = it.Branch
	}
	tip, tipTree, head, err := in.tips(ctx, mergeRef)
	if err != nil {
		if errors.Is(err, errNoTarget) {
			in.q.move(id, StatusPending, nil)
			in.q.pause(err.Error(), nil)
			return
		}
		in.q.fail(id, err.Error(), "the branch is gone; re-create it or drop the task")
		return
	}
	if it.Candidate != "" && it.Base != tip {
		if landed, _ := in.ancestor(ctx, it.Candidate, tip); landed {
			// Someone fast-forwarded to it (the user, after a hold).
			in.finishLanded(ctx, id, it.Candidate, false)
			return
		}
	}
	if prev := in.q.statsCopy().TargetTip; prev != "" && prev != tip {
		// Moved behind the service's back: hold rather than build on (and
		// blame this task for) a tip nobody verified.
		in.q.move(id, StatusPending, nil)
		in.holdTarget(ctx, id, prev, tip)
		return
	}
	if err := ctx.Err(); err != nil {
		in.q.move(id, StatusPending, nil)
		return
	}
	// A candidate from an earlier attempt is reused when nothing moved
	// (after approval, a hold, or a restart): it is the tested tree.
	if it.Candidate != "" {
		if it.Base == tip && it.Head == head {
			in.afterCandidate(ctx, id)
			return
		}
	}
	if !it.User && it.Worktree != "" && (it.MergeRef == "" || it.MergeRef == it.Branch) {
		if nh, err := in.extractLearnings(ctx, it, head); err != nil {
			in.q.attemptFailed(ctx, id, "learning extraction: "+err.Error())
			return
		} else {
			head = nh
		}
	}
	base := tip
	if in.q.wasReverted(id) {
		b, err := in.q.reapply(ctx, it, tip, head)
		if err != nil {
			in.q.attemptFailed(ctx, id, err.Error())
			return
		}
		base = b
	}
	mt, err := in.mergeTree(ctx, base, head)
	if err != nil {
		in.q.attemptFailed(ctx, id, err.Error())
		return
	}
	if !mt.clean {
		in.conflict(ctx, id, tip, tipTree, head, mt)
		return
	}
	in.candidate(ctx, id, it, tip, tipTree, base, head, mt.tree)
}

// conflict records a merge-tree conflict and hands it to the resolvers;
// a branch that rebases cleanly onto tip comes back as a tree to merge.
func (in *integrator) conflict(ctx context.Context, id, tip, tipTree, head string, mt mergeResult) {
	it, _ := in.q.get(id)
	if it.Deferrals == 0 {
		// One conflict however many times the medium tier retries it.
		in.q.mu.Lock()
		in.q.stats.Conflicts++
		in.q.mu.Unlock()
	}
	in.q.move(id, StatusConflict, func(it *Item, _ *Stats) {
		it.ConflictFiles = mt.files
		it.LastError = "conflicts: " + strings.Join(mt.messages, "; ")
	})
	it, _ = in.q.get(id)
	if it.Deferrals == 0 {
		in.q.emit(Event{Kind: EventConflict, TaskID: id, Files: mt.files, Message: strings.Join(mt.messages, "\n")})
		in.runHook(ctx, hooks.OnConflict, id)
	}
	if tree := in.q.res.conflict(ctx, it, tip, head, mt); tree != "" && in.q.move(id, StatusMerging, nil) {
		in.candidate(ctx, id, it, tip, tipTree, tip, head, tree)
	}
}

// candidate writes the merge commit of tree on base and head (base is the
// target tip, or a re-applied revert on it), keeps it, and takes it to the
// quality gate.
func (in *integrator) candidate(ctx context.Context, id string, it Item, tip, tipTree, base, head, tree string) {
	if tree == tipTree && base == tip {
		// The branch adds nothing the target lacks (merged by hand earlier).
		in.finishLanded(ctx, id, "", true)
		return
	}
	c, err := in.commitTree(ctx, tree, []string{base, head}, mergeMessage(it), trailer(it))
	if err != nil {
		in.q.attemptFailed(ctx, id, err.Error())
		return
	}
	in.rememberTree(c, tree)
	// With nothing to run the candidate is as tested as it gets and lands
	// right away: its ref and the pre-merge checkpoint go into the landing
	// transaction instead of a separate update.
	tested := len(in.q.required) == 0 && in.q.opt.Merge.LockfileCommand == ""
	if !tested {
		txn := "update " + candidateRef(id) + " " + c + "\n" + in.q.checkpointTxn(id, tip)
		if err := in.refTxn(ctx, txn); err != nil {
			in.q.attemptFailed(ctx, id, err.Error())
			return
		}
	}
	set := func(it *Item) {
		it.Candidate, it.Base, it.Head, it.Tested = c, tip, head, tested
		it.ConflictFiles = nil
	}
	var ok bool
	if tested {
		// Nothing to run before the landing, whose own save ("landing",
		// with all of this) comes next: a crash before it finds the item
		// pending and builds it again, as it would find it "testing".
		ok = in.q.markWith(id, StatusTesting, set)
	} else {
		ok = in.q.move(id, StatusTesting, func(it *Item, _ *Stats) { set(it) })
	}
	if !ok {
		return
	}
	in.q.phase(PhaseCandidate)
	in.afterCandidate(ctx, id)
}

// checkpointTxn is the pre-merge checkpoint (the tip before this merge) as
// an update-ref --stdin line, when configured.
func (s *Service) checkpointTxn(id, tip string) string {
	if s.opt.Checkpoints.Enabled && s.opt.Checkpoints.BeforeMerge {
		return "update " + CheckpointPrefix + "pre-merge-" + id + " " + tip + "\n"
	}
	return ""
}

var errNoTarget = errors.New("target branch not found")

type mergeResult struct {
	clean     bool
	tree      string
	files     []string
	types     []string // stable conflict types, e.g. "CONFLICT (contents)"
	messages  []string
	structure bool // a conflict other than content
}

// parseMergeTree reads `merge-tree --write-tree -z --name-only` output:
// tree NUL, conflicted paths NUL-terminated, an empty field, then messages
// as <npaths> NUL <paths…> NUL <type> NUL <text> NUL.
func parseMergeTree(out string, clean bool) mergeResult {
	f := strings.Split(out, "\x00")
	res := mergeResult{clean: clean}
	if len(f) == 0 {
		return res
	}
	res.tree = strings.TrimSpace(f[0])
	i := 1
	seen := map[string]bool{}
	for ; i < len(f) && f[i] != ""; i++ {
		if !seen[f[i]] {
			seen[f[i]] = true
			res.files = append(res.files, f[i])
		}
	}
	i++
	for i < len(f) {
		var n int
		if _, err := fmt.Sscanf(f[i], "%d", &n); err != nil {
			break
		}
		i += 1 + n
		if i+1 >= len(f) {
			break
		}
		typ, text := f[i], f[i+1]
		i += 2
		if strings.HasPrefix(typ, "CONFLICT") {
			res.types = append(res.types, typ)
			res.messages = append(res.messages, text)
			if typ != "CONFLICT (contents)" {
				res.structure = true
			}
		}
	}
	return res
}
