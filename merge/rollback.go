package merge

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/chorus-dev/chorus/worktree"
)

// chorusCommit is a commit on the target's first-parent history that
// Chorus made: a task merge, a revert, or a re-application.
type chorusCommit struct {
	hash     string
	merge    bool // more than one parent
	tasks    []string
	reverts  []string
	reapply  []string
	position int // 0 = newest
}

// history reads Chorus's commits on the first-parent line of tip, newest
// first. Trailers are matched exactly (a --grep on "[ch-07]" is a regex).
func (s *Service) history(ctx context.Context, tip string) ([]chorusCommit, error) {
	out, err := git(ctx, s.opt.RepoDir, "log", "--first-parent", "-F", "--grep=Chorus-",
		"--format=%H%x1f%P%x1f%(trailers:key=Chorus-Task,valueonly,separator=%x20)%x1f%(trailers:key=Chorus-Revert,valueonly,separator=%x20)%x1f%(trailers:key=Chorus-Reapply,valueonly,separator=%x20)%x1e", tip)
	if err != nil {
		return nil, err
	}
	var list []chorusCommit
	for _, rec := range strings.Split(out, "\x1e") {
		f := strings.Split(strings.TrimLeft(rec, "\n"), "\x1f")
		if len(f) != 5 || f[0] == "" {
			continue
		}
		c := chorusCommit{hash: f[0], merge: len(strings.Fields(f[1])) > 1,
			tasks: strings.Fields(f[2]), reverts: strings.Fields(f[3]), reapply: strings.Fields(f[4]), position: len(list)}
		list = append(list, c)
	}
	return list, nil
}

func has(list []string, x string) bool {
	for _, v := range list {
		if v == x {
			return true
		}
	}
	return false
}

// present returns the commits that currently carry task on the target:
// its merges and re-applications newer than its latest revert.
func present(hist []chorusCommit, task string) []chorusCommit {
	var out []chorusCommit
	for _, c := range hist {
		if has(c.reverts, task) {
			break
		}
		if (c.merge && has(c.tasks, task)) || has(c.reapply, task) {
			out = append(out, c)
		}
	}
	return out
}

func (s *Service) wasReverted(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return has(s.stats.Reverted, id)
}

// reapply undoes the rollback of a task before it is merged again: merging
// a branch whose commits are already in the target's history would bring
// back nothing (a revert undoes data, not history). It re-applies what the
// reverted merges had landed as one commit on the tip, in the integration
// worktree, and returns it as the base for the new merge.
func (s *Service) reapply(ctx context.Context, it Item, tip, head string) (string, error) {
	hist, err := s.history(ctx, tip)
	if err != nil {
		return "", err
	}
	var gone []chorusCommit
	for i, c := range hist {
		if has(c.reverts, it.TaskID) {
			// The task's merges just before this revert are what it undid.
			for _, m := range hist[i+1:] {
				if has(m.reverts, it.TaskID) {
					break
				}
				if (m.merge && has(m.tasks, it.TaskID)) || has(m.reapply, it.TaskID) {
					gone = append(gone, m)
				}
			}
			break
		}
		if (c.merge && has(c.tasks, it.TaskID)) || has(c.reapply, it.TaskID) {
			return tip, nil // on the target again already
		}
	}
	if len(gone) == 0 {
		return tip, nil
	}
	// Only when the branch builds on what was reverted; a task redone from
	// scratch merges normally.
	related := false
	for _, m := range gone {
		if !m.merge {
			related = true
			break
		}
		if in, _ := isAncestor(ctx, s.opt.RepoDir, m.hash+"^2", head); in {
			related = true
			break
		}
	}
	if !related {
		return tip, nil
	}
	if err := s.checkoutInteg(ctx, tip); err != nil {
		return "", err
	}
	for i := len(gone) - 1; i >= 0; i-- { // oldest first
		args := []string{"cherry-pick", "--no-commit"}
		if gone[i].merge {
			args = append(args, "-m", "1")
		}
		if _, err := git(ctx, s.in.integ, append(args, gone[i].hash)...); err != nil {
			s.clearIntegration(ctx)
			_, _ = run(ctx, s.in.integ, "", "cherry-pick", "--quit")
			_, _ = run(ctx, s.in.integ, "", "reset", "-q", "--hard")
			return "", fmt.Errorf("re-applying %s after its rollback conflicts: %w", it.TaskID, err)
		}
	}
	if _, err := git(ctx, s.in.integ, s.in.durable("commit", "-q", "--no-verify", "--allow-empty",
		"-m", "Reapply "+it.TaskID+" (undo its rollback)", "-m", "Chorus-Reapply: "+it.TaskID)...); err != nil {
		return "", err
	}
	return git(ctx, s.in.integ, "rev-parse", "HEAD")
}

