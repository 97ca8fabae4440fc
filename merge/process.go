package merge

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/chorus-dev/chorus/gitx"

	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/proc"
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

// afterCandidate tests the candidate, waits for approval if configured,
// then lands it.
func (s *Service) afterCandidate(ctx context.Context, id string) {
	it, _ := s.get(id)
	if !it.Tested && len(s.required) == 0 && s.opt.Merge.LockfileCommand == "" {
		it.Tested = true // nothing to run (a candidate from before a config change)
	}
	if !it.Tested {
		s.mark(id, StatusTesting)
		if err := s.checkoutInteg(ctx, it.Candidate); err != nil {
			s.attemptFailed(ctx, id, err.Error())
			return
		}
		if s.opt.Merge.LockfileCommand != "" {
			if err := s.regenerateLockfiles(ctx, id); err != nil {
				s.attemptFailed(ctx, id, err.Error())
				return
			}
			it, _ = s.get(id)
		}
		if name, out, err := s.quality(ctx, s.integ, it.TaskID, it.Candidate); err != nil {
			if ctx.Err() != nil {
				s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
				return
			}
			s.qualityFailed(ctx, id, name, out)
			return
		}
		if !s.step(id, func(it *Item, _ *Stats) { it.Tested = true }) {
			return
		}
	}
	s.phase(PhaseTesting)
	if s.opt.Merge.RequireApproval && !it.Approved {
		s.step(id, func(it *Item, _ *Stats) {
			it.Status = StatusWaitingApproval
			it.Action = "review it (chorus task diff " + id + ", or v in the merge view) and approve it to land (chorus merge approve " + id + ", or m there)"
		})
		s.emit(Event{Kind: EventWaitingApproval, TaskID: id, Commit: it.Candidate})
		return
	}
	s.land(ctx, id)
}

