package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/taskid"
	"github.com/chorus-dev/chorus/worktree"
)

// CommandKind names what a Command asks for: one of the Cmd constants.
type CommandKind string

// Command kinds. Commands are plain data so any front end (or, later, a
// detached client) can send them.
const (
	CmdAssign   CommandKind = "assign"   // TaskID, optional Agent profile
	CmdPause    CommandKind = "pause"    // no new spawns; running agents go on
	CmdResume   CommandKind = "resume"   //
	CmdMode     CommandKind = "mode"     // Text: semi-auto | autopilot
	CmdStop     CommandKind = "stop"     // AgentID: task back to open, work kept
	CmdRedirect CommandKind = "redirect" // AgentID → TaskID
	CmdBlock    CommandKind = "block"    // TaskID, Text reason
	CmdEdit     CommandKind = "edit"     // TaskID, Title/Description/Acceptance
	CmdKillAll  CommandKind = "kill-all" //
	CmdAnswer   CommandKind = "answer"   // AgentID, Text typed to an agent that asked
	CmdRetry    CommandKind = "retry"    // TaskID: a failed task back to open
	CmdDone     CommandKind = "done"     // TaskID: close by hand
	CmdSignal   CommandKind = "signal"   // AgentID, Signal: from `chorus signal`
	// CmdContinue (AgentID): a person saw a stuck alert and lets the agent
	// go on; its count of iterations without a commit starts again, so the
	// alerts that hand a task to a person count from here.
	CmdContinue CommandKind = "continue"
	// CmdRollback: Level 1 AgentID (its last iteration), 2 TaskID (one
	// merged task), 3 TaskID (and its dependents), 4 Text (checkpoint ref).
	CmdRollback   CommandKind = "rollback"
	CmdCheckpoint CommandKind = "checkpoint"  // Text: reason
	CmdApprove    CommandKind = "approve"     // TaskID: a merge waiting for approval
	CmdMergeRetry CommandKind = "merge-retry" // TaskID: a merge waiting for a human, tried again
	CmdMergeDrop  CommandKind = "merge-drop"  // TaskID: taken out of the merge queue
	CmdMergeUser  CommandKind = "merge-user"  // Text: a user's own branch to merge
	// CmdMergeAcceptTarget releases a merge queue held because the target
	// branch moved outside Chorus; Text, if set, is the tip being accepted.
	CmdMergeAcceptTarget CommandKind = "merge-accept-target"
)

// Command is a request from a front end.
type Command struct {
	Kind        CommandKind `json:"kind"`
	TaskID      string      `json:"taskId,omitempty"`
	AgentID     string      `json:"agentId,omitempty"`
	Agent       string      `json:"agent,omitempty"` // profile name
	Text        string      `json:"text,omitempty"`
	Title       *string     `json:"title,omitempty"`
	Description *string     `json:"description,omitempty"`
	Acceptance  *string     `json:"acceptance,omitempty"`
	// Priority, Labels and Deps travel with a CmdEdit: set, they replace
	// the task's (Deps: the ids it is blocked by).
	Priority *int      `json:"priority,omitempty"`
	Labels   *[]string `json:"labels,omitempty"`
	Deps     *[]string `json:"deps,omitempty"`
	Signal   string    `json:"signal,omitempty"` // "TYPE: payload"
	Level    int       `json:"level,omitempty"`  // rollback level
	// Question and Options travel with a CmdSignal from `chorus ask`.
	Question string   `json:"question,omitempty"`
	Options  []string `json:"options,omitempty"`
}

// ErrUnknownAgent is returned for commands naming an agent that is not running.
var ErrUnknownAgent = errors.New("no such running agent")