// DependentsError says a task cannot be rolled back alone: later merges
// build on it. Dependents lists them, newest first.
type DependentsError struct {
	Task       string
	Dependents []string
	Err        error
}

func (e *DependentsError) Error() string {
	return fmt.Sprintf("rolling back %s alone conflicts (%v); roll back with its dependents: %s", e.Task, e.Err, strings.Join(e.Dependents, ", "))
}

func (e *DependentsError) Unwrap() error { return e.Err }

// RollbackTask reverts one merged task (level 2): `revert -m 1` of its merge
// commit, tested, landed like a merge. Returns the reverted task ids (the
// engine sets them back to open). If later merges depend on it, a
// *DependentsError proposes the set for RollbackWithDependents.
func (s *Service) RollbackTask(ctx context.Context, taskID string) ([]string, error) {
	ids, err := s.RollbackWithDependents(ctx, []string{taskID})
	var ce *revertConflict
	if errors.As(err, &ce) {
		deps, derr := s.Dependents(ctx, taskID)
		if derr == nil && len(deps) > 0 {
			return nil, &DependentsError{Task: taskID, Dependents: deps, Err: err}
		}
	}
	return ids, err
}

type revertConflict struct{ msg string }

func (e *revertConflict) Error() string { return "revert conflicts: " + e.msg }

// RollbackWithDependents reverts the given tasks (level 3: a task and the
// tasks that depend on it) newest first, in one revert commit carrying a
// Chorus-Revert trailer. The result must pass the quality commands before
// the target moves.
func (s *Service) RollbackWithDependents(ctx context.Context, taskIDs []string) ([]string, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.ensureIntegration(ctx); err != nil {
		return nil, err
	}
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+s.opt.Target)
	if err != nil {
		return nil, err
	}
	hist, err := s.history(ctx, tip)
	if err != nil {
		return nil, err
	}
	seen := map[string]chorusCommit{}
	var ids []string
	for _, id := range taskIDs {
		cs := present(hist, id)
		if len(cs) == 0 {
			return nil, fmt.Errorf("%w: %s", ErrNotMerged, id)
		}
		ids = append(ids, id)
		for _, c := range cs {
			seen[c.hash] = c
		}
	}
	var commits []chorusCommit
	for _, c := range seen {
		commits = append(commits, c)
	}
	sort.Slice(commits, func(i, j int) bool { return commits[i].position < commits[j].position })
	if err := s.checkoutInteg(ctx, tip); err != nil {
		return nil, err
	}
	for _, c := range commits {
		args := []string{"revert", "--no-commit"}
		if c.merge {
			args = append(args, "-m", "1")
		}
		if r, err := run(ctx, s.in.integ, "", append(args, c.hash)...); err != nil || r.rc != 0 {
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = firstLines(r.err+r.out, 6)
			}
			_, _ = run(ctx, s.in.integ, "", "revert", "--abort")
			s.clearIntegration(ctx)
			_, _ = run(ctx, s.in.integ, "", "reset", "-q", "--hard")
			return nil, &revertConflict{msg: msg}
		}
	}
	sorted := append([]string(nil), ids...)
	sort.Strings(sorted)
	if _, err := git(ctx, s.in.integ, s.in.durable("commit", "-q", "--no-verify",
		"-m", "Revert "+strings.Join(ids, ", "), "-m", "Chorus-Revert: "+strings.Join(sorted, " "))...); err != nil {
		s.clearIntegration(ctx)
		return nil, err
	}
	r, err := git(ctx, s.in.integ, "rev-parse", "HEAD")
	if err != nil {
		return nil, err
	}
	if name, out, err := s.in.quality(ctx, s.in.integ, strings.Join(ids, ","), r); err != nil {
		return nil, fmt.Errorf("rollback of %s fails %s; %s not changed:\n%s", strings.Join(ids, ", "), name, s.opt.Target, out)
	}
	if err := s.moveTarget(ctx, tip, r, "chorus: revert "+strings.Join(ids, " "), false); err != nil {
		return nil, err
	}
	s.afterRollback(ids, r, true)
	return ids, nil
}

