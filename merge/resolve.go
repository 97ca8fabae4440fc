package merge

import (
	"context"
	"errors"
	"fmt"
	"github.com/chorus-dev/chorus/merge/queue"
	"github.com/chorus-dev/chorus/worktree"
	"path/filepath"
	"strings"
	"sync"
)

// MediumMaxFiles is the most files a content-only conflict may span and
// still go back to the task's own agent; anything larger or structural
// (modify/delete, renames, binary…) goes to a resolver agent.
const MediumMaxFiles = 5

// conflicts is what the service asks of its resolvers: a conflict or a
// failing candidate to settle (the medium tier, then an agent, then a
// person), a person stopping a resolver, and whether any is at work.
type conflicts interface {
	// conflict takes it's conflict with tip; it returns the tree of a
	// clean rebase for the integrator to merge instead, "" when the item
	// went elsewhere (deferred, to an agent or to a person).
	conflict(ctx context.Context, it Item, tip, head string, mt mergeResult) (tree string)
	// qualityFailed takes a clean candidate the quality command name
	// fails on.
	qualityFailed(ctx context.Context, id, name, output string)
	// job is the resolver agent at work on a task, nil when none is.
	job(taskID string) *resolveJob
	// stop ends job (nil: a resolution already queued) once the queue
	// fenced the item off, keeps its work and hands the item to a person.
	stop(job *resolveJob, it Item, fence uint64)
	working() bool
	// wait returns once every resolver goroutine has ended.
	wait()
}

// resolvers owns conflict resolution: the medium tier (medium.go), the
// agents at work (the task's own or a resolver agent on a throwaway
// branch, each on a goroutine of its own with a time limit), stopping
// them, and handing what they cannot settle to a person. It changes items
// only through the queue's bookkeeping (q), and takes q's locks in the
// order locks.go gives.
type resolvers struct {
	q     *Service
	agent Resolver // nil: conflicts go to a person

	jobMu sync.Mutex
	jobs  map[string]*resolveJob // agents at work, by task
	bg    sync.WaitGroup         // agents' goroutines and stops' clean-ups
}

var _ conflicts = (*resolvers)(nil)

func newResolvers(q *Service, agent Resolver) *resolvers {
	return &resolvers{q: q, agent: agent, jobs: map[string]*resolveJob{}}
}

func (rs *resolvers) job(taskID string) *resolveJob {
	rs.jobMu.Lock()
	defer rs.jobMu.Unlock()
	return rs.jobs[taskID]
}

func (rs *resolvers) working() bool {
	rs.jobMu.Lock()
	defer rs.jobMu.Unlock()
	return len(rs.jobs) > 0
}

func (rs *resolvers) wait() { rs.bg.Wait() }

func resolveBranch(task string) string { return "chorus/resolve/" + task }
func (s *Service) resolveDir(task string) string {
	return filepath.Join(s.opt.WorktreesDir, "_resolve-"+task)
}

// conflict settles a merge-tree conflict: the medium tier first, then an
// agent, then a person.
func (rs *resolvers) conflict(ctx context.Context, it Item, tip, head string, mt mergeResult) string {
	if tree, handled := rs.medium(ctx, it, tip, head); handled {
		return tree
	}
	complexConflict := mt.structure || len(mt.files) > MediumMaxFiles
	reason := "Merging " + rs.q.opt.Target + " into your branch conflicts:\n" + strings.Join(mt.messages, "\n")
	rs.resolve(ctx, it, tip, head, mt.files, reason, complexConflict)
	return ""
}

// qualityFailed handles a candidate that merged cleanly but fails the
// quality commands (a semantic conflict): the target does not move; an
// agent may fix the branch, else a person.
func (rs *resolvers) qualityFailed(ctx context.Context, id, name, output string) {
	it, _ := rs.q.get(id)
	rs.q.emit(Event{Kind: EventQualityFailed, TaskID: id, Message: name + " failed on the merged tree"})
	why := fmt.Sprintf("quality command %q fails on the merge of %s into %s", name, it.Branch, rs.q.opt.Target)
	rs.q.step(id, func(it *Item, _ *Stats) { it.LastError = why + "\n" + output; it.Tested = false })
	if rs.agent == nil || !rs.q.opt.Merge.AgentResolve {
		rs.q.step(id, func(it *Item, _ *Stats) { it.Retries++ })
		rs.q.waitHuman(id, why, "", rs.q.manualAction(it), nil)
		return
	}
	reason := fmt.Sprintf("The merge of %s into your branch is clean, but the quality command %q fails on the result:\n\n%s",
		rs.q.opt.Target, name, output)
	rs.resolve(ctx, it, it.Base, it.Head, nil, reason, false)
}

