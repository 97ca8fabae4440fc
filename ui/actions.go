package ui

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/taskrules"
	"github.com/chorus-dev/chorus/ui/present"
)

// undoEntry is a reversible action: the commands that reverse it, and
// what must still hold for them to be the action's reverse.
//
// `u` undoes only the person's own last actions, newest first, and only
// these (UndoableActions): pause/resume, the mode toggle and "start
// autopilot", block and mark done (the task is reopened with retry), and
// task edits (the old text written back). Any other action sent from the
// TUI — stop, redirect, kill all, assign, retry, rollback, checkpoints,
// merge decisions, answers, new tasks — cannot be reversed and ends the
// undo history: `u` after it says so instead of reaching past it to an
// older, unrelated action. An entry whose effect no longer holds (the
// engine paused by itself since a resume, the task reopened) is dropped
// with a message, not replayed.
type undoEntry struct {
	desc string
	cmds []orchestrator.Command
	// still says why undoing would no longer reverse the action ("" when
	// it would); nil: always. It runs on a worker, against the engine's
	// and the store's state now, not the last frame's.
	still func(ctx context.Context, u *UI) string
}

// UndoableActions is the list `?` and docs/keys.md give for `u`.
const UndoableActions = "mode toggle, start autopilot, pause/resume, block, mark done, task edit"

const maxUndo = 20

func (u *UI) pushUndo(e undoEntry) {
	u.undo = append(u.undo, e)
	if len(u.undo) > maxUndo {
		u.undo = u.undo[1:]
	}
}

// endUndo records an action that cannot be undone: the history before it
// is no longer the person's last action.
func (u *UI) endUndo(what string) {
	u.undo, u.undoEnded = nil, what
	u.undoGen++
}

// send runs an engine command on a worker and reports how it went in the
// footer; onOK runs on the event goroutine after success. The command is
// not undoable: it ends the undo history.
func (u *UI) send(c orchestrator.Command, ok string, onOK func()) {
	u.sendAll([]orchestrator.Command{c}, ok, onOK)
}

func (u *UI) sendAll(cs []orchestrator.Command, ok string, onOK func()) {
	if len(cs) > 0 {
		u.endUndo(string(cs[0].Kind))
	}
	u.dispatch(cs, ok, onOK)
}

// sendUndoable sends an undoable action; once it succeeded, e undoes it —
// unless an action that ends the history was sent meanwhile: the person's
// last action is then that one.
func (u *UI) sendUndoable(cs []orchestrator.Command, ok string, e undoEntry) {
	gen := u.undoGen
	u.dispatch(cs, ok, func() {
		if u.undoGen == gen {
			u.pushUndo(e)
		}
	})
}

func (u *UI) dispatch(cs []orchestrator.Command, ok string, onOK func()) {
	u.dispatchIf(nil, cs, ok, onOK)
}

// dispatchIf is dispatch after a check on the worker: a refusal ("not …")
// is shown instead of sending anything.
func (u *UI) dispatchIf(check func(ctx context.Context) string, cs []orchestrator.Command, ok string, onOK func()) {
	u.work(func(ctx context.Context) func() {
		if check != nil {
			if why := check(ctx); why != "" {
				return func() { u.pumpApply(func() { u.setFlash(why, present.Warn) }) }
			}
		}
		var err error
		var failed orchestrator.Command
		for _, c := range cs {
			if err = u.eng.Do(ctx, c); err != nil {
				failed = c
				break
			}
		}
		return func() {
			u.loadTasks()
			u.pumpApply(func() {
				if err != nil {
					u.setFlash(string(failed.Kind)+": "+err.Error(), present.Err)
					return
				}
				if ok != "" {
					u.setFlash(ok, present.OK)
				}
				if onOK != nil {
					onOK()
				}
			})
		}
	})
}

// taskRow returns the panel row of a task id.
func (u *UI) taskRow(id string) (present.TaskRow, bool) {
	for _, r := range u.vm.rows {
		if r.ID == id {
			return r, true
		}
	}
	return present.TaskRow{}, false
}

