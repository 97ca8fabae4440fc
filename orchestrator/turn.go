package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/usage"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/worktree"
)

// One turn of an agent: waiting for its signals or exit, and acting on
// them (quality gate, completion, blocking, failing, a stop from outside).

// exitGrace is how long an exit waits for a signal still in transit.
const exitGrace = 2 * time.Second

// turnResult is how one iteration ended.
type turnResult struct {
	done    *outcome
	failure string // why the task is not finished, for the next iteration
	end     TurnEnd
	typed   string
	edited  bool // the task's text changed: rebuild the prompt
	// limit is the usage limit the agent reported (end EndUsageLimit).
	limit usage.Finding
	// exitCode is the agent's, when the iteration ended with its exit.
	exitCode int
}

// turn waits for the agent to signal or exit and acts on it.
func (r *agentRun) turn(t beads.Task, wt worktree.Worktree, pp *agentProc, det *signal.Detector, gen int) turnResult {
	e, ctx := r.e, r.ctx
	seen := map[signal.Type]bool{}
	// A `chorus signal` the agent ran just before exiting may still be on
	// its way through the signals directory; give it a moment before
	// deciding the agent exited without one.
	var exitEv *turnEvent
	var exitWait <-chan time.Time
	// A turn that ended on a near miss, or with nothing while the agent
	// sits idle, becomes a question to the agent (EndUnconfirmed) once a
	// counting signal had its moment to arrive.
	var ask string
	var askWait <-chan time.Time
	for {
		select {
		case <-askWait:
			if ask == idleText && *pp != nil && busyShown(r.screen.Text()) {
				askWait = nil // it went on working: the next turn's end decides
				continue
			}
			return turnResult{failure: ask, end: EndUnconfirmed}
		case <-exitWait:
			ev := *exitEv
			r.dropQuestion()
			*pp = nil
			r.update(func(s *State, a *AgentState) { a.PID = 0 })
			if ev.lost != "" {
				r.event(EvAgentExit, "agent host lost: "+ev.lost, map[string]any{"exitCode": ev.code, "hostLost": true})
				return turnResult{failure: "The agent's host was lost (" + ev.lost + "); the task runs again from its work.", end: EndHostLost, exitCode: ev.code}
			}
			r.event(EvAgentExit, ev.reason, map[string]any{"exitCode": ev.code})
			if ev.code == 0 && ask != "" && ask != idleText {
				// A headless run ends right after its final message: its
				// near miss is the question for the next run.
				return turnResult{failure: ask, end: EndUnconfirmed}
			}
			if ev.code != 0 {
				out := r.output(ev.code)
				r.hook(hooks.OnAgentError, t, wt, 0, out)
				if f, ok := usage.Text(ev.reason, time.Now()); ok {
					return turnResult{failure: f.Text, end: EndUsageLimit, limit: f, exitCode: ev.code}
				}
				if ev.reason != "" {
					return turnResult{failure: fmt.Sprintf("The agent process exited with code %d: %s", ev.code, ev.reason), end: EndCrashed, exitCode: ev.code}
				}
				msg := fmt.Sprintf("The agent process exited with code %d before finishing.", ev.code)
				if last := oneLine(hooks.Tail(r.screen.Text(), 3), 300); last != "" {
					// What it printed last names the cause (and lets the
					// run tell an outage from this task's failure).
					msg += " Its last output: " + last
				}
				return turnResult{failure: msg, end: EndCrashed, exitCode: ev.code}
			}
			return turnResult{failure: "The agent exited without signalling COMPLETE.", end: EndExited}
		case <-ctx.Done():
			return turnResult{done: r.cancelled(t, wt, *pp)}
		case <-r.restart:
			r.stopProc(*pp)
			r.dropQuestion()
			*pp = nil
			if base := r.resetTo.Swap(nil); base != nil {
				r.commitWIP(wt, "before rollback")
				if err := r.e.wt.Rewind(context.Background(), r.taskID, wt.Dir, *base); err != nil {
					r.event(EvError, "rolling back the iteration: "+err.Error(), nil)
				} else {
					r.event(EvRollback, "level 1: worktree reset to "+(*base)[:min(12, len(*base))], nil)
				}
				return turnResult{failure: "A human rolled back your last iteration; the worktree is back where it started. Try a different approach.", end: EndRedo}
			}
			// The task was edited: start over with the new text.
			return turnResult{failure: "The task description changed; re-read it.", edited: true, end: EndRedo}
		case ev := <-r.events:
			if ev.limit != nil {
				if ev.gen == gen || ev.gen == -1 {
					return turnResult{failure: ev.limit.Text, end: EndUsageLimit, limit: *ev.limit}
				}
				continue
			}
			if ev.exited {
				if ev.gen == gen && exitEv == nil {
					exitEv = &ev
					exitWait = time.After(exitGrace)
				}
				continue
			}
			if ev.miss != nil || ev.turnEnded {
				if ev.gen != gen || exitEv != nil || ev.at.UnixNano() < r.turnFrom.Load() {
					continue // another process's, or a turn already judged
				}
				if ev.miss != nil {
					ask, askWait = missText(*ev.miss), time.After(missGrace)
				} else if r.interactive() && (ask == "" || ask == idleText) {
					ask, askWait = idleText, time.After(idleGrace)
				}
				continue
			}
			if exitEv != nil {
				*pp = nil // the process is gone; decisions below must not type into it
			}
			s := *ev.sig
			if s.Type != signal.Progress && s.Type != signal.Note {
				ask, askWait = "", nil // it signalled after all
			}
			if s.Type == signal.Note {
				r.note(s.Payload) // notes are many; none ends a turn
				continue
			}
			if seen[s.Type] && s.Type != signal.Progress {
				continue // the same signal through a second channel
			}
			seen[s.Type] = true
			if n, ok := s.Percent(); ok && s.Type == signal.Progress {
				// State first, then the event: whoever sees the event finds it.
				r.update(func(st *State, a *AgentState) { a.Progress = n })
			}
			r.event(EvSignal, s.String(), map[string]any{"type": string(s.Type), "source": ev.source})
			r.ledgerLine(t, "signal "+s.String())
			switch s.Type {
			case signal.Progress:
			case signal.NeedsHelp:
				if res, ok := r.needsHelp(t, wt, pp, det, gen, s.Payload); !ok {
					return res
				}
				seen[signal.NeedsHelp] = false
			case signal.Blocked:
				r.settle(*pp, gen)
				r.commitWIP(wt, "blocked")
				reason := s.Payload
				if reason == "" {
					reason = "the agent reported BLOCKED"
				}
				if err := e.opt.Store.Block(context.Background(), t.ID, reason); err != nil {
					r.event(EvError, "marking blocked: "+err.Error(), nil)
				}
				return turnResult{done: &outcome{kind: "blocked", reason: reason}}
			case signal.Complete:
				return r.onComplete(t, wt, pp, gen, s)
			default:
				// RESOLVED / NEEDS_HUMAN belong to conflict resolution.
			}
		}
	}
}