// afterRollback records reverted tasks and the new tip as Chorus's own move.
func (s *Service) afterRollback(ids []string, tip string, revert bool) {
	s.mu.Lock()
	for _, id := range ids {
		if it := s.findLocked(id); it != nil && (it.Status == StatusLanded || it.Status == StatusReverted) && s.moveLocked(it, StatusReverted) {
			it.UpdatedAt = s.opt.Now()
		}
		if revert && !has(s.stats.Reverted, id) {
			s.stats.Reverted = append(s.stats.Reverted, id)
		}
	}
	s.stats.TargetTip = tip
	s.stats.Rollbacks++
	_ = s.saveLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventRollback, Message: strings.Join(ids, ", "), Commit: tip, Files: ids})
}

// moveTarget moves the target from old to next for a rollback, with the
// same rules as landing: CAS when not checked out; in the worktree that has
// it, `merge --ff-only` for a descendant or `reset --keep` for a checkpoint
// (both keep unrelated edits and refuse overlapping ones).
func (s *Service) moveTarget(ctx context.Context, old, next, msg string, reset bool) error {
	co, err := s.targetCheckout()
	if err != nil {
		return err
	}
	if co.busy != "" {
		return fmt.Errorf("%s; finish or abort it first", co.busy)
	}
	if co.worktree == "" {
		_, err := git(ctx, s.opt.RepoDir, s.in.durable("update-ref", "-m", msg, "refs/heads/"+s.opt.Target, next, old)...)
		return err
	}
	cur, err := git(ctx, co.worktree, "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	if cur != old {
		return fmt.Errorf("%s moved while rolling back; nothing changed", s.opt.Target)
	}
	if reset {
		_, err = git(ctx, co.worktree, "reset", "-q", "--keep", next)
	} else {
		_, err = git(ctx, co.worktree, "merge", "--ff-only", "-q", next)
	}
	if err != nil {
		return fmt.Errorf("%s is checked out in %s and git refused to update it (commit or stash your changes first): %w", s.opt.Target, co.worktree, err)
	}
	return nil
}