// resolve hands the problem to an agent: the task's own agent in its
// worktree for a medium conflict, or a resolver agent on a throwaway branch.
// The agent's worktree has `git merge <target>` already started. A
// resolution is only queued again: it lands after the quality commands pass
// on the new candidate, like any other.
func (rs *resolvers) resolve(ctx context.Context, it Item, tip, head string, files []string, reason string, complexConflict bool) {
	id := it.TaskID
	if rs.agent == nil || !rs.q.opt.Merge.AgentResolve {
		rs.q.step(id, func(it *Item, _ *Stats) { it.Retries++ })
		rs.q.waitHuman(id, "merge conflict in "+strings.Join(files, ", "), "", rs.q.manualAction(it), files)
		return
	}
	if it.Retries >= rs.q.maxTries {
		rs.q.waitHuman(id, fmt.Sprintf("still unresolved after %d attempts", it.Retries), "", rs.q.manualAction(it), files)
		return
	}
	own := !complexConflict && !it.User && it.Agent != "" && it.Worktree != "" && dirExists(it.Worktree) &&
		(it.MergeRef == "" || it.MergeRef == it.Branch) && rs.worktreeReady(ctx, it.Worktree, it.Branch)
	wt, branch, agent := it.Worktree, it.Branch, it.Agent
	if !own {
		wt, branch = rs.q.resolveDir(id), resolveBranch(id)
		if err := rs.prepareResolver(ctx, id, wt, branch, head); err != nil {
			rs.q.attemptFailed(ctx, id, "resolver worktree: "+err.Error())
			return
		}
	}
	rs.q.mark(id, StatusResolving)
	rs.q.emit(Event{Kind: EventResolving, TaskID: id, Files: files, Message: "agent resolving in " + wt})
	msg := fmt.Sprintf("Merge %s into %s (chorus resolve %s)", rs.q.opt.Target, branch, id)
	r, err := run(ctx, wt, "", "-c", "rerere.enabled=true", "-c", "rerere.autoUpdate=true",
		"merge", "--no-ff", "--no-edit", "-m", msg, tip)
	if err != nil {
		rs.q.attemptFailed(ctx, id, err.Error())
		return
	}
	gd, _ := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if r.rc != 0 && opInProgress(gd) == "" {
		rs.q.attemptFailed(ctx, id, "could not start the merge in "+wt+": "+firstLines(r.err+r.out, 4))
		return
	}
	job := &resolveJob{id: id, fence: it.Fence, item: it, wt: wt, branch: branch, head: head, tip: tip,
		own: own, files: files, done: make(chan struct{})}
	if r.rc == 0 && len(files) > 0 {
		// git merged it here by itself (rerere or the worktree's own
		// attributes): no agent needed.
		close(job.done)
		rs.finishResolve(ctx, job, ResolveResult{Resolved: true, Explanation: "merged by git in the worktree"}, nil)
		return
	}
	// The agent works on its own while the queue moves on: the item is
	// "resolving" (not runnable) until the agent answers, gives up, times
	// out or is stopped, and then goes to the back of the queue.
	prompt := rs.prompt(ctx, it, branch, tip, head, files, reason)
	jctx, cancel := context.WithCancelCause(ctx)
	jctx, cancelT := context.WithTimeoutCause(jctx, rs.q.opt.ResolverTimeout, errResolverTimeout)
	job.ctx, job.cancel = jctx, cancel
	rs.jobMu.Lock()
	rs.jobs[id] = job
	rs.jobMu.Unlock()
	rs.q.publish()
	rs.bg.Add(1)
	go func() {
		defer rs.bg.Done()
		defer cancel(nil)
		defer cancelT()
		res, err := rs.agent.Resolve(jctx, ResolveRequest{TaskID: id, Agent: agent, Worktree: wt, Branch: branch,
			Prompt: prompt, ConflictFiles: files, OwnAgent: own,
			Unfinished: func(ctx context.Context) string { return rs.checkResolution(ctx, wt, tip) }})
		rs.jobMu.Lock()
		stopped := job.stopped
		rs.jobMu.Unlock()
		if !stopped {
			rs.finishResolve(ctx, job, res, err)
		}
		rs.jobMu.Lock()
		if rs.jobs[id] == job {
			delete(rs.jobs, id)
		}
		close(job.done)
		rs.jobMu.Unlock()
		rs.q.publish()
		rs.q.poke()
	}()
}