// Do carries out a command. Slow work (store writes, stopping processes)
// happens off the loop; Do returns once the command is accepted.
func (e *Engine) Do(ctx context.Context, c Command) error {
	// Store writes first, outside the loop: they may take a while with bd.
	switch c.Kind {
	case CmdType:
		return e.typeText(ctx, c)
	case CmdAnswer:
		if done, err := e.answerAsked(ctx, c); done {
			return err
		}
	case CmdRollback:
		return e.rollback(ctx, c)
	case CmdMergeUser:
		if e.merge == nil {
			return errors.New("merging is off in this session")
		}
		req, err := merge.UserRequest(ctx, e.opt.Dir.Root, e.opt.Target, c.Text)
		if err != nil {
			return err
		}
		return e.merge.Enqueue(req)
	case CmdStop:
		if task, ok := e.resolverTask(ctx, c.AgentID); ok {
			// A resolver's stop goes through the merge service: it fences
			// the resolution so none of it lands, keeps the work under
			// refs/chorus/kept/<task>/, and hands the conflict to a person.
			return e.merge.StopResolver(task)
		}
	case CmdCheckpoint, CmdApprove, CmdMergeRetry, CmdMergeDrop, CmdMergeAcceptTarget:
		if e.merge == nil {
			return errors.New("merging is off in this session")
		}
		switch c.Kind {
		case CmdCheckpoint:
			ref, err := e.merge.Checkpoint(ctx, orDefault(c.Text, "manual"))
			if err == nil {
				_ = e.do(ctx, func() {
					e.st.Checkpoint = ref
					e.emit(Event{Kind: EvCheckpoint, Text: ref})
				})
			}
			return err
		case CmdApprove:
			return e.merge.Approve(c.TaskID)
		case CmdMergeRetry:
			return e.merge.Retry(c.TaskID)
		case CmdMergeAcceptTarget:
			return e.merge.AcceptTarget(c.Text)
		default:
			return e.merge.Drop(c.TaskID)
		}
	case CmdBlock:
		// The supervisor blocks the task as it stops (blockCause): released
		// first, autopilot could claim it again before the block below.
		reason := orDefault(c.Text, "blocked by the user")
		if err := e.stopTaskAgent(ctx, c.TaskID, blockCause{reason}); err != nil {
			return err
		}
		if t, err := e.opt.Store.Get(ctx, c.TaskID); err == nil && t.Status == beads.StatusBlocked {
			return nil
		}
		return e.opt.Store.Block(ctx, c.TaskID, reason)
	case CmdRetry:
		t, err := e.opt.Store.Get(ctx, c.TaskID)
		if err != nil {
			return err
		}
		if t.HasLabel(beads.LabelFailed) {
			if err := e.opt.Store.RemoveLabel(ctx, c.TaskID, beads.LabelFailed); err != nil {
				return err
			}
		}
		if err := e.opt.Store.Reopen(ctx, c.TaskID); err != nil {
			return err
		}
		return e.do(ctx, func() {
			if tr := e.st.Tasks[c.TaskID]; tr != nil {
				// A fresh budget; IterationBase stays, so the next agent
				// starts from the handover of the work kept in the worktree.
				*tr = TaskRun{FirstStarted: time.Now().UTC(), IterationBase: tr.IterationBase}
			}
			e.emit(Event{Kind: EvReleased, Task: c.TaskID, Text: "retry"})
			e.needReady = true
		})
	case CmdDone:
		if err := e.stopTaskAgent(ctx, c.TaskID, errStopped); err != nil {
			return err
		}
		return closeOnce(e.opt.Store, c.TaskID, "closed by the user")
	case CmdEdit:
		if err := editTask(ctx, e.opt.Store, c); err != nil {
			return err
		}
		return e.do(ctx, func() {
			for _, r := range e.runs {
				if r.taskID == c.TaskID {
					select {
					case r.restart <- struct{}{}:
					default:
					}
				}
			}
			e.emit(Event{Kind: EvAlert, Task: c.TaskID, Text: "task edited"})
		})
	}
	var err error
	derr := e.do(ctx, func() { err = e.apply(c) })
	if derr != nil {
		return derr
	}
	return err
}

