package merge

import (
	"context"
	"errors"
	"fmt"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge/queue"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"
)

// MediumMaxFiles is the most files a content-only conflict may span and
// still go back to the task's own agent; anything larger or structural
// (modify/delete, renames, binary…) goes to a resolver agent.
const MediumMaxFiles = 5

func resolveBranch(task string) string { return "chorus/resolve/" + task }
func (s *Service) resolveDir(task string) string {
	return filepath.Join(s.opt.WorktreesDir, "_resolve-"+task)
}

// conflict handles a merge-tree conflict: agent first, then a person.
func (s *Service) conflict(ctx context.Context, id, tip, tipTree, head string, mt mergeResult) {
	it, _ := s.get(id)
	if it.Deferrals == 0 {
		// One conflict however many times the medium tier retries it.
		s.mu.Lock()
		s.stats.Conflicts++
		s.mu.Unlock()
	}
	s.move(id, StatusConflict, func(it *Item, _ *Stats) {
		it.ConflictFiles = mt.files
		it.LastError = "conflicts: " + strings.Join(mt.messages, "; ")
	})
	it, _ = s.get(id)
	if it.Deferrals == 0 {
		s.emit(Event{Kind: EventConflict, TaskID: id, Files: mt.files, Message: strings.Join(mt.messages, "\n")})
		s.runHook(ctx, hooks.OnConflict, id)
	}
	if s.medium(ctx, it, tip, tipTree, head) {
		return
	}
	complexConflict := mt.structure || len(mt.files) > MediumMaxFiles
	reason := "Merging " + s.opt.Target + " into your branch conflicts:\n" + strings.Join(mt.messages, "\n")
	s.resolve(ctx, it, tip, head, mt.files, reason, complexConflict)
}

