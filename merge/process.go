package merge

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// process takes one item as far as it can go: landed, or parked in a state
// that says why (conflict handed to an agent, waiting for a person, …).
func (s *Service) process(ctx context.Context, id string) {
	it, ok := s.get(id)
	if !ok {
		return
	}
	s.mu.Lock()
	delete(s.solo, id) // taken alone now
	s.mu.Unlock()
	if s.preMergeBlocked(ctx, it) {
		return
	}
	s.phase(PhasePrecheck)
	s.mark(id, StatusMerging)
	mergeRef := it.MergeRef
	if mergeRef == "" {
		mergeRef = it.Branch
	}
	tip, tipTree, head, err := s.tips(ctx, mergeRef)
	if err != nil {
		if errors.Is(err, errNoTarget) {
			s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
			s.pause(err.Error(), nil)
			return
		}
		s.fail(id, err.Error(), "the branch is gone; re-create it or drop the task")
		return
	}
	if it.Candidate != "" && it.Base != tip {
		if in, _ := s.ancestor(ctx, it.Candidate, tip); in {
			// Someone fast-forwarded to it (the user, after a hold).
			s.finishLanded(ctx, id, it.Candidate, false)
			return
		}
	}
	if prev := s.statsCopy().TargetTip; prev != "" && prev != tip {
		// Moved behind the service's back: hold rather than build on (and
		// blame this task for) a tip nobody verified.
		s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
		s.holdTarget(ctx, id, prev, tip)
		return
	}
	if err := ctx.Err(); err != nil {
		s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
		return
	}
	// A candidate from an earlier attempt is reused when nothing moved
	// (after approval, a hold, or a restart): it is the tested tree.
	if it.Candidate != "" {
		if it.Base == tip && it.Head == head {
			s.afterCandidate(ctx, id)
			return
		}
	}
	if !it.User && it.Worktree != "" && (it.MergeRef == "" || it.MergeRef == it.Branch) {
		if nh, err := s.extractLearnings(ctx, it, head); err != nil {
			s.attemptFailed(ctx, id, "learning extraction: "+err.Error())
			return
		} else {
			head = nh
		}
	}
	base := tip
	if s.wasReverted(id) {
		b, err := s.reapply(ctx, it, tip, head)
		if err != nil {
			s.attemptFailed(ctx, id, err.Error())
			return
		}
		base = b
	}
	mt, err := s.mergeTree(ctx, base, head)
	if err != nil {
		s.attemptFailed(ctx, id, err.Error())
		return
	}
	if !mt.clean {
		s.conflict(ctx, id, tip, head, mt)
		return
	}
	if mt.tree == tipTree && base == tip {
		// The branch adds nothing the target lacks (merged by hand earlier).
		s.finishLanded(ctx, id, "", true)
		return
	}
	c, err := s.commitTree(ctx, mt.tree, []string{base, head}, mergeMessage(it), trailer(it))
	if err != nil {
		s.attemptFailed(ctx, id, err.Error())
		return
	}
	s.rememberTree(c, mt.tree)
	// With nothing to run the candidate is as tested as it gets and lands
	// right away: its ref and the pre-merge checkpoint go into the landing
	// transaction instead of a separate update.
	tested := len(s.required) == 0 && s.opt.Merge.LockfileCommand == ""
	if !tested {
		txn := "update " + candidateRef(id) + " " + c + "\n" + s.checkpointTxn(id, tip)
		if err := s.refTxn(ctx, txn); err != nil {
			s.attemptFailed(ctx, id, err.Error())
			return
		}
	}
	if !s.step(id, func(it *Item, _ *Stats) {
		it.Status, it.Candidate, it.Base, it.Head, it.Tested = StatusTesting, c, tip, head, tested
		it.ConflictFiles = nil
	}) {
		return
	}
	s.phase(PhaseCandidate)
	s.afterCandidate(ctx, id)
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

// extendChain records a landing from base to commit. The chain holds the
// merges this service landed one on another: while the target is still at
// the chain's tip, each of them is reachable from it without asking git.
// Callers hold mu.
func (s *Service) extendChain(base, commit string) {
	if s.chain == nil || s.chainTip != base {
		s.chain = map[string]bool{}
	}
	s.chain[commit] = true
	s.chainTip = commit
}

// onChain reports that commit is known to be reachable from tip.
func (s *Service) onChain(commit, tip string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return tip != "" && tip == s.chainTip && s.chain[commit]
}

// rememberTree notes the tree of a commit this service made: after it
// lands, the next merge needs the target's tree without asking git.
func (s *Service) rememberTree(commit, tree string) {
	s.mu.Lock()
	s.lastCommit, s.lastTree = commit, tree
	s.mu.Unlock()
}

func (s *Service) treeOf(commit string) string {
	s.mu.Lock()
	if commit == s.lastCommit {
		defer s.mu.Unlock()
		return s.lastTree
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if c, err := s.objs.Commit(ctx, commit); err == nil {
		return c.Tree
	}
	return ""
}

// tips resolves the target tip, its tree and the branch tip in one call.
func (s *Service) tips(ctx context.Context, mergeRef string) (tip, tipTree, head string, err error) {
	ref := mergeRef
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	t := "refs/heads/" + s.opt.Target
	// In-process when both refs read plainly (the tree from the object
	// store, or remembered when this service made the commit).
	if tip, ok, known := s.refValue(t); known && ok {
		if tree := s.treeOf(tip); tree != "" {
			if h, ok, known := s.refValue(ref); known && ok {
				return tip, tree, h, nil
			}
		}
	}
	out, e := git(ctx, s.opt.RepoDir, "rev-parse", t, t+"^{tree}", ref+"^{commit}")
	if e == nil {
		f := strings.Fields(out)
		if len(f) == 3 {
			return f[0], f[1], f[2], nil
		}
	}
	if _, e2 := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "-q", t); e2 != nil {
		return "", "", "", fmt.Errorf("%w: %s", errNoTarget, s.opt.Target)
	}
	return "", "", "", fmt.Errorf("branch %s not found", mergeRef)
}

type mergeResult struct {
	clean     bool
	tree      string
	files     []string
	types     []string // stable conflict types, e.g. "CONFLICT (contents)"
	messages  []string
	structure bool // a conflict other than content
}

// mergeTree computes the merge in the integration worktree (the drivers'
// temp files go there) without touching any index or file.
func (s *Service) mergeTree(ctx context.Context, base, head string) (mergeResult, error) {
	// Branches that change different paths merge in-process (the same
	// tree git would write); anything else asks git.
	if mb, err := s.objs.MergeBase(ctx, base, head); err == nil {
		if tree, ok, err := s.objs.MergeTrees(ctx, mb, base, head); err == nil && ok {
			return mergeResult{tree: tree, clean: true}, nil
		}
	}
	r, err := run(ctx, s.integ, "", "merge-tree", "--write-tree", "-z", "--name-only", base, head)
	if err != nil {
		return mergeResult{}, err
	}
	if r.rc != 0 && r.rc != 1 {
		return mergeResult{}, fmt.Errorf("git merge-tree: exit %d: %s", r.rc, firstLines(r.err, 4))
	}
	return parseMergeTree(r.out, r.rc == 0), nil
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