// resolverTask returns the task a running conflict-resolver agent works
// for.
func (e *Engine) resolverTask(ctx context.Context, agentID string) (string, bool) {
	if e.merge == nil || !strings.HasPrefix(agentID, resolverPrefix) {
		return "", false
	}
	var task string
	_ = e.do(ctx, func() {
		if r := e.runs[agentID]; r != nil {
			task = r.taskID
		}
	})
	return task, task != ""
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// apply runs on the loop.
func (e *Engine) apply(c Command) error {
	switch c.Kind {
	case CmdAssign:
		if err := taskid.Check(c.TaskID); err != nil {
			// Refused before the claim: the merge queue could never take it.
			return err
		}
		if e.taskRunning(c.TaskID) {
			return fmt.Errorf("task %s already has an agent", c.TaskID)
		}
		if why := e.sessionOver(); why != "" {
			return errors.New(why)
		}
		if c.Agent != "" {
			if _, ok := e.cfg.Profile(c.Agent); !ok {
				return fmt.Errorf("agent %q is not in agents.available", c.Agent)
			}
		}
		if len(e.runs) >= e.cfg.Agents.MaxParallel {
			e.wantTasks = append(e.wantTasks, c.TaskID)
			e.emit(Event{Kind: EvAlert, Task: c.TaskID, Text: "all agent slots busy; queued"})
			return nil
		}
		e.startTask(c.TaskID, c.Agent)
	case CmdPause:
		e.st.Paused = true
		e.emit(Event{Kind: EvPaused})
	case CmdResume:
		e.st.Paused, e.diskPaused = false, false
		e.needReady = true
		e.emit(Event{Kind: EvResumed})
	case CmdMode:
		if c.Text != config.ModeSemiAuto && c.Text != config.ModeAutopilot {
			return fmt.Errorf("mode %q is not valid; allowed: semi-auto, autopilot", c.Text)
		}
		e.st.Mode = c.Text
		e.needReady = true
		e.emit(Event{Kind: EvMode, Text: c.Text})
	case CmdStop:
		r := e.runs[c.AgentID]
		if r == nil {
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		}
		r.cancel(errStopped)
	case CmdContinue:
		r := e.runs[c.AgentID]
		if r == nil {
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		}
		r.continued.Store(true)
		if a := e.st.Agents[c.AgentID]; a != nil {
			a.Alert = ""
		}
		e.emit(Event{Kind: EvContinued, Agent: c.AgentID, Task: r.taskID, Text: "a person let the agent continue; stuck alerts count again from here"})
	case CmdRedirect:
		r := e.runs[c.AgentID]
		if r == nil {
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		}
		if e.taskRunning(c.TaskID) {
			return fmt.Errorf("task %s already has an agent", c.TaskID)
		}
		r.cancel(errRedirect)
		// The slot is reused once the old task is released.
		e.wantTasks = append([]string{c.TaskID}, e.wantTasks...)
	case CmdKillAll:
		e.wantTasks = nil
		for _, r := range e.runs {
			r.cancel(errKilledAll)
		}
		if e.st.Mode == config.ModeAutopilot {
			e.st.Paused = true
		}
	case CmdAnswer:
		r := e.runs[c.AgentID]
		if r == nil {
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		}
		select {
		case r.answers <- c.Text:
		default:
			return errors.New("an answer is already waiting to be delivered")
		}
	case CmdSignal:
		r := e.runs[c.AgentID]
		if r == nil {
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		}
		s, err := signal.Parse(c.Signal)
		if err != nil {
			e.emit(Event{Kind: EvError, Agent: c.AgentID, Text: "ignored signal: " + err.Error()})
			return err
		}
		if s.Type == signal.Note {
			go r.note(s.Payload) // straight to the ledger, whatever the supervisor is doing
			return nil
		}
		if s.Type == signal.NeedsHelp && c.Question != "" {
			// `chorus ask` waits for its answer itself: record the
			// question, and leave the agent's turn alone.
			return e.recordQuestion(r, s.Payload, c.Question, c.Options)
		}
		// Never block the loop on a busy supervisor.
		go r.send(turnEvent{sig: &s, gen: -1, source: "command"})
	default:
		return fmt.Errorf("unknown command %q", c.Kind)
	}
	return nil
}

// stopTaskAgent stops the agent working on a task, if any, and waits for
// its run to end.
func (e *Engine) stopTaskAgent(ctx context.Context, taskID string, cause error) error {
	var wait chan struct{}
	if err := e.do(ctx, func() {
		for _, r := range e.runs {
			if r.taskID == taskID {
				r.cancel(cause)
				wait = r.closed
			}
		}
	}); err != nil {
		return err
	}
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// finish applies a run's outcome. Loop only.
func (e *Engine) finish(r *agentRun, o outcome) {
	e.recordRuntime(r)
	delete(e.runs, r.id)
	delete(e.st.Agents, r.id)
	e.needReady = true
	ev := Event{Agent: r.id, Task: r.taskID, Text: o.reason}
	if tr := e.st.Tasks[r.taskID]; tr != nil {
		// What the task cost so far, in the log for the morning report.
		ev.Fields = map[string]any{"usage": tr.Usage, "runtime": tr.Runtime, "iterations": tr.Iterations}
		if tr.LastFailure != "" && o.kind == "failed" {
			ev.Fields["lastFailure"] = tr.LastFailure // the why behind "reached maxIterations"
		}
		if o.kind == outFailed {
			// The evidence, for the report and a person reading the log.
			ev.Fields["output"] = tr.FailedOutput
			ev.Fields["ledger"] = filepath.Join(".chorus", LedgersDir, worktree.Slug(r.taskID)+".md")
		}
	}
	switch o.kind {
	case "completed":
		e.st.Stats.TasksCompleted++
		ev.Kind = EvCompleted
		// Closed, and its merge is in the merge queue's own record: nothing
		// left to recover, so state.json does not grow with the batch.
		if tr := e.st.Tasks[r.taskID]; tr != nil && tr.Closed {
			delete(e.st.Tasks, r.taskID) // its usage went with the event
		}
	case "blocked":
		e.st.Stats.TasksBlocked++
		ev.Kind = EvBlocked
	case "failed":
		e.st.Stats.TasksFailed++
		ev.Kind = EvFailed
	case "released", "claim-lost":
		ev.Kind = EvReleased
	case outHookBlocked:
		ev.Kind = EvReleased
		e.holdOffHooked(r.taskID)
	default:
		ev.Kind = EvError
	}
	e.emit(ev)
	switch o.kind {
	case outError, outStartFailed, outUnstartable:
		e.startFailed(r, o)
	}
	if o.kind != outCompleted {
		e.probeEnded(r.taskID)
	}
	e.emit(Event{Kind: EvFinished, Agent: r.id, Task: r.taskID, Text: string(o.kind)})
}

// Recover reconciles state.json from a previous run before Run starts:
// agents whose process is gone have their task put back to open (worktree
// kept); live orphans are ended with their whole group; tasks that passed
// their checks but were not closed yet are closed (once).
func (e *Engine) Recover(ctx context.Context) error {
	// Keys die with the engine that made them: agents of an earlier
	// session get new ones when they are started again.
	if err := signal.RetireAllKeys(e.opt.Dir.Path); err != nil {
		return fmt.Errorf("clearing old signal keys: %w", err)
	}
	if w := e.checkLearnings(ctx); w != "" {
		e.startAlerts = append(e.startAlerts, w)
	}
	// This instance's heartbeat first: its claims come only after it.
	// Then the claims of instances taken for dead go back to open.
	if err := e.beat(ctx); err != nil {
		e.startAlerts = append(e.startAlerts, "writing this instance's heartbeat to the task store: "+err.Error())
	}
	e.sweep(ctx)
	old, err := LoadState(e.opt.Dir.State())
	if err != nil {
		return err
	}
	adopted := e.adoptHosts(ctx, old)
	if old == nil {
		return e.saveState()
	}
	e.st.Stats = old.Stats
	e.st.Tasks = old.Tasks
	for tid, tr := range e.st.Tasks {
		if adopted[tid] != nil {
			continue
		}
		tr.Errors = 0 // a new session gives agents a fresh chance
		if tr.Open && !tr.CompleteSignalled {
			// The engine died during this iteration: the agent does not pay
			// for it (a COMPLETE it signalled is re-checked instead).
			tr.Iterations, tr.Open = max(tr.Iterations-1, 0), false
		}
	}
	e.st.MergeQueue, e.st.MergeStats = old.MergeQueue, old.MergeStats
	if e.merge != nil {
		hist, err := e.history.load()
		if err != nil {
			return err
		}
		// The history is appended before state.json is rewritten, so after
		// a crash in between, a task's history record can be newer than its
		// queue entry: the same item (same Seq) finished. A queue entry with
		// a higher Seq is a later merge of the task (after a rollback).
		final := map[string]merge.Item{}
		for _, it := range hist {
			final[it.TaskID] = it
		}
		var items []merge.Item
		for _, it := range old.MergeQueue {
			if h, ok := final[it.TaskID]; ok && h.Seq >= it.Seq {
				continue
			}
			delete(final, it.TaskID)
			items = append(items, it)
		}
		for _, it := range hist {
			if _, ok := final[it.TaskID]; ok {
				items = append(items, it)
			}
		}
		e.merge.Restore(items, old.MergeStats)
	}
	e.st.Checkpoint = old.Checkpoint
	for id, a := range old.Agents {
		if cl := adopted[a.TaskID]; cl != nil {
			sig := a.Signal
			if tr := e.st.Tasks[a.TaskID]; tr != nil && tr.CompleteSignalled {
				sig = nil // its check runs again (recheck) instead
			}
			e.startTaskWith(a.TaskID, a.Type, cl, sig)
			continue
		}
		if a.PID > 0 && ptyproc.StopOrphanTree(a.PID, a.PStart, 5*time.Second) {
			// An agent of a Chorus that died: nobody watches it any more.
			e.emit(Event{Kind: EvRecovered, Agent: id, Task: a.TaskID, Text: "ended an orphaned agent process"})
		}
		if a.Worktree != "" {
			// Its git commands died with it; their locks would block the
			// next commit in that worktree.
			_, _ = e.wt.ClearStaleLocks(worktree.Worktree{Dir: a.Worktree, Branch: a.Branch})
		}
		tr := e.st.Tasks[a.TaskID]
		if tr != nil && tr.Completed && !tr.Closed {
			if err := closeOnce(e.opt.Store, a.TaskID, "completed by "+id); err == nil {
				tr.Closed = true
			}
			continue
		}
		if t, err := e.opt.Store.Get(ctx, a.TaskID); err == nil && t.Status == beads.StatusInProgress && OwnClaim(t.Assignee, e.instance) {
			if err := e.opt.Store.Release(ctx, a.TaskID); err != nil {
				e.emit(Event{Kind: EvError, Task: a.TaskID, Text: "releasing after a crash: " + err.Error()})
			}
		}
		e.emit(Event{Kind: EvRecovered, Agent: id, Task: a.TaskID, Text: "task back to open; worktree kept"})
	}
	// Claims made just before a crash, before state.json recorded the
	// agent: this instance's own only. Another instance's are released by
	// the sweep below, and only once its heartbeat is too old.
	if ts, err := e.opt.Store.List(ctx); err == nil {
		for _, t := range ts {
			if t.Status == beads.StatusInProgress && OwnClaim(t.Assignee, e.instance) && adopted[t.ID] == nil {
				if tr := e.st.Tasks[t.ID]; tr != nil && tr.Completed {
					if closeOnce(e.opt.Store, t.ID, "completed") == nil {
						tr.Closed = true
					}
					continue
				}
				_ = e.opt.Store.Release(ctx, t.ID)
				e.emit(Event{Kind: EvRecovered, Task: t.ID, Text: "task back to open; worktree kept"})
			}
		}
	}
	queued := map[string]bool{}
	if e.merge != nil {
		for _, it := range e.merge.Snapshot().Items { // live queue and history
			queued[it.TaskID] = true
		}
	}
	for id, tr := range e.st.Tasks {
		if e.merge != nil && tr.Completed && tr.Merge != nil && !queued[id] {
			// Completed, but the crash came before the merge was queued.
			if err := e.merge.Enqueue(*tr.Merge); err != nil {
				e.emit(Event{Kind: EvError, Task: id, Text: "queueing the merge after a crash: " + err.Error()})
			} else {
				e.emit(Event{Kind: EvRecovered, Task: id, Text: "merge queued after a crash"})
			}
		}
		if tr.Completed && !tr.Closed {
			if closeOnce(e.opt.Store, id, "completed") == nil {
				tr.Closed = true
			}
		}
	}
	return e.saveState()
}

// editTask writes a CmdEdit to the store: the text fields and priority in
// one update, then the labels and dependencies that differ. A dependency
// that would close a cycle is refused by the store, and named.
func editTask(ctx context.Context, st beads.Store, c Command) error {
	if _, err := st.Update(ctx, c.TaskID, beads.Update{Title: c.Title, Description: c.Description, Acceptance: c.Acceptance, Priority: c.Priority}); err != nil {
		return err
	}
	if c.Labels == nil && c.Deps == nil {
		return nil
	}
	t, err := st.Get(ctx, c.TaskID)
	if err != nil {
		return err
	}
	if c.Labels != nil {
		add, drop := setDiff(t.Labels, *c.Labels)
		for _, l := range add {
			if err := st.AddLabel(ctx, c.TaskID, l); err != nil {
				return fmt.Errorf("label %s: %w", l, err)
			}
		}
		for _, l := range drop {
			if err := st.RemoveLabel(ctx, c.TaskID, l); err != nil {
				return fmt.Errorf("label %s: %w", l, err)
			}
		}
	}
	if c.Deps != nil {
		add, drop := setDiff(t.BlockedBy(), *c.Deps)
		for _, d := range add {
			if err := st.AddDependency(ctx, c.TaskID, d); err != nil {
				return fmt.Errorf("%s blocked by %s: %w", c.TaskID, d, err)
			}
		}
		for _, d := range drop {
			if err := st.RemoveDependency(ctx, c.TaskID, d); err != nil {
				return fmt.Errorf("%s blocked by %s: %w", c.TaskID, d, err)
			}
		}
	}
	return nil
}

// setDiff says what to add to have and what to drop from it to get want.
func setDiff(have, want []string) (add, drop []string) {
	in := func(xs []string, x string) bool {
		for _, y := range xs {
			if y == x {
				return true
			}
		}
		return false
	}
	for _, w := range want {
		if !in(have, w) && !in(add, w) {
			add = append(add, w)
		}
	}
	for _, h := range have {
		if !in(want, h) {
			drop = append(drop, h)
		}
	}
	return add, drop
}