// qualityFailed handles a candidate that merged cleanly but fails the
// quality commands (a semantic conflict): the target does not move; an
// agent may fix the branch, else a person.
func (s *Service) qualityFailed(ctx context.Context, id, name, output string) {
	it, _ := s.get(id)
	s.emit(Event{Kind: EventQualityFailed, TaskID: id, Message: name + " failed on the merged tree"})
	why := fmt.Sprintf("quality command %q fails on the merge of %s into %s", name, it.Branch, s.opt.Target)
	s.step(id, func(it *Item, _ *Stats) { it.LastError = why + "\n" + output; it.Tested = false })
	if s.resolver == nil || !s.opt.Merge.AgentResolve {
		s.step(id, func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHuman(id, why, "", s.manualAction(it), nil)
		return
	}
	reason := fmt.Sprintf("The merge of %s into your branch is clean, but the quality command %q fails on the result:\n\n%s",
		s.opt.Target, name, output)
	s.resolve(ctx, it, it.Base, it.Head, nil, reason, false)
}

// resolve hands the problem to an agent: the task's own agent in its
// worktree for a medium conflict, or a resolver agent on a throwaway branch.
// The agent's worktree has `git merge <target>` already started. A
// resolution is only queued again: it lands after the quality commands pass
// on the new candidate, like any other.
func (s *Service) resolve(ctx context.Context, it Item, tip, head string, files []string, reason string, complexConflict bool) {
	id := it.TaskID
	if s.resolver == nil || !s.opt.Merge.AgentResolve {
		s.step(id, func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHuman(id, "merge conflict in "+strings.Join(files, ", "), "", s.manualAction(it), files)
		return
	}
	if it.Retries >= s.maxTries {
		s.waitHuman(id, fmt.Sprintf("still unresolved after %d attempts", it.Retries), "", s.manualAction(it), files)
		return
	}
	own := !complexConflict && !it.User && it.Agent != "" && it.Worktree != "" && dirExists(it.Worktree) &&
		(it.MergeRef == "" || it.MergeRef == it.Branch) && s.worktreeReady(ctx, it.Worktree, it.Branch)
	wt, branch, agent := it.Worktree, it.Branch, it.Agent
	if !own {
		wt, branch = s.resolveDir(id), resolveBranch(id)
		if err := s.prepareResolver(ctx, id, wt, branch, head); err != nil {
			s.attemptFailed(ctx, id, "resolver worktree: "+err.Error())
			return
		}
	}
	s.mark(id, StatusResolving)
	s.emit(Event{Kind: EventResolving, TaskID: id, Files: files, Message: "agent resolving in " + wt})
	msg := fmt.Sprintf("Merge %s into %s (chorus resolve %s)", s.opt.Target, branch, id)
	r, err := run(ctx, wt, "", "-c", "rerere.enabled=true", "-c", "rerere.autoUpdate=true",
		"merge", "--no-ff", "--no-edit", "-m", msg, tip)
	if err != nil {
		s.attemptFailed(ctx, id, err.Error())
		return
	}
	gd, _ := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if r.rc != 0 && opInProgress(gd) == "" {
		s.attemptFailed(ctx, id, "could not start the merge in "+wt+": "+firstLines(r.err+r.out, 4))
		return
	}
	job := &resolveJob{id: id, fence: it.Fence, item: it, wt: wt, branch: branch, head: head, tip: tip,
		own: own, files: files, done: make(chan struct{})}
	if r.rc == 0 && len(files) > 0 {
		// git merged it here by itself (rerere or the worktree's own
		// attributes): no agent needed.
		close(job.done)
		s.finishResolve(ctx, job, ResolveResult{Resolved: true, Explanation: "merged by git in the worktree"}, nil)
		return
	}
	// The agent works on its own while the queue moves on: the item is
	// "resolving" (not runnable) until the agent answers, gives up, times
	// out or is stopped, and then goes to the back of the queue.
	prompt := s.prompt(ctx, it, branch, tip, head, files, reason)
	jctx, cancel := context.WithCancelCause(ctx)
	jctx, cancelT := context.WithTimeoutCause(jctx, s.opt.ResolverTimeout, errResolverTimeout)
	job.ctx, job.cancel = jctx, cancel
	s.mu.Lock()
	s.jobs[id] = job
	s.publishLocked()
	s.mu.Unlock()
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		defer cancel(nil)
		defer cancelT()
		res, err := s.resolver.Resolve(jctx, ResolveRequest{TaskID: id, Agent: agent, Worktree: wt, Branch: branch,
			Prompt: prompt, ConflictFiles: files, OwnAgent: own,
			Unfinished: func(ctx context.Context) string { return s.checkResolution(ctx, wt, tip) }})
		s.mu.Lock()
		stopped := job.stopped
		s.mu.Unlock()
		if !stopped {
			s.finishResolve(ctx, job, res, err)
		}
		s.mu.Lock()
		if s.jobs[id] == job {
			delete(s.jobs, id)
		}
		close(job.done)
		s.publishLocked()
		s.mu.Unlock()
		s.poke()
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
	stopped               bool          // under mu: StopResolver took the job over
}

// finishResolve applies a resolver's answer, unless the job was fenced off
// meanwhile (a stop): then every step below does nothing.
func (s *Service) finishResolve(ctx context.Context, job *resolveJob, res ResolveResult, err error) {
	id, fence, wt, tip, files := job.id, job.fence, job.wt, job.tip, job.files
	current := fenceIs(fence)
	if ctx.Err() != nil {
		// Chorus is shutting down: the next run tries again.
		bg, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		s.abortMerge(bg, wt)
		s.apply(id, current, StatusPending, nil)
		return
	}
	if job.ctx != nil && errors.Is(context.Cause(job.ctx), errResolverTimeout) {
		ref := s.shelve(ctx, job)
		why := fmt.Sprintf("the resolver agent did not answer within %s", s.opt.ResolverTimeout)
		if ref != "" {
			why += "; its work is kept on " + ref
		}
		s.apply(id, current, "", func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHumanWhen(id, current, why, "", s.manualAction(job.item), files)
		return
	}
	problem := ""
	if err != nil {
		problem = "resolver failed: " + err.Error()
	} else if res.Resolved {
		if p := s.checkResolution(ctx, wt, tip); p != "" {
			problem = "the agent said RESOLVED but " + p
		}
	}
	if err == nil && !res.Resolved {
		s.abortMerge(ctx, wt)
		expl := strings.TrimSpace(res.Explanation)
		s.apply(id, current, "", func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHumanWhen(id, current, "the agent needs a person: "+expl, expl, s.manualAction(job.item), files)
		return
	}
	if problem != "" {
		s.abortMerge(ctx, wt)
		s.apply(id, current, "", func(it *Item, _ *Stats) { it.Explanation = res.Explanation })
		s.attemptFailedWhen(ctx, id, current, problem)
		return
	}
	if !s.apply(id, current, StatusPending, func(it *Item, st *Stats) {
		it.MergeRef, it.Candidate, it.Tested = job.branch, "", false
		it.ResolvedFrom = job.head
		it.Explanation, it.LastError = res.Explanation, ""
		it.Seq = st.NextSeq // a conflicted item goes to the back
		st.NextSeq++
		st.Resolved++
	}) {
		return
	}
	s.emit(Event{Kind: EventResolved, TaskID: id, Message: res.Explanation})
}

// StopResolver is a person stopping the resolver agent of a task (or
// undoing its resolution, if it already answered but has not landed): the
// item is fenced so nothing the resolver produced can land, its work is
// kept under refs/chorus/resolver/, the branch goes back to where it was,
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
	job := s.jobs[taskID]
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
	fence := it.Fence
	if job != nil {
		job.stopped = true
		job.cancel(errResolverStopped)
	}
	snapshot := *it
	snapshot.MergeRef, snapshot.ResolvedFrom = mergeRef, from
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		if job != nil {
			<-job.done
		}
		// The worker may hold the item (fenced: it changes nothing); wait
		// until it lets go before touching the branch.
		s.opMu.Lock()
		defer s.opMu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		var ref string
		if job != nil {
			ref = s.shelve(ctx, job)
		} else {
			ref = s.shelveQueued(ctx, snapshot)
		}
		why := "its resolver was stopped by a person"
		if ref != "" {
			why += "; the resolver's work is kept on " + ref
		}
		s.waitHumanWhen(taskID, func(it *Item) bool { return it.Fence == fence }, why, "", s.manualAction(snapshot), snapshot.ConflictFiles)
		s.poke()
	}()
	return nil
}

// resolverRef names where a stopped or timed-out resolver's work is kept.
func (s *Service) resolverRef(id string) string {
	return "refs/chorus/resolver/" + id + "/" + s.opt.Now().UTC().Format("20060102T150405.000Z")
}

// shelve keeps what a resolver left in its worktree (commits, and an
// unfinished merge or edits as one more commit) on a refs/chorus/resolver/
// ref, then puts the worktree and branch back at the pre-resolution tip.
// Returns the ref ("" if there was nothing to keep).
func (s *Service) shelve(ctx context.Context, job *resolveJob) string {
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
		ref = s.resolverRef(job.id)
		if _, err := git(ctx, s.opt.RepoDir, "update-ref", ref, keep); err != nil {
			ref = ""
		}
	}
	s.abortMerge(ctx, wt)
	if ref != "" || keep != job.head {
		_, _ = git(ctx, wt, "reset", "-q", "--hard", job.head)
	}
	return ref
}

// shelveQueued undoes a resolution that was already queued: its tip goes
// to a refs/chorus/resolver/ ref and, when the resolver worked on the task
// branch itself, that branch goes back to where it was.
func (s *Service) shelveQueued(ctx context.Context, it Item) string {
	if it.MergeRef == "" || it.ResolvedFrom == "" {
		return ""
	}
	ref := it.MergeRef
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "-q", ref)
	if err != nil || tip == it.ResolvedFrom {
		return ""
	}
	keep := s.resolverRef(it.TaskID)
	if _, err := git(ctx, s.opt.RepoDir, "update-ref", keep, tip); err != nil {
		return ""
	}
	if it.MergeRef == it.Branch {
		if it.Worktree != "" && dirExists(it.Worktree) {
			if h, err := git(ctx, it.Worktree, "rev-parse", "HEAD"); err == nil && h == tip {
				_, _ = git(ctx, it.Worktree, "reset", "-q", "--hard", it.ResolvedFrom)
				return keep
			}
		}
		_, _ = git(ctx, s.opt.RepoDir, "update-ref", ref, it.ResolvedFrom, tip)
	}
	return keep
}