// recheck runs the quality commands for a COMPLETE recorded before an
// interruption: the task completes when they pass; otherwise the failure
// is the next iteration's feedback.
func (r *agentRun) recheck(t beads.Task, wt worktree.Worktree) (*outcome, string) {
	r.event(EvAlert, "re-running the quality check for a COMPLETE signalled before an interruption", nil)
	r.update(func(st *State, a *AgentState) {
		a.Status, a.Title, a.Worktree, a.Branch = AgentChecking, t.Title, wt.Dir, wt.Branch
	})
	ok, results := runQuality(r.ctx, wt.Dir, r.e.cfg.SortedQuality(), r.env(0), r.checkStarted)
	r.qualityDone(t, ok, results)
	if r.ctx.Err() != nil {
		return r.cancelled(t, wt, nil), ""
	}
	if ok {
		return r.complete(t, wt, nil, 0)
	}
	r.update(func(st *State, a *AgentState) { a.Status = AgentRunning; st.run(t.ID).CompleteSignalled = false })
	return nil, describeFailure(results)
}

// needsHelp waits for a human answer and delivers it. ok=false means the
// run ended while waiting.
func (r *agentRun) needsHelp(t beads.Task, wt worktree.Worktree, pp *agentProc, det *signal.Detector, gen int, q string) (turnResult, bool) {
	r.update(func(s *State, a *AgentState) { a.Status, a.Question = AgentNeedsHelp, q })
	r.event(EvNeedsHelp, q, nil)
	select {
	case <-r.ctx.Done():
		return turnResult{done: r.cancelled(t, wt, *pp)}, false
	case ans := <-r.answers:
		r.update(func(s *State, a *AgentState) { a.Status, a.Question = AgentRunning, "" })
		if *pp != nil && !r.interactive() {
			// A headless agent reads no input: the answer goes into the
			// handover of the next one.
			r.settle(*pp, gen)
			*pp = nil
		}
		if *pp != nil {
			r.detect(func() { det.AddPrompt(ans) })
			r.turnFrom.Store(time.Now().UnixNano()) // the question's turn is judged
			if err := r.typeInto(*pp, ans); err == nil {
				return turnResult{}, true
			}
			r.stopProc(*pp)
			*pp = nil
		}
		return turnResult{failure: "A human answered your question: " + ans, end: EndRedo}, false
	}
}

