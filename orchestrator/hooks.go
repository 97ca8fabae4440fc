package orchestrator

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/worktree"
)

// EvHook reports a hook's answer when it said more than a silent continue.
// A hook that failed is an EvAlert naming the hook and the problem.
const EvHook EventKind = "hook"

// outHookBlocked: a pre-task-claim, pre-agent-start or pre-iteration hook
// said block; the task is not (or no longer) claimed and autopilot leaves
// it alone for hookHoldOff.
const outHookBlocked outcomeKind = "hook-blocked"

// hookHoldOff is how long autopilot leaves a task a hook blocked.
const hookHoldOff = time.Minute

func newHookRunner(e *Engine) *hooks.Runner {
	return &hooks.Runner{
		Dir: filepath.Join(e.opt.Dir.Path, "hooks"), WorkDir: e.opt.Dir.Root,
		Timeout: time.Duration(e.cfg.Hooks.TimeoutSeconds) * time.Second,
		Env:     []string{"CHORUS_DIR=" + e.opt.Dir.Path},
	}
}

// runHook runs one hook and reports what it said. Never on the loop
// goroutine: supervisors and the merge worker call it. It is bounded by
// hooks.timeoutSeconds, not by the run's context, so a hook about a run
// that ended (on-agent-timeout) still runs.
func (e *Engine) runHook(in hooks.Input) hooks.Answer {
	a := e.hooks.Run(context.Background(), in)
	if !a.Ran {
		return a
	}
	ev := Event{Fields: map[string]any{"hook": string(in.Event)}}
	if in.Agent != nil {
		ev.Agent = in.Agent.ID
	}
	if in.Task != nil {
		ev.Task = in.Task.ID
	}
	switch {
	case a.Problem != "":
		ev.Kind = EvAlert
		ev.Text = fmt.Sprintf("%s hook: %s; treated as continue", in.Event, a.Problem)
		ev.Fields["problem"] = a.Problem
	case a.Message != "" || a.Result != hooks.Continue:
		ev.Kind = EvHook
		ev.Text = fmt.Sprintf("%s hook: %s", in.Event, a.Result)
		if a.Message != "" {
			ev.Text += ": " + a.Message
		}
		ev.Fields["result"], ev.Fields["message"] = string(a.Result), a.Message
	default:
		return a
	}
	select {
	case e.msgs <- func() { e.emit(ev); e.dirty = false }:
	case <-e.loopDone:
	}
	return a
}

// relDir is dir relative to the repository root when inside it.
func (e *Engine) relDir(dir string) string {
	if dir == "" {
		return ""
	}
	if rel, err := filepath.Rel(e.opt.Dir.Root, dir); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return dir
}

// mergeHook is the merge service's Hook: it runs on the merge worker.
func (e *Engine) mergeHook(_ context.Context, ev hooks.Event, it merge.Item) hooks.Answer {
	in := hooks.Input{Event: ev, Task: &hooks.Task{ID: it.TaskID, Title: it.Title, Status: beads.StatusClosed},
		Merge: &hooks.Merge{Branch: it.Branch, Target: e.opt.Target, Commit: it.MergeCommit, ConflictFiles: it.ConflictFiles}}
	if it.User {
		in.Task.Status = ""
	}
	if it.Agent != "" {
		in.Agent = &hooks.Agent{ID: agentID(it.Agent, it.TaskID), Type: it.Agent, Worktree: e.relDir(it.Worktree)}
	}
	if ev == hooks.OnConflict {
		in.Reason = it.LastError
	}
	return e.runHook(in)
}

// hook runs an agent event's hook for this run. it > 0 adds the
// iteration; out, the agent's output.
func (r *agentRun) hook(ev hooks.Event, t beads.Task, wt worktree.Worktree, it int, out *hooks.Output) hooks.Answer {
	status := beads.StatusInProgress
	switch ev {
	case hooks.PreTaskClaim:
		status = string(t.Status)
	case hooks.PostTaskComplete:
		status = beads.StatusClosed
	}
	in := hooks.Input{Event: ev,
		Agent: &hooks.Agent{ID: r.id, Type: r.profileName, Worktree: r.e.relDir(wt.Dir)},
		Task:  &hooks.Task{ID: t.ID, Title: t.Title, Status: string(status)}, Output: out}
	if it > 0 {
		in.Iteration = &hooks.Iteration{Number: it, MaxIterations: r.e.cfg.Completion.MaxIterations}
	}
	if out != nil && out.Stdout == "" {
		out.Stdout = hooks.Tail(r.screen.Text(), hooks.StdoutLines)
	}
	return r.e.runHook(in)
}