// worktreeReady reports that an agent worktree is on its branch with
// nothing uncommitted and no operation in progress.
func (s *Service) worktreeReady(ctx context.Context, wt, branch string) bool {
	ref, err := git(ctx, wt, "symbolic-ref", "-q", "HEAD")
	if err != nil || ref != "refs/heads/"+branch {
		return false
	}
	gd, err := git(ctx, wt, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return false
	}
	if opInProgress(gd) != "" {
		s.abortMerge(ctx, wt)
	}
	st, err := git(ctx, wt, "status", "--porcelain", "--untracked-files=no")
	return err == nil && strings.TrimSpace(st) == ""
}

// prepareResolver makes a fresh throwaway branch at the task's tip, checked
// out in Chorus's resolver worktree for this task.
func (s *Service) prepareResolver(ctx context.Context, id, wt, branch, head string) error {
	// An earlier resolver's worktree and branch may hold work: keep it
	// under refs/chorus/kept/ before both are replaced.
	if _, err := gitx.Keep(ctx, gitx.KeepOptions{Repo: s.opt.RepoDir, Task: id, Worktree: wt, Branch: branch,
		Target: head, Why: "starting a new resolver"}); err != nil {
		return fmt.Errorf("merge: could not keep the earlier resolver's work in %s, so it stays: %w", wt, err)
	}
	if dirExists(wt) {
		gitx.WorktreeMu.Lock()
		if _, err := git(ctx, s.opt.RepoDir, "worktree", "remove", "--force", wt); err != nil {
			_ = os.RemoveAll(wt)
		}
		gitx.WorktreeMu.Unlock()
	}
	gitx.WorktreeMu.Lock()
	_, _ = run(ctx, s.opt.RepoDir, "", "worktree", "prune")
	gitx.WorktreeMu.Unlock()
	if _, err := git(ctx, s.opt.RepoDir, "update-ref", "refs/heads/"+branch, head); err != nil {
		return err
	}
	gitx.WorktreeMu.Lock()
	_, err := git(ctx, s.opt.RepoDir, "worktree", "add", "-q", wt, branch)
	gitx.WorktreeMu.Unlock()
	return err
}