// nothingToMerge is what an agent is told when it signals COMPLETE with
// no work on its branch.
func nothingToMerge(branch string) string {
	return fmt.Sprintf("COMPLETE was not accepted: there is nothing to merge. Branch %s has no commit of its own and no uncommitted change. "+
		"Do the work and commit it, then signal COMPLETE again. If the task truly needs no change, signal COMPLETE with the reason instead: "+
		"COMPLETE: %s: <why>.", branch, signal.NothingToChange)
}

// closeUnchanged closes a task whose agent found that it needs no change
// and left nothing to merge: no merge is queued; the reason is the task's
// close reason.
func (r *agentRun) closeUnchanged(t beads.Task, wt worktree.Worktree, p agentProc, gen int, reason string) *outcome {
	e := r.e
	r.settle(p, gen)
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Completed = true })
	if err := closeOnce(e.opt.Store, t.ID, reason); err != nil {
		r.event(EvError, "closing the task: "+err.Error(), nil)
	}
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Closed = true })
	// Nothing of the agent's is in it; Remove keeps it if anything could
	// be lost after all.
	_ = e.wt.Remove(context.Background(), wt, e.opt.Target)
	return &outcome{kind: "completed", reason: reason}
}

// complete records a finished task: it closes it and queues the merge.
func (r *agentRun) complete(t beads.Task, wt worktree.Worktree, p agentProc, gen int) (*outcome, string) {
	e := r.e
	r.settle(p, gen)
	// What the agent left uncommitted is not committed for it: the branch
	// is the result (removing the worktree later keeps the rest).
	if a := r.hook(hooks.PreTaskComplete, t, wt, 0, nil); a.Result == hooks.Block {
		return nil, "The task is not complete yet: " + hookReason(hooks.PreTaskComplete, a) + "."
	}
	req := merge.Request{TaskID: t.ID, Title: t.Title, Branch: wt.Branch, Agent: r.profileName,
		Worktree: wt.Dir, Priority: t.Priority, DependsOn: t.BlockedBy()}
	r.update(func(s *State, a *AgentState) {
		tr := s.run(t.ID)
		tr.Completed = true
		if e.merge != nil {
			tr.Merge = &req
			// Enqueue's save, next, writes this with the queue: one
			// fsync on the way to the landing instead of two.
			e.dirty = false
		}
	})
	if e.merge != nil {
		if err := e.merge.Enqueue(req); err != nil {
			r.event(EvError, "queueing the merge: "+err.Error(), nil)
		} else {
			r.event(EvMergeQueued, wt.Branch, nil)
		}
	}
	closed := true
	if err := closeOnce(e.opt.Store, t.ID, "completed by "+r.id); err != nil {
		// Left completed but not closed: the next start closes it, rather
		// than taking the claim for a crash's and opening the task again.
		r.event(EvError, "closing the task: "+err.Error(), nil)
		closed = false
	}
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Closed = closed })
	r.hook(hooks.PostTaskComplete, t, wt, 0, nil)
	return &outcome{kind: "completed"}, ""
}