// resolveJob is one resolver agent at work.
type resolveJob struct {
	id                    string
	fence                 uint64 // the item's fence when the agent started
	item                  Item
	wt, branch, head, tip string
	own                   bool
	files                 []string
	ctx                   context.Context
	cancel                context.CancelCauseFunc
	done                  chan struct{} // closed once the agent returned and its answer was handled
	stopped               bool          // under jobMu: a person stopped the agent
}

// finishResolve applies a resolver's answer, unless the job was fenced off
// meanwhile (a stop): then every step below does nothing.
func (rs *resolvers) finishResolve(ctx context.Context, job *resolveJob, res ResolveResult, err error) {
	id, fence, wt, tip, files := job.id, job.fence, job.wt, job.tip, job.files
	current := fenceIs(fence)
	if ctx.Err() != nil {
		// Chorus is shutting down: the next run tries again.
		bg, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		rs.abortMerge(bg, wt)
		rs.q.apply(id, current, StatusPending, nil)
		return
	}
	if job.ctx != nil && errors.Is(context.Cause(job.ctx), errResolverTimeout) {
		ref := rs.shelve(ctx, job)
		why := fmt.Sprintf("the resolver agent did not answer within %s", rs.q.opt.ResolverTimeout)
		if ref != "" {
			why += "; its work is kept on " + ref
		}
		rs.q.apply(id, current, "", func(it *Item, _ *Stats) { it.Retries++ })
		rs.q.waitHumanWhen(id, current, why, "", rs.q.manualAction(job.item), files)
		return
	}
	problem := ""
	if err != nil {
		problem = "resolver failed: " + err.Error()
	} else if res.Resolved {
		if p := rs.checkResolution(ctx, wt, tip); p != "" {
			problem = "the agent said RESOLVED but " + p
		}
	}
	if err == nil && !res.Resolved {
		rs.abortMerge(ctx, wt)
		expl := strings.TrimSpace(res.Explanation)
		rs.q.apply(id, current, "", func(it *Item, _ *Stats) { it.Retries++ })
		rs.q.waitHumanWhen(id, current, "the agent needs a person: "+expl, expl, rs.q.manualAction(job.item), files)
		return
	}
	if problem != "" {
		rs.abortMerge(ctx, wt)
		rs.q.apply(id, current, "", func(it *Item, _ *Stats) { it.Explanation = res.Explanation })
		rs.q.attemptFailedWhen(ctx, id, current, problem)
		return
	}
	if !rs.q.apply(id, current, StatusPending, func(it *Item, st *Stats) {
		it.MergeRef, it.Candidate, it.Tested = job.branch, "", false
		it.ResolvedFrom = job.head
		it.Explanation, it.LastError = res.Explanation, ""
		it.Seq = st.NextSeq // a conflicted item goes to the back
		st.NextSeq++
		st.Resolved++
	}) {
		return
	}
	rs.q.emit(Event{Kind: EventResolved, TaskID: id, Message: res.Explanation})
}

// StopResolver is a person stopping the resolver agent of a task (or
// undoing its resolution, if it already answered but has not landed): the
// item is fenced so nothing the resolver produced can land, its work is
// kept under refs/chorus/kept/<task>/, the branch goes back to where it was,
// and the conflict waits for a person. It returns once the fence is set;
// the agent's end and the clean-up follow in the background.
func (s *Service) StopResolver(taskID string) error {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(taskID)
	if it == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTask, taskID)
	}
	job := s.res.job(taskID)
	switch {
	case it.Status == StatusLanded || it.Status == StatusReverted:
		return fmt.Errorf("%w: %s already landed (%s); roll it back instead", ErrBadState, taskID, short(it.MergeCommit))
	case job == nil && it.ResolvedFrom == "":
		return fmt.Errorf("%w: %s", ErrNoResolver, taskID)
	}
	old, oldStats := *it, s.stats
	if err := queue.Move(it, StatusResolving); err != nil {
		s.refusedLocked(taskID, err)
		return fmt.Errorf("%w: %v", ErrBadState, err)
	}
	it.Fence++
	it.LastError, it.Action = "stopping its resolver", ""
	mergeRef, from := it.MergeRef, it.ResolvedFrom
	// Whatever happens next (even a crash), the resolution is not queued.
	it.MergeRef, it.Candidate, it.Tested, it.ResolvedFrom = "", "", false, ""
	it.UpdatedAt = s.opt.Now()
	if err := s.saveLocked(); err != nil {
		*it, s.stats = old, oldStats
		s.publishLocked()
		return err
	}
	snapshot := *it
	snapshot.MergeRef, snapshot.ResolvedFrom = mergeRef, from
	s.res.stop(job, snapshot, it.Fence)
	return nil
}