func (u *UI) task(id string) (beads.Task, bool) {
	for _, t := range u.vm.tasks {
		if t.ID == id {
			return t, true
		}
	}
	return beads.Task{}, false
}

// assign starts an agent (profile "" = the task's or the default) on the
// selected task.
func (u *UI) assign(profile string) {
	id := u.currentTask()
	if id == "" && !u.vm.loaded {
		u.setFlash("the tasks are still loading: press it again once they show", present.Warn)
		return
	}
	if id == "" {
		u.setFlash("no task selected", present.Warn)
		return
	}
	if r, ok := u.taskRow(id); ok {
		switch r.State {
		case present.StateRunning:
			u.setFlash(id+" already has an agent", present.Warn)
			return
		case present.StateClosed, present.StateDeferred:
			u.setFlash(id+" is not open", present.Warn)
			return
		case present.StateFailed:
			u.setFlash(id+" failed; r retries it (back to pending, its worktree kept)", present.Warn)
			return
		case present.StateBlocked:
			// A task on a dependency cycle waits on itself: the engine
			// could only take and release it again.
			if c := taskrules.CycleThrough(u.vm.tasks, id); c != nil {
				u.setFlash(fmt.Sprintf("%s is in a dependency cycle (%s): it can never start; remove one dependency (e: Blocked by, or chorus task dep remove %s %s)",
					id, strings.Join(c, " → "), c[0], c[1]), present.Warn)
				return
			}
		}
	}
	who := profile
	if who == "" {
		who = "an agent"
	}
	u.send(orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id, Agent: profile}, "assigned "+id+" to "+who, nil)
}

// spawn asks which agent profile to start on the selected task.
func (u *UI) spawn() {
	names := u.o.Config.AgentNames()
	if len(names) <= 1 {
		u.assign(strings.Join(names, ""))
		return
	}
	items := make([]choice, 0, len(names))
	for _, n := range names {
		n := n
		desc := u.o.Config.Agents.Available[n].Command
		if n == u.o.Config.Agents.Default {
			desc += " (default)"
		}
		items = append(items, choice{label: n, desc: desc, run: func() { u.assign(n) }})
	}
	u.choose("Spawn which agent on "+u.currentTask()+"?", items)
}

func (u *UI) needAgent() (string, bool) {
	id := u.currentAgent()
	if id == "" {
		u.setFlash("no agent selected (Tab to the agents, or pick a running task)", present.Warn)
		return "", false
	}
	return id, true
}

func (u *UI) stopAgent() {
	id, ok := u.needAgent()
	if !ok {
		return
	}
	what := "Its task goes back to pending; its work is kept as a commit on its branch."
	if strings.HasPrefix(id, "resolver-") {
		// What the merge service does with a stopped resolver.
		what = "None of its resolution lands: its work is kept under refs/chorus/kept/, and the merge waits for you in the merge view."
	}
	u.confirm(fmt.Sprintf("Stop %s? %s", id, what), "Stop", func() {
		u.send(orchestrator.Command{Kind: orchestrator.CmdStop, AgentID: id}, "stopping "+id, nil)
	})
}

func (u *UI) redirect() {
	id, ok := u.needAgent()
	if !ok {
		return
	}
	var items []choice
	for _, r := range u.vm.rows {
		if r.State != present.StateOpen {
			continue
		}
		tid := r.ID
		items = append(items, choice{label: tid, desc: r.Lines[0].Text(), run: func() {
			u.send(orchestrator.Command{Kind: orchestrator.CmdRedirect, AgentID: id, TaskID: tid}, "redirecting "+id+" to "+tid, nil)
		}})
	}
	if len(items) == 0 {
		u.setFlash("no open task to redirect to", present.Warn)
		return
	}
	u.choose("Redirect "+id+" to which task? (its current task goes back to pending)", items)
}