// quality runs the required commands in dir; the error names the first
// that failed, with its output.
func (s *Service) quality(ctx context.Context, dir, task, commit string) (string, string, error) {
	env := []string{"CHORUS_TASK_ID=" + task, "CHORUS_MERGE_CANDIDATE=" + commit}
	for _, q := range s.required {
		r, err := proc.Shell(ctx, q.Command, dir, env, q.Timeout())
		if err != nil || r.ExitCode != 0 {
			out := tail(string(r.Stdout)+string(r.Stderr), 4000)
			if err != nil {
				out = err.Error() + "\n" + out
			}
			name := q.Name
			if name == "" {
				name = q.Command
			}
			return name, out, fmt.Errorf("%s failed", name)
		}
	}
	return "", "", nil
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

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
	if !s.step(id, func(it *Item, _ *Stats) { it.Status = StatusLanding }) {
		return
	}
	s.phase(PhaseLanding)
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
		r, err := run(ctx, s.opt.RepoDir, txn+extra, s.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
		if err == nil && r.rc != 0 && extra != "" {
			r, err = run(ctx, s.opt.RepoDir, txn, s.durable("update-ref", "-m", "chorus: merge "+id, "--stdin")...)
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
				s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
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
	s.step(id, func(it *Item, _ *Stats) { it.Status = StatusPending })
	if err == nil && cur != it.Base {
		if in, _ := s.ancestor(ctx, it.Candidate, cur); in {
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
		if in, err := s.ancestor(ctx, it.MergeCommit, tip); err == nil && !in {
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
	return s.step(id, func(it *Item, st *Stats) {
		manual := it.Human || it.User
		it.Status, it.MergeCommit, it.LandedAt = StatusLanded, commit, s.opt.Now()
		it.Recoveries, it.LastError, it.Action, it.Cleaned = 0, "", "", cleaned
		if commit != "" {
			st.TargetTip = commit
			s.extendChain(it.Base, commit)
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
		s.pokeCleaner()
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
		landedHere := it.MergeCommit != "" && it.Head != "" && s.onChain(it.MergeCommit, tip)
		reachable[i] = func(h string) bool {
			if landedHere && h == it.Head {
				return true // the landed merge's second parent
			}
			in, _ := s.ancestor(ctx, h, target)
			return in
		}
	}
	// The branch is in; uncommitted files (an agent's last edits,
	// untracked files) are kept under refs/chorus/kept/ first, and the
	// worktree stays if they cannot be.
	var dirs []string
	var owners []string
	for i, it := range items {
		if it.User || it.Worktree == "" || !dirExists(it.Worktree) {
			continue
		}
		head := gitx.WorktreeHead(it.Worktree)
		if head == "" {
			head, _ = git(ctx, it.Worktree, "rev-parse", "HEAD")
		}
		if head != "" && reachable[i](head) {
			dirs, owners = append(dirs, it.Worktree), append(owners, it.TaskID)
		}
	}
	done, errs := gitx.RemoveCleanWorktrees(ctx, dirs, isScratchpad)
	for k, dir := range dirs {
		switch {
		case !done[k]:
			s.removeWorktree(ctx, owners[k], dir)
		case errs[k] != nil:
			s.emit(Event{Kind: EventHeld, TaskID: owners[k], Message: "left " + dir + " in place: " + errs[k].Error()})
		}
	}
	var dels []string
	for i, it := range items {
		dels = append(dels, s.cleanupRefs(ctx, it, reachable[i], dels)...)
	}
	if len(dels) > 0 {
		if err := s.refs.Apply(ctx, dels); err != nil {
			// One of them moved meanwhile: apply the others one by one.
			for _, d := range dels {
				_ = s.refs.Apply(ctx, []string{d})
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
		if h, exists, known := s.refValue(ref); known {
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

func isScratchpad(rel string) bool { return rel == ScratchpadPath }

// removeWorktree removes a landed item's worktree, keeping its
// uncommitted files under refs/chorus/kept/ first (gitx.RemoveWorktree),
// and reports whether it is gone; a worktree whose files cannot be kept
// stays, and the queue says so.
func (s *Service) removeWorktree(ctx context.Context, id, dir string) bool {
	// A clean worktree, the usual case, holds the worktree lock only to
	// unregister it, not while its files are checked and deleted.
	done, err := gitx.RemoveCleanWorktree(ctx, dir, isScratchpad, false)
	if !done {
		gitx.WorktreeMu.Lock()
		err = gitx.RemoveWorktree(ctx, gitx.KeepOptions{Repo: s.opt.RepoDir, Task: id, Worktree: dir, Why: "removing a worktree", NotWork: isScratchpad})
		gitx.WorktreeMu.Unlock()
	}
	if err != nil {
		s.emit(Event{Kind: EventHeld, TaskID: id, Message: "left " + dir + " in place: " + err.Error()})
		return false
	}
	return true
}

// hold parks a tested candidate that cannot land now, with what to do.
func (s *Service) hold(id, why, action string) {
	s.step(id, func(it *Item, _ *Stats) {
		it.Status, it.LastError, it.Action = StatusHeld, why, action
	})
	s.emit(Event{Kind: EventHeld, TaskID: id, Message: why + " — " + action})
}

// fail marks an item failed (it needs a person to fix something outside
// the merge, e.g. a missing branch).
func (s *Service) fail(id, why, action string) {
	s.step(id, func(it *Item, _ *Stats) {
		it.Status, it.LastError, it.Action = StatusFailed, why, action
	})
	s.emit(Event{Kind: EventFailed, TaskID: id, Message: why})
}

// waitHuman hands an item to a person: it stays queued (also across
// restarts) until Retry, Drop or a rollback.
func (s *Service) waitHuman(id, why, explanation, action string, files []string) {
	s.waitHumanWhen(id, nil, why, explanation, action, files)
}

// waitHumanWhen is waitHuman applied only while ok holds for the item.
func (s *Service) waitHumanWhen(id string, ok func(*Item) bool, why, explanation, action string, files []string) {
	if !s.stepWhen(id, ok, func(it *Item, _ *Stats) {
		it.Status, it.LastError, it.Action = StatusWaitingHuman, why, action
		if explanation != "" {
			it.Explanation = explanation
		}
		if files != nil {
			it.ConflictFiles = files
		}
	}) {
		return
	}
	s.emit(Event{Kind: EventWaitingHuman, TaskID: id, Message: why, Files: files})
}

// attemptFailed counts a failed attempt; the item goes to the back of the
// queue, or to a person after the configured number of attempts.
func (s *Service) attemptFailed(ctx context.Context, id, why string) {
	s.attemptFailedWhen(ctx, id, nil, why)
}

// attemptFailedWhen is attemptFailed applied only while ok holds.
func (s *Service) attemptFailedWhen(ctx context.Context, id string, ok func(*Item) bool, why string) {
	it, _ := s.get(id)
	if ctx.Err() != nil {
		s.stepWhen(id, ok, func(it *Item, _ *Stats) { it.Status = StatusPending })
		return
	}
	if it.Retries+1 >= s.maxTries {
		s.stepWhen(id, ok, func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHumanWhen(id, ok, why, "", s.manualAction(it), nil)
		return
	}
	if !s.stepWhen(id, ok, func(it *Item, st *Stats) {
		it.Retries++
		it.Status, it.LastError = StatusPending, why
		it.Seq = st.NextSeq
		st.NextSeq++
	}) {
		return
	}
	s.emit(Event{Kind: EventFailed, TaskID: id, Message: why})
}

func (s *Service) manualAction(it Item) string {
	where := it.Worktree
	if where == "" {
		where = "a checkout of " + it.Branch
	}
	return fmt.Sprintf("in %s run `git merge %s`, resolve, make the quality commands pass, commit, then retry %s", where, s.opt.Target, it.TaskID)
}

// regenerateLockfiles reruns the configured lock file command on the
// checked-out candidate when the branch touched a lock file (the lock
// driver kept one side), and amends the candidate with the result.
func (s *Service) regenerateLockfiles(ctx context.Context, id string) error {
	it, _ := s.get(id)
	args := append([]string{"diff", "--name-only", it.Base + "..." + it.Head, "--"}, lockPathspecs()...)
	out, err := git(ctx, s.opt.RepoDir, args...)
	if err != nil || strings.TrimSpace(out) == "" {
		return err
	}
	r, err := proc.Shell(ctx, s.opt.Merge.LockfileCommand, s.integ, nil, gitTimeout)
	if err != nil || r.ExitCode != 0 {
		return fmt.Errorf("lock file command failed: %s", tail(string(r.Stderr)+string(r.Stdout), 2000))
	}
	files := strings.Fields(out)
	if _, err := git(ctx, s.integ, append([]string{"add", "-A", "--"}, files...)...); err != nil {
		return err
	}
	tree, err := git(ctx, s.integ, "write-tree")
	if err != nil {
		return err
	}
	cur, err := git(ctx, s.opt.RepoDir, "rev-parse", it.Candidate+"^{tree}")
	if err != nil || cur == tree {
		return err
	}
	msg, err := git(ctx, s.opt.RepoDir, "log", "-1", "--format=%B", it.Candidate)
	if err != nil {
		return err
	}
	c, err := git(ctx, s.opt.RepoDir, "commit-tree", tree, "-p", it.Base, "-p", it.Head, "-m", msg)
	if err != nil {
		return err
	}
	if _, err := git(ctx, s.opt.RepoDir, "update-ref", candidateRef(id), c); err != nil {
		return err
	}
	if err := s.checkoutInteg(ctx, c); err != nil {
		return err
	}
	s.step(id, func(it *Item, _ *Stats) { it.Candidate = c })
	return nil
}

func lockPathspecs() []string {
	var p []string
	for _, l := range LockFiles {
		p = append(p, ":(glob)**/"+l)
	}
	return p
}

// reconcileAll settles the items a crash left mid-way, using git ancestry
// as the truth: a "landing" item whose candidate is on the target landed.
func (s *Service) reconcileAll(ctx context.Context) error {
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+s.opt.Target)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var landing []Item
	for _, it := range s.items {
		switch it.Status {
		case StatusLanding:
			landing = append(landing, *it)
		case StatusMerging, StatusTesting, StatusResolving, StatusConflict:
			it.Status = StatusPending
		}
	}
	s.mu.Unlock()
	landing = chainOrder(landing)
	for _, it := range landing {
		in := false
		if it.Candidate != "" {
			in, err = s.ancestor(ctx, it.Candidate, tip)
			if err != nil {
				return err
			}
		}
		if in {
			s.mu.Lock()
			if tip != it.Candidate && s.stats.TargetTip == it.Base {
				s.stats.TargetTip = it.Candidate
			}
			s.mu.Unlock()
			s.finishLanded(ctx, it.TaskID, it.Candidate, false)
			continue
		}
		// Not landed: retry (a still-valid candidate lands without rebuild).
		s.step(it.TaskID, func(x *Item, _ *Stats) { x.Status = StatusPending })
	}
	s.mu.Lock()
	s.reconcile = false
	err = s.saveLocked()
	s.mu.Unlock()
	s.clearIntegration(ctx)
	return err
}