func (s *Service) abortMerge(ctx context.Context, wt string) {
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
func (s *Service) checkResolution(ctx context.Context, wt, tip string) string {
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
		return "the branch does not contain " + s.opt.Target + " (the merge of " + s.opt.Target + " is not committed)"
	}
	return ""
}

// prompt builds the seed's resolver prompt: both diffs and the files.
func (s *Service) prompt(ctx context.Context, it Item, branch, tip, head string, files []string, reason string) string {
	mine, _ := git(ctx, s.opt.RepoDir, "diff", tip+"..."+head)
	theirs, _ := git(ctx, s.opt.RepoDir, "diff", head+"..."+tip)
	var b strings.Builder
	b.WriteString("# Merge Conflict Resolution Task\n\n## Conflict Details\n")
	fmt.Fprintf(&b, "- Task: %s\n- Your Branch: %s\n- Target: %s\n", it.TaskID, branch, s.opt.Target)
	if len(files) > 0 {
		fmt.Fprintf(&b, "- Conflicting Files: %s\n", strings.Join(files, ", "))
	}
	b.WriteString("\n" + reason + "\n\n")
	fmt.Fprintf(&b, "A `git merge %s` is in progress in this worktree.\n\n", s.opt.Target)
	b.WriteString("## Your Changes\n```diff\n" + capText(mine, s.opt.MaxDiff) + "\n```\n\n")
	b.WriteString("## Main Branch Changes (since you branched)\n```diff\n" + capText(theirs, s.opt.MaxDiff) + "\n```\n\n")
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
	if len(s.required) > 0 {
		b.WriteString("\n## Quality commands\n")
		for _, q := range s.required {
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

// Compiled on first use: package init runs on every CLI start.
var learningsRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?ms)^## Learnings[^\n]*\n(.*?)(?:^## |\z)`) })

// LearningsSection returns the body of the scratchpad's "## Learnings"
// section, trimmed ("" when there is none).
func LearningsSection(scratchpad string) string {
	m := learningsRE().FindStringSubmatch(scratchpad)
	if m == nil {
		return ""
	}
	return strings.TrimSpace(m[1])
}

// FormatLearnings lays a scratchpad's learnings out as the learnings file
// has them: each learning (a "- " or "* " line, with the lines under it)
// followed by its attribution, "  Source: <task> (<date>, <agent>)".
// Other lines (a topic heading) are kept as they are.
func FormatLearnings(body, task, agent string, now time.Time) string {
	src := fmt.Sprintf("  Source: %s (%s, %s)", task, now.Format("2006-01-02"), agent)
	var out []string
	open, attributed := false, false
	for _, l := range strings.Split(strings.TrimSpace(body), "\n") {
		t := strings.TrimSpace(l)
		bullet := strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ")
		if open && (bullet || t == "" || strings.HasPrefix(t, "#")) {
			out = append(out, src)
			open, attributed = false, true
		}
		switch {
		case bullet:
			out = append(out, "- "+strings.TrimSpace(t[2:]))
			open = true
		case open:
			out = append(out, "  "+t) // a continuation of the learning
		default:
			out = append(out, l)
		}
	}
	if open || !attributed {
		out = append(out, src) // the last learning, or prose with no list
	}
	return strings.Join(out, "\n")
}

// extractLearnings appends the scratchpad's learnings to the shared
// learnings file as a commit on the task branch, in the task's worktree, so
// they land with the task; never in the user's checkout. Returns the
// (possibly new) branch tip.
func (s *Service) extractLearnings(ctx context.Context, it Item, head string) (string, error) {
	pad, err := os.ReadFile(filepath.Join(it.Worktree, ScratchpadPath))
	if err != nil {
		return head, nil
	}
	body := LearningsSection(string(pad))
	if body == "" {
		return head, nil
	}
	agent := it.Agent
	if agent == "" {
		agent = "agent"
	}
	source := fmt.Sprintf("Source: %s (", it.TaskID)
	p := filepath.Join(it.Worktree, LearningsPath)
	cur, _ := os.ReadFile(p)
	committed, _ := git(ctx, it.Worktree, "show", "HEAD:"+LearningsPath)
	if strings.Contains(committed, source) || strings.Contains(committed, fmt.Sprintf("## %s (%s)", it.TaskID, agent)) {
		return head, nil // extracted already (the second form is older Chorus's)
	}
	if ref, err := git(ctx, it.Worktree, "symbolic-ref", "-q", "HEAD"); err != nil || ref != "refs/heads/"+it.Branch {
		return head, nil // the worktree is not on the task branch: leave it alone
	}
	if h, err := git(ctx, it.Worktree, "rev-parse", "HEAD"); err != nil || h != head {
		return head, nil
	}
	text := string(cur)
	if text == "" {
		text = committed
		if text != "" {
			text += "\n"
		}
	}
	if text == "" {
		text = "# Learnings\n"
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	text += "\n" + FormatLearnings(body, it.TaskID, agent, s.opt.Now()) + "\n"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return head, err
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		return head, err
	}
	if _, err := git(ctx, it.Worktree, "add", "--", LearningsPath); err != nil {
		return head, err
	}
	if _, err := git(ctx, it.Worktree, "commit", "-q", "--no-verify", "-m",
		fmt.Sprintf("learn: extract from %s (%s)", it.TaskID, agent), "--", LearningsPath); err != nil {
		return head, err
	}
	return git(ctx, it.Worktree, "rev-parse", "HEAD")
}