// output is the agent's last screen lines and exit code for a hook.
func (r *agentRun) output(code int) *hooks.Output {
	return &hooks.Output{ExitCode: code}
}

// hookBlocked ends a run a pre-hook blocked: the agent stops, its work is
// committed and the task released with the hook's message.
func (r *agentRun) hookBlocked(ev hooks.Event, a hooks.Answer, t beads.Task, wt worktree.Worktree, p agentProc) outcome {
	r.stopProc(p)
	r.commitWIP(wt, string(ev)+" hook blocked")
	if err := r.e.opt.Store.Release(context.Background(), t.ID); err != nil {
		r.event(EvError, "releasing the task: "+err.Error(), nil)
	}
	return outcome{kind: outHookBlocked, reason: hookReason(ev, a)}
}

func hookReason(ev hooks.Event, a hooks.Answer) string {
	msg := a.Message
	if msg == "" {
		msg = "it gave no reason"
	}
	return fmt.Sprintf("the %s hook blocked it: %s", ev, msg)
}

// gate runs the quality commands for a COMPLETE (signalled, or a
// post-iteration hook's complete) and completes the task when they pass.
func (r *agentRun) gate(t beads.Task, wt worktree.Worktree, pp *agentProc, gen int) turnResult {
	e, ctx := r.e, r.ctx
	// Durable before the check: a crash during it must not cost the agent
	// its COMPLETE (the next run re-checks).
	r.update(func(st *State, a *AgentState) { a.Status = AgentChecking; st.run(t.ID).CompleteSignalled = true })
	if e.merge != nil {
		// A lone candidate queued meanwhile may wait for this one to join
		// its batch; passing queues it (which ends the mark), anything
		// else ends it here.
		e.merge.Checking(t.ID, true)
		defer e.merge.Checking(t.ID, false)
	}
	ok, results := runQuality(ctx, wt.Dir, e.cfg.SortedQuality(), r.env(0), r.checkStarted)
	r.qualityDone(t, ok, results)
	if ctx.Err() != nil {
		return turnResult{done: r.cancelled(t, wt, *pp)}
	}
	if ok {
		done, failure := r.complete(t, wt, *pp, gen)
		if done == nil {
			*pp = nil // stopped for the commit; the next iteration respawns
			r.update(func(st *State, a *AgentState) { a.Status = AgentRunning })
			return turnResult{failure: failure, end: EndRefused}
		}
		return turnResult{done: done}
	}
	r.update(func(st *State, a *AgentState) { a.Status = AgentRunning; st.run(t.ID).CompleteSignalled = false })
	return turnResult{failure: describeFailure(results), end: EndCheckFailed}
}

// postIteration runs the post-iteration hook; its complete goes through
// the same gate as a COMPLETE signal. A non-nil outcome ends the run.
func (r *agentRun) postIteration(t beads.Task, wt worktree.Worktree, pp *agentProc, it, gen int, res *turnResult) *outcome {
	a := r.hook(hooks.PostIteration, t, wt, it, r.output(res.exitCode))
	if res.done != nil || a.Result != hooks.Complete {
		return nil
	}
	g := r.gate(t, wt, pp, gen)
	if g.done != nil {
		return g.done
	}
	res.failure, res.end, res.typed = g.failure, g.end, ""
	return nil
}

// holdOffHooked keeps autopilot off a task a hook blocked, then lets it
// be picked again. Loop only.
func (e *Engine) holdOffHooked(taskID string) {
	if e.hookHeld == nil {
		e.hookHeld = map[string]time.Time{}
	}
	e.hookHeld[taskID] = time.Now().Add(hookHoldOff)
	// A timer, not a goroutine Run waits for: shutdown must not wait it out.
	time.AfterFunc(hookHoldOff, func() {
		select {
		case e.msgs <- func() { e.needReady = true; e.dirty = false }:
		case <-e.loopDone:
		}
	})
}

// hookHeldOff reports whether autopilot leaves a task alone. Loop only.
func (e *Engine) hookHeldOff(taskID string) bool {
	t, ok := e.hookHeld[taskID]
	return ok && time.Now().Before(t)
}