// stop ends a resolver agent the queue just fenced off (job nil: its
// resolution was already queued): its work is kept, the branch goes back,
// and the item, as long as fence holds, waits for a person.
func (rs *resolvers) stop(job *resolveJob, it Item, fence uint64) {
	if job != nil {
		rs.jobMu.Lock()
		job.stopped = true
		rs.jobMu.Unlock()
		job.cancel(errResolverStopped)
	}
	rs.bg.Add(1)
	go func() {
		defer rs.bg.Done()
		if job != nil {
			<-job.done
		}
		// The integrator may hold the item (fenced: it changes nothing); wait
		// until it lets go before touching the branch.
		rs.q.opMu.Lock()
		defer rs.q.opMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		var ref string
		if job != nil {
			ref = rs.shelve(ctx, job)
		} else {
			ref = rs.shelveQueued(ctx, it)
		}
		why := "its resolver was stopped by a person"
		if ref != "" {
			why += "; the resolver's work is kept on " + ref
		}
		rs.q.waitHumanWhen(it.TaskID, fenceIs(fence), why, "", rs.q.manualAction(it), it.ConflictFiles)
		rs.q.poke()
	}()
}

// keepResolver keeps a stopped, timed-out or undone resolver's work under
// the one kept naming (<task>/<time>-resolver); "" when it could not.
func (rs *resolvers) keepResolver(ctx context.Context, id, commit string) string {
	k, err := worktree.KeepCommit(ctx, rs.q.opt.RepoDir, id, worktree.KeptResolver, commit)
	if err != nil {
		return ""
	}
	return k.Ref
}

// shelve keeps what a resolver left in its worktree (commits, and an
// unfinished merge or edits as one more commit) under refs/chorus/kept/,
// then puts the worktree and branch back at the pre-resolution tip.
// Returns the ref ("" if there was nothing to keep).
func (rs *resolvers) shelve(ctx context.Context, job *resolveJob) string {
	wt := job.wt
	if !dirExists(wt) {
		return ""
	}
	keep, err := git(ctx, wt, "rev-parse", "HEAD")
	if err != nil {
		return ""
	}
	gd, _ := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if st, _ := git(ctx, wt, "status", "--porcelain"); strings.TrimSpace(st) != "" || opInProgress(gd) != "" {
		// Conflict markers and all: a person may want to see them.
		if _, err := git(ctx, wt, "add", "-A"); err == nil {
			if tree, err := git(ctx, wt, "write-tree"); err == nil {
				if c, err := git(ctx, wt, "commit-tree", tree, "-p", keep, "-m", "chorus: unfinished work of the resolver of "+job.id); err == nil {
					keep = c
				}
			}
		}
	}
	ref := ""
	if keep != job.head {
		ref = rs.keepResolver(ctx, job.id, keep)
	}
	rs.abortMerge(ctx, wt)
	if ref != "" || keep != job.head {
		_, _ = git(ctx, wt, "reset", "-q", "--hard", job.head)
	}
	return ref
}

// shelveQueued undoes a resolution that was already queued: its tip goes
// under refs/chorus/kept/ and, when the resolver worked on the task
// branch itself, that branch goes back to where it was.
func (rs *resolvers) shelveQueued(ctx context.Context, it Item) string {
	if it.MergeRef == "" || it.ResolvedFrom == "" {
		return ""
	}
	ref := it.MergeRef
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	tip, err := git(ctx, rs.q.opt.RepoDir, "rev-parse", "--verify", "-q", ref)
	if err != nil || tip == it.ResolvedFrom {
		return ""
	}
	keep := rs.keepResolver(ctx, it.TaskID, tip)
	if keep == "" {
		return ""
	}
	if it.MergeRef == it.Branch {
		if it.Worktree != "" && dirExists(it.Worktree) {
			if h, err := git(ctx, it.Worktree, "rev-parse", "HEAD"); err == nil && h == tip {
				_, _ = git(ctx, it.Worktree, "reset", "-q", "--hard", it.ResolvedFrom)
				return keep
			}
		}
		_, _ = git(ctx, rs.q.opt.RepoDir, "update-ref", ref, it.ResolvedFrom, tip)
	}
	return keep
}

