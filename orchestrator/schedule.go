package orchestrator

// The scheduler: when the engine is idle, which ready tasks fill free
// slots, and the agent profile and claim identity each task runs under.

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/taskid"
	"github.com/chorus-dev/chorus/worktree"
)

// idle: nothing runs, nothing more will be picked, and merges cannot move
// without a human.
func (e *Engine) idle() bool {
	if len(e.runs) > 0 || e.fetching || e.waitingRetry() {
		return false
	}
	if e.st.Hold != nil && e.st.Mode == config.ModeAutopilot && !e.st.Paused && !(e.noReady && !e.needReady) {
		// A held run with work left resumes by itself: it is waiting,
		// not done.
		return false
	}
	// The merge service's published snapshot, never its lock: its worker
	// may be waiting on this loop to persist. Its events must all be
	// handled too: the snapshot can turn idle while the landing that made
	// it so is still on its way to this loop.
	if e.merge != nil && (!e.merge.Snapshot().Idle || !e.merge.Delivered(e.mergeRead)) {
		return false
	}
	if e.st.Mode == config.ModeAutopilot && !e.st.Paused {
		return e.noReady && !e.needReady
	}
	return len(e.wantTasks) == 0
}

// schedule fills free slots: in autopilot from the ready list, in
// semi-auto from tasks a front end asked for.
func (e *Engine) schedule() {
	if e.closing || e.st.Paused || e.sessionOver() != "" {
		return
	}
	if e.holding() {
		return
	}
	for len(e.wantTasks) > 0 && len(e.runs) < e.cfg.Agents.MaxParallel && !e.holding() {
		id := e.wantTasks[0]
		e.wantTasks = e.wantTasks[1:]
		e.startTask(id, "")
	}
	if e.st.Mode != config.ModeAutopilot || len(e.runs) >= e.cfg.Agents.MaxParallel {
		return
	}
	if e.fetching || !e.needReady {
		return
	}
	e.fetching, e.needReady = true, false
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		read := time.Now()
		ts, err := e.opt.Store.Ready(context.Background(), beads.ReadyOptions{})
		e.post(func() {
			e.fetching = false
			if err != nil {
				e.emit(Event{Kind: EvError, Text: "listing ready tasks: " + err.Error()})
				e.noReady = true
				return
			}
			e.assignReady(ts, read)
		})
	}()
}

// assignReady starts agents on ready tasks by priority, then age, skipping
// tasks already running or marked failed. read is when the list was read:
// a task failed since still shows open in it.
func (e *Engine) assignReady(ts []beads.Task, read time.Time) {
	sort.SliceStable(ts, func(i, j int) bool {
		if ts[i].Priority != ts[j].Priority {
			return ts[i].Priority < ts[j].Priority
		}
		return ts[i].CreatedAt.Before(ts[j].CreatedAt)
	})
	started := 0
	for _, t := range ts {
		if len(e.runs) >= e.cfg.Agents.MaxParallel || e.st.Paused || e.st.Mode != config.ModeAutopilot || e.holding() {
			break
		}
		if e.taskRunning(t.ID) || t.HasLabel(beads.LabelFailed) || t.Assignee != "" || e.backingOff(t.ID) || e.hookHeldOff(t.ID) {
			continue
		}
		if r := e.st.Tasks[t.ID]; r != nil && (r.Completed || r.Closed || (r.Failed != "" && r.FailedAt.After(read))) {
			continue
		}
		if err := taskid.Check(t.ID); err != nil {
			// Never claimed: its branch, worktree or merge could not exist.
			if !e.badIDs[t.ID] {
				if e.badIDs == nil {
					e.badIDs = map[string]bool{}
				}
				e.badIDs[t.ID] = true
				e.emit(Event{Kind: EvError, Task: t.ID, Text: "not started: " + err.Error()})
			}
			continue
		}
		if name, p, err := e.profileFor(t, ""); err == nil && e.intoDialog(name, p, t.ID) {
			continue // said once: its agent would only wait at the trust dialog
		}
		e.startTask(t.ID, "")
		started++
	}
	e.noReady = started == 0 && len(e.runs) == 0
}

func (e *Engine) taskRunning(id string) bool {
	for _, r := range e.runs {
		if r.taskID == id {
			return true
		}
	}
	return false
}

// checkTimeouts ends tasks that ran past completion.taskTimeout.
func (e *Engine) checkTimeouts() {
	limit := time.Duration(e.cfg.Completion.TaskTimeout) * time.Minute
	if limit <= 0 {
		return
	}
	for _, r := range e.runs {
		if tr := e.st.Tasks[r.taskID]; tr != nil && time.Since(tr.FirstStarted) > limit {
			r.cancel(errTimeout)
		}
	}
}

func (e *Engine) shutdown() {
	e.closing = true
	for _, r := range e.runs {
		r.cancel(errShutdown)
	}
	// Supervisors report through e.msgs; keep serving them until they end.
	done := make(chan struct{})
	go func() { e.wg.Wait(); close(done) }()
	for {
		select {
		case fn := <-e.msgs:
			fn()
			_ = e.saveState()
			e.publish()
		case <-done:
			for {
				select {
				case fn := <-e.msgs:
					fn()
				default:
					e.st.Stats.TotalRuntime += int64(time.Since(e.st.StartedAt).Seconds())
					_ = e.saveState()
					e.publish()
					_ = e.wt.Close()
					return
				}
			}
		}
	}
}

// agentID names the agent working on a task.
func agentID(profile, task string) string {
	return profile + "-" + worktree.Slug(task)
}

// actorFor is the identity an agent claims tasks under: unique across the
// instances working one queue (bd takes a second claim by the same actor
// for success), and telling recovery whose claim it is.
func (e *Engine) actorFor(id string) string { return ActorPrefix(e.instance) + id }

func (e *Engine) profileFor(t beads.Task, override string) (string, config.AgentProfile, error) {
	name := override
	if name == "" {
		if v, ok := t.Metadata[beads.MetaAgent].(string); ok && v != "" {
			name = v
		}
	}
	if name == "" {
		name = e.cfg.Agents.Default
	}
	p, ok := e.cfg.Profile(name)
	if !ok {
		return "", p, fmt.Errorf("task %s asks for agent %q, which is not in agents.available", t.ID, name)
	}
	return name, p, nil
}