// closeOnce closes a task unless it is closed already, so recovery can
// repeat it safely.
func closeOnce(s beads.Store, id, reason string) error {
	t, err := s.Get(context.Background(), id)
	if err != nil {
		return err
	}
	if t.Status == beads.StatusClosed {
		return nil
	}
	return s.Close(context.Background(), id, reason)
}

// fail ends a task as FAILED: the agent stopped, its work committed, the
// task blocked with the failed label and the reason, the evidence (the
// agent's last output lines) kept in the state and the event.
func (r *agentRun) fail(t beads.Task, wt worktree.Worktree, p agentProc, reason string) outcome {
	r.stopProc(p)
	r.commitWIP(wt, "failed")
	if err := markFailed(r.e.opt.Store, t.ID, reason); err != nil {
		r.event(EvError, "marking the task failed: "+err.Error(), nil)
	}
	out := strings.TrimSpace(hooks.Tail(r.screen.Text(), failedOutputLines))
	r.update(func(s *State, a *AgentState) { s.run(t.ID).setFailed(reason, out) })
	return outcome{kind: outFailed, reason: reason}
}

// failedOutputLines is how much of the agent's screen a FAILED task keeps.
const failedOutputLines = 15

// FailedNote starts the note of a FAILED task in the task store.
const FailedNote = "FAILED: "

// markFailed represents FAILED in the task store, so that `bd` users see
// it too: the failed label first (a crash between the two leaves a
// labelled task that autopilot skips, never a plain blocked one), then
// status blocked with the reason.
func markFailed(s beads.Store, id, reason string) error {
	if err := s.AddLabel(context.Background(), id, beads.LabelFailed); err != nil {
		return err
	}
	return s.Block(context.Background(), id, FailedNote+reason)
}

// cancelled handles a run ended from outside: stop, keep the work, and
// put the task where the cause says.
func (r *agentRun) cancelled(t beads.Task, wt worktree.Worktree, p agentProc) *outcome {
	cause := context.Cause(r.ctx)
	if errors.Is(cause, errTimeout) {
		r.hook(hooks.OnAgentTimeout, t, wt, 0, &hooks.Output{ExitCode: -1})
		o := r.fail(t, wt, p, fmt.Sprintf("task timeout (%d minutes) reached", r.e.cfg.Completion.TaskTimeout))
		return &o
	}
	r.stopProc(p)
	r.commitWIP(wt, cause.Error())
	var bc blockCause
	if errors.Is(cause, errBudget) || errors.As(cause, &bc) {
		reason := cause.Error()
		_ = r.e.opt.Store.Block(context.Background(), t.ID, reason)
		return &outcome{kind: "blocked", reason: reason}
	}
	if err := r.e.opt.Store.Release(context.Background(), t.ID); err != nil {
		r.event(EvError, "releasing the task: "+err.Error(), nil)
	}
	return &outcome{kind: "released", reason: cause.Error()}
}

// commitWIP commits whatever the stopped agent left uncommitted, so no
// work is lost. The agent is gone: any git lock it left behind is stale.
func (r *agentRun) commitWIP(wt worktree.Worktree, why string) error {
	if wt.Dir == "" {
		return nil
	}
	if removed, err := r.e.wt.ClearStaleLocks(wt); err == nil && len(removed) > 0 {
		r.event(EvAlert, "removed a stale git lock the agent left: "+strings.Join(removed, ", "), nil)
	}
	ok, err := r.e.wt.CommitWIP(context.Background(), wt, worktree.WIPMessage(r.taskID, why))
	if err != nil {
		// The work stays uncommitted in the worktree: say where, so no
		// message claims it was committed.
		r.event(EvError, "committing work in progress: "+err.Error(), map[string]any{FieldUncommitted: wt.Dir, "branch": wt.Branch})
		return err
	}
	if ok {
		r.event(EvAlert, "uncommitted work saved as a WIP commit on "+wt.Branch, nil)
	}
	return nil
}

func (r *agentRun) diffStat(wt worktree.Worktree, base string) string {
	commits, err := r.e.wt.CommitsSince(context.Background(), wt, base)
	if err != nil || len(commits) == 0 {
		return ""
	}
	return fmt.Sprintf("%d new commit(s) on %s in the last iteration.", len(commits), wt.Branch)
}