// worktreeReady reports that an agent worktree is on its branch with
// nothing uncommitted and no operation in progress.
func (rs *resolvers) worktreeReady(ctx context.Context, wt, branch string) bool {
	ref, err := git(ctx, wt, "symbolic-ref", "-q", "HEAD")
	if err != nil || ref != "refs/heads/"+branch {
		return false
	}
	gd, err := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return false
	}
	if opInProgress(gd) != "" {
		rs.abortMerge(ctx, wt)
	}
	st, err := git(ctx, wt, "status", "--porcelain", "--untracked-files=no")
	return err == nil && strings.TrimSpace(st) == ""
}

// prepareResolver makes a fresh throwaway branch at the task's tip, checked
// out in Chorus's resolver worktree for this task.
func (rs *resolvers) prepareResolver(ctx context.Context, id, wt, branch, head string) error {
	// An earlier resolver's worktree and branch may hold work: the owner
	// keeps it under refs/chorus/kept/ before both are replaced.
	if err := rs.q.opt.Worktrees.Renew(ctx, id, wt, branch, head, "starting a new resolver"); err != nil {
		return fmt.Errorf("merge: resolver worktree %s: %w", wt, err)
	}
	return nil
}

func (rs *resolvers) abortMerge(ctx context.Context, wt string) {
	gd, err := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return
	}
	if opInProgress(gd) == "MERGE_HEAD" {
		_, _ = run(ctx, wt, "", "merge", "--abort")
	}
}

// checkResolution verifies an agent's "RESOLVED": the merge is concluded,
// nothing is unmerged, and the branch now contains the target tip. It
// says what is missing, "" when nothing is.
func (rs *resolvers) checkResolution(ctx context.Context, wt, tip string) string {
	gd, err := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return err.Error()
	}
	if op := opInProgress(gd); op != "" {
		return "the merge is not concluded (" + op + " is still there: commit it)"
	}
	if u, _ := git(ctx, wt, "ls-files", "-u"); strings.TrimSpace(u) != "" {
		return "files are still unmerged (git ls-files -u lists them)"
	}
	in, err := isAncestor(ctx, wt, tip, "HEAD")
	if err != nil {
		return err.Error()
	}
	if !in {
		return "the branch does not contain " + rs.q.opt.Target + " (the merge of " + rs.q.opt.Target + " is not committed)"
	}
	return ""
}

// prompt builds the seed's resolver prompt: both diffs and the files.
func (rs *resolvers) prompt(ctx context.Context, it Item, branch, tip, head string, files []string, reason string) string {
	mine, _ := git(ctx, rs.q.opt.RepoDir, "diff", tip+"..."+head)
	theirs, _ := git(ctx, rs.q.opt.RepoDir, "diff", head+"..."+tip)
	var b strings.Builder
	b.WriteString("# Merge Conflict Resolution Task\n\n## Conflict Details\n")
	fmt.Fprintf(&b, "- Task: %s\n- Your Branch: %s\n- Target: %s\n", it.TaskID, branch, rs.q.opt.Target)
	if len(files) > 0 {
		fmt.Fprintf(&b, "- Conflicting Files: %s\n", strings.Join(files, ", "))
	}
	b.WriteString("\n" + reason + "\n\n")
	fmt.Fprintf(&b, "A `git merge %s` is in progress in this worktree.\n\n", rs.q.opt.Target)
	b.WriteString("## Your Changes\n```diff\n" + capText(mine, rs.q.opt.MaxDiff) + "\n```\n\n")
	b.WriteString("## Main Branch Changes (since you branched)\n```diff\n" + capText(theirs, rs.q.opt.MaxDiff) + "\n```\n\n")
	b.WriteString(`## Instructions
1. Analyze both changes semantically
2. Understand the intent of each change
3. Determine if they can coexist
4. If YES: Resolve the conflict and commit (conclude the merge with git commit)
5. Run required quality commands (test, typecheck, lint)
6. If all pass: <chorus>RESOLVED</chorus>
7. If cannot resolve: <chorus>NEEDS_HUMAN: explanation</chorus>

## Important
- Preserve functionality from BOTH changes when possible
- If changes are mutually exclusive, prefer main (safer)
- Document your resolution reasoning in commit message
`)
	if len(rs.q.required) > 0 {
		b.WriteString("\n## Quality commands\n")
		for _, q := range rs.q.required {
			fmt.Fprintf(&b, "- %s: `%s`\n", q.Name, q.Command)
		}
	}
	return b.String()
}

func capText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "\n… (diff truncated)"
}