func (u *UI) killAll() {
	if u.vm.snap.Running == 0 {
		u.setFlash("no agents running", present.Normal)
		return
	}
	u.confirm(fmt.Sprintf("Kill all %d agents? Their tasks go back to pending; worktrees are kept.", u.vm.snap.Running), "Kill all", func() {
		u.send(orchestrator.Command{Kind: orchestrator.CmdKillAll}, "killing all agents", nil)
	})
}

func otherMode(m string) string {
	if m == config.ModeAutopilot {
		return config.ModeSemiAuto
	}
	return config.ModeAutopilot
}

func (u *UI) toggleMode() {
	cur := u.vm.snap.Mode
	next := otherMode(cur)
	u.sendUndoable([]orchestrator.Command{{Kind: orchestrator.CmdMode, Text: next}}, "mode: "+next,
		undoEntry{desc: "mode " + next, cmds: []orchestrator.Command{{Kind: orchestrator.CmdMode, Text: cur}}, still: modeIs(next)})
}

func (u *UI) togglePause() {
	if u.vm.snap.Paused {
		u.sendUndoable([]orchestrator.Command{{Kind: orchestrator.CmdResume}}, "resumed",
			undoEntry{desc: "resume", cmds: []orchestrator.Command{{Kind: orchestrator.CmdPause}}, still: pausedIs(false)})
		return
	}
	u.sendUndoable([]orchestrator.Command{{Kind: orchestrator.CmdPause}}, "paused: no new agents start; running ones go on (Space resumes)",
		undoEntry{desc: "pause", cmds: []orchestrator.Command{{Kind: orchestrator.CmdResume}}, still: pausedIs(true)})
}

func (u *UI) startAutopilot() {
	cur, paused := u.vm.snap.Mode, u.vm.snap.Paused
	cmds := []orchestrator.Command{{Kind: orchestrator.CmdMode, Text: config.ModeAutopilot}}
	inverse := []orchestrator.Command{{Kind: orchestrator.CmdMode, Text: cur}}
	if paused {
		cmds = append(cmds, orchestrator.Command{Kind: orchestrator.CmdResume})
		inverse = append([]orchestrator.Command{{Kind: orchestrator.CmdPause}}, inverse...)
	}
	if cur == config.ModeAutopilot && !paused {
		u.setFlash("autopilot is already running", present.Normal)
		return
	}
	u.sendUndoable(cmds, "autopilot: ready tasks start as slots free up", undoEntry{desc: "start autopilot", cmds: inverse, still: func(ctx context.Context, u *UI) string {
		if w := modeIs(config.ModeAutopilot)(ctx, u); w != "" {
			return w
		}
		return pausedIs(false)(ctx, u)
	}})
}

func (u *UI) needTask() (string, bool) {
	id := u.currentTask()
	if id == "" {
		u.setFlash("no task selected", present.Warn)
		return "", false
	}
	return id, true
}

func (u *UI) blockTask() {
	id, ok := u.needTask()
	if !ok {
		return
	}
	u.prompt("Block "+id, "Reason (its agent, if any, is stopped)", "", "Block", func(reason string) {
		u.sendUndoable([]orchestrator.Command{{Kind: orchestrator.CmdBlock, TaskID: id, Text: reason}}, "blocked "+id,
			undoEntry{desc: "block " + id, cmds: []orchestrator.Command{{Kind: orchestrator.CmdRetry, TaskID: id}}, still: statusIs(id, beads.StatusBlocked)})
	})
}

func (u *UI) markDone() {
	id, ok := u.needTask()
	if !ok {
		return
	}
	u.confirm("Mark "+id+" done by hand? Its agent, if any, is stopped and the task is closed without the quality gate.", "Done", func() {
		u.sendUndoable([]orchestrator.Command{{Kind: orchestrator.CmdDone, TaskID: id}}, "closed "+id,
			undoEntry{desc: "done " + id, cmds: []orchestrator.Command{{Kind: orchestrator.CmdRetry, TaskID: id}}, still: statusIs(id, beads.StatusClosed)})
	})
}