// RollbackToCheckpoint resets the target to a checkpoint (level 4, after
// the user confirmed); ref "" takes the newest checkpoint the target is
// not at. A checkpoint at the tip is refused (ErrNothingToRollBack): a
// "rollback" that changes nothing would say it did something. The current tip is kept as refs/chorus/kept/<target>/<time>-rollback.
// Returns the landed tasks that are no longer on the target.
func (s *Service) RollbackToCheckpoint(ctx context.Context, ref string) ([]string, error) {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	if err := s.ensureIntegration(ctx); err != nil {
		return nil, err
	}
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+s.opt.Target)
	if err != nil {
		return nil, err
	}
	if ref == "" {
		// The default: the newest checkpoint the target is not at.
		cps, err := s.Checkpoints(ctx)
		if err != nil {
			return nil, err
		}
		for _, c := range cps {
			if c.Commit != tip {
				ref = c.Ref
				break
			}
		}
		if ref == "" {
			return nil, fmt.Errorf("%w: no checkpoint differs from %s's tip %s", ErrNothingToRollBack, s.opt.Target, short(tip))
		}
	}
	ck, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", ref+"^{commit}")
	if err != nil {
		return nil, err
	}
	if ck == tip {
		return nil, fmt.Errorf("%w: checkpoint %s is %s's current tip %s; pick an older checkpoint",
			ErrNothingToRollBack, strings.TrimPrefix(ref, CheckpointPrefix), s.opt.Target, short(tip))
	}
	if err := s.checkoutInteg(ctx, ck); err != nil {
		return nil, err
	}
	if name, out, err := s.in.quality(ctx, s.in.integ, "checkpoint", ck); err != nil {
		return nil, fmt.Errorf("checkpoint %s fails %s; %s not changed:\n%s", ref, name, s.opt.Target, out)
	}
	// Under the one kept naming, so status lists it and prune can drop it.
	if _, err := worktree.KeepCommit(ctx, s.opt.RepoDir, s.opt.Target, worktree.KeptRollback, tip); err != nil {
		return nil, err
	}
	lost := s.lostTasks(ctx, ck)
	if err := s.moveTarget(ctx, tip, ck, "chorus: rollback to "+ref, true); err != nil {
		return nil, err
	}
	s.afterRollback(lost, ck, false)
	return lost, nil
}

// managedPaths are files every task touches; they do not make one task
// depend on another.
func managedPath(p string) bool {
	if p == LearningsPath || p == IssuesPath {
		return true
	}
	for _, l := range LockFiles {
		if p == l || strings.HasSuffix(p, "/"+l) {
			return true
		}
	}
	return false
}

// Dependents proposes what must be rolled back with a task, newest first:
// landed tasks that declared a dependency on it (transitively), and later
// merges that changed the same files (implicit dependents).
func (s *Service) Dependents(ctx context.Context, taskID string) ([]string, error) {
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+s.opt.Target)
	if err != nil {
		return nil, err
	}
	hist, err := s.history(ctx, tip)
	if err != nil {
		return nil, err
	}
	mine := present(hist, taskID)
	if len(mine) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNotMerged, taskID)
	}
	oldest := mine[len(mine)-1].position
	paths := func(c chorusCommit) map[string]bool {
		out, _ := git(ctx, s.opt.RepoDir, "diff", "--name-only", c.hash+"^1", c.hash)
		m := map[string]bool{}
		for _, p := range strings.Split(out, "\n") {
			if p != "" && !managedPath(p) {
				m[p] = true
			}
		}
		return m
	}
	touched := map[string]bool{}
	for _, c := range mine {
		for p := range paths(c) {
			touched[p] = true
		}
	}
	declared := map[string]bool{taskID: true}
	s.mu.Lock()
	for changed := true; changed; {
		changed = false
		for _, it := range s.items {
			if declared[it.TaskID] {
				continue
			}
			for _, d := range it.DependsOn {
				if declared[d] {
					declared[it.TaskID], changed = true, true
					break
				}
			}
		}
	}
	s.mu.Unlock()
	var deps []string
	added := map[string]bool{taskID: true}
	for _, c := range hist[:oldest] { // newer than the task's first merge
		if !c.merge || len(c.tasks) == 0 {
			continue
		}
		t := c.tasks[0]
		if added[t] || len(present(hist, t)) == 0 {
			continue
		}
		dep := declared[t]
		if !dep {
			for p := range paths(c) {
				if touched[p] {
					dep = true
					break
				}
			}
		}
		if dep {
			added[t] = true
			deps = append(deps, t)
			for p := range paths(c) {
				touched[p] = true
			}
		}
	}
	return deps, nil
}