func (u *UI) checkpoint() {
	u.send(orchestrator.Command{Kind: orchestrator.CmdCheckpoint, Text: "manual"}, "checkpoint saved", nil)
}

func (u *UI) undoLast() {
	if len(u.undo) == 0 {
		msg := "nothing to undo (u undoes: " + UndoableActions + ")"
		if u.undoEnded != "" {
			msg = "nothing to undo: the last action (" + u.undoEnded + ") cannot be undone; u undoes: " + UndoableActions
		}
		u.setFlash(msg, present.Normal)
		return
	}
	e := u.undo[len(u.undo)-1]
	u.undo = u.undo[:len(u.undo)-1]
	var check func(ctx context.Context) string
	if e.still != nil {
		check = func(ctx context.Context) string {
			if why := e.still(ctx, u); why != "" {
				return "not undoing " + e.desc + ": " + why
			}
			return ""
		}
	}
	u.dispatchIf(check, e.cmds, "undid "+e.desc, nil)
}

// modeIs, pausedIs and statusIs are undo entries' checks that the action's
// effect still holds.
func modeIs(m string) func(context.Context, *UI) string {
	return func(_ context.Context, u *UI) string {
		if now := u.eng.Snapshot().Mode; now != m {
			return "the mode is " + now + " now"
		}
		return ""
	}
}

func pausedIs(p bool) func(context.Context, *UI) string {
	return func(_ context.Context, u *UI) string {
		switch now := u.eng.Snapshot().Paused; {
		case now && !p:
			return "autopilot has been paused since"
		case !now && p:
			return "autopilot has been resumed since"
		}
		return ""
	}
}

func statusIs(id, st string) func(context.Context, *UI) string {
	return func(ctx context.Context, u *UI) string {
		if t, err := u.o.Store.Get(ctx, id); err == nil && t.Status != st {
			return id + " is " + t.Status + " now"
		}
		return ""
	}
}

// createTask adds a task through the store on a worker.
func (u *UI) createTask(title string, opt beads.CreateOptions) {
	u.endUndo("new task")
	u.work(func(ctx context.Context) func() {
		t, err := u.o.Store.Create(ctx, title, opt)
		return func() {
			u.loadTasks()
			u.pumpApply(func() {
				if err != nil {
					u.setFlash("new task: "+err.Error(), present.Err)
					return
				}
				u.selTask = t.ID
				u.setFlash("created "+t.ID, present.OK)
			})
		}
	})
}

// askQuit is the quit confirmation; with agents running it offers to kill
// them or wait for them (then force after the grace period).
func (u *UI) askQuit() {
	if u.attached {
		u.askQuitAttached()
		return
	}
	if u.quitting {
		u.quit()
		return
	}
	n := u.vm.snap.Running
	if n == 0 && present.MergeQueued(u.vm.snap.Merge) == 0 {
		// Nothing running, nothing waiting to land: nothing to lose.
		u.quitting = true
		u.quit()
		return
	}
	if n == 0 {
		u.confirm("Quit Chorus? Merges are still queued (they resume next time).", "Quit", func() { u.quitting = true; u.quit() })
		return
	}
	grace := u.o.QuitGrace
	u.choose(fmt.Sprintf("%d agent(s) running. Quit how?", n), []choice{
		{key: 'k', label: "Kill the agents and quit", desc: "tasks back to pending, work kept as commits", run: func() {
			u.quitting = true
			u.quit()
		}},
		{key: 'w', label: "Wait for them to finish", desc: fmt.Sprintf("no new agents start; the rest are stopped after %s", present.Duration(grace)), run: func() {
			u.quitting = true
			u.setFlash(fmt.Sprintf("waiting for %d agent(s); quitting when they finish or in %s (q again: now)", n, present.Duration(grace)), present.Warn)
			u.send(orchestrator.Command{Kind: orchestrator.CmdPause}, "", nil)
			u.toPump(func() { u.startQuitWait(grace) })
		}},
		{key: 'c', label: "Cancel", desc: "keep working", run: func() {}},
	})
}
