package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
	"github.com/chorus-dev/chorus/ui/tile"
)

// logRingSize is how many recent events the pump keeps for the log view.
const logRingSize = 2000

// reloadKinds are the events after which the task list may have changed.
var reloadKinds = map[orchestrator.EventKind]bool{
	orchestrator.EvAssigned: true, orchestrator.EvCompleted: true, orchestrator.EvBlocked: true,
	orchestrator.EvFailed: true, orchestrator.EvReleased: true, orchestrator.EvFinished: true,
	orchestrator.EvRollback: true, orchestrator.EvRecovered: true, "merge_landed": true,
	orchestrator.EvPlanTurn: true, orchestrator.EvSignal: true,
}

// pump is the one goroutine that calls QueueUpdateDraw. Each turn of the
// loop collects work for the event goroutine in pending and hands it over
// in a single QueueUpdateDraw, so bursts coalesce into one frame.
//
// Nothing wakes it on a timer unless there is something to show: a
// terminal becoming dirty wakes it (wakeFrame) and it then arms a one-shot
// frame timer, so busy tiles are drawn at most once per FrameInterval;
// the clock timer is armed only for the next moment a time shown on the
// main view changes.
func (u *UI) pump(ctx context.Context, events <-chan orchestrator.Event) {
	frame := u.clk.NewTimer()
	defer frame.Stop()
	var frameC <-chan time.Time // frame's channel while a frame is due, else nil
	var lastFrame time.Time
	defer u.clock.Stop() // armed since run's first refresh
	defer func() {
		// The engine outlives the UI and keeps writing to the terminals.
		for _, t := range u.tiles {
			t.Emulator().OnDirty(nil)
		}
	}()
	var pending []func()
	apply := func(fn func()) { pending = append(pending, fn) }
	// run made the first refresh and started the first task load; its
	// view is on screen already.
	if u.pumpStarted != nil {
		close(u.pumpStarted)
	}
	var planViews <-chan PlanView
	if u.o.Planner != nil {
		planViews = u.o.Planner.Views()
	}
	var dirty []string
	for {
		dirty = dirty[:0]
		drawFrame := false
		select {
		case <-ctx.Done():
			return
		case <-u.eng.Changed():
			u.refresh(apply)
		case ev := <-events:
			u.onEvent(ev, apply)
		case <-u.inWake:
			u.takeInbox()
			// Handlers queue UI work through u.pumpApply.
			pending = append(pending, u.pumpPending...)
			u.pumpPending = nil
		case <-u.frameWake:
			if frameC != nil {
				break // a frame is already due
			}
			// A frame due within a quarter of the interval is drawn now:
			// output batched once per frame by a remote engine arrives
			// a little early as often as late, and a timer for the
			// rest would wake the process twice per batch.
			if wait := u.o.FrameInterval - u.clk.Now().Sub(lastFrame); wait > u.o.FrameInterval/4 {
				frame.Reset(wait)
				frameC = frame.C()
			} else {
				drawFrame = true
			}
		case <-frameC:
			drawFrame = true
		case pv := <-planViews:
			// The Plan Agent writes tasks through the task CLI, which the
			// engine never hears of: each planning report reloads them.
			u.loadTasks()
			if !pv.TasksChanged {
				apply(func() { u.setPlan(pv) })
			}
		case <-u.clockC:
			u.clockTick(apply)
		case <-u.waitQuit:
			u.waitQuit = nil
			apply(func() { u.setFlash("grace period over: stopping the agents", present.Warn) })
			u.quit()
		}
		u.turns.Add(1)
		if drawFrame {
			frameC = nil
			lastFrame = u.clk.Now()
			// Cleared before the flags are taken: a change after this
			// point wakes the pump again.
			u.frameArmed.Store(false)
			for id, t := range u.tiles {
				// Every flag is taken so each one is cleared.
				if t.TakeDirty() {
					dirty = append(dirty, id)
				}
			}
		}
		if len(pending) == 0 && len(dirty) > 0 {
			// Only terminals changed: redraw just those tiles.
			u.app.QueueUpdate(func() { u.drawTiles(dirty) })
		} else if len(pending) > 0 {
			fns := pending
			pending = nil
			u.app.QueueUpdateDraw(func() {
				for _, fn := range fns {
					fn()
				}
			})
			for _, fn := range u.afterFlush {
				fn()
			}
			u.afterFlush = nil
		}
	}
}

// wakeFrame tells the pump a terminal has something new to draw. Terminals
// call it from their writers' goroutines, so it never blocks, and it sends
// at most once per frame however many tiles change.
func (u *UI) wakeFrame() {
	if u.frameArmed.Swap(true) {
		return
	}
	select {
	case u.frameWake <- struct{}{}:
	default:
	}
}

// drawTiles redraws the given tiles straight onto the screen and shows
// the result. A full tview draw clears the screen and repaints every
// primitive, which at 30 frames a second costs more than the terminals
// themselves; tiles changing is the common case and touches nothing else.
// With an overlay up, or before the first full draw, it falls back to a
// full draw. Event goroutine only.
func (u *UI) drawTiles(ids []string) {
	if u.screen == nil || u.over != nil || u.grid == nil || u.grid.shown == nil {
		u.app.ForceDraw()
		return
	}
	drawn := false
	for _, id := range ids {
		t := u.vm.tiles[id]
		if t == nil || !u.grid.shown[id] {
			continue
		}
		t.DrawChanged(u.screen, u.painter)
		drawn = true
	}
	if !drawn {
		return
	}
	if u.painter != nil {
		u.painter.Flush()
	} else {
		u.screen.Show()
	}
}

// pumpApply queues fn for the event goroutine from code running on the
// pump (inbox handlers).
// takeInbox runs what workers and handlers queued for the pump. Pump
// only (run, before the pump starts).
func (u *UI) takeInbox() {
	u.inMu.Lock()
	in := u.inbox
	u.inbox = nil
	u.inMu.Unlock()
	for _, fn := range in {
		fn()
	}
}

func (u *UI) pumpApply(fn func()) { u.pumpPending = append(u.pumpPending, fn) }

// refresh reads the engine's snapshot, creates and drops tiles, and
// publishes a new view model. Pump only.
func (u *UI) refresh(apply func(func())) {
	snap := u.eng.Snapshot()
	before := u.snap.Agents
	u.snap = snap
	if snap.TaskGen != u.taskGen {
		// The task store changed, maybe from another shell.
		u.taskGen = snap.TaskGen
		u.loadTasks()
	}
	for id := range snap.Agents {
		if u.tiles[id] != nil {
			continue
		}
		emu := u.eng.Screen(id)
		if emu == nil {
			continue // gone already
		}
		id := id
		t := tile.New(emu, u.eng.Input(id))
		emu.OnDirty(u.wakeFrame)
		t.Box = quietBox()
		t.SetResizeFunc(func(w, h int) {
			// Called from Draw on the event goroutine: the engine call
			// goes through the pump.
			u.toPump(func() { u.eng.Resize(id, w, h) })
		})
		u.tiles[id] = t
	}
	for id, t := range u.tiles {
		if _, ok := snap.Agents[id]; !ok {
			t.Emulator().OnDirty(nil)
			delete(u.tiles, id)
			label := id + " finished"
			if a := before[id]; a != nil {
				label = present.FinishedLabel(*a, u.o.Config.Completion.MaxIterations)
			}
			u.finished = append([]finishedTile{{id: id, tile: t, label: label}}, u.finished...)
		}
	}
	u.finished = keepFinished(u.finished, snap.Agents, snap.MaxParallel)
	if u.waitQuit != nil && snap.Running == 0 {
		u.waitQuit = nil
		u.quit()
	}
	apply(u.model())
	// Say so when autopilot has run out of work, once per time it does.
	if snap.Idle && !u.wasIdle && snap.Mode == config.ModeAutopilot && !snap.Paused {
		st := snap.Stats
		msg := autopilotDone + ": " + present.Tally(snap) + " — q quits"
		class := present.OK
		if st.TasksFailed+st.TasksBlocked > 0 {
			class = present.Warn
		}
		apply(func() { u.setFlash(msg, class) })
	}
	if !snap.Idle && u.wasIdle {
		// Work started again (a retry, new tasks): the verdict is stale.
		apply(func() {
			if strings.HasPrefix(u.flash.Text, autopilotDone) {
				u.setFlash("", present.Normal)
			}
		})
	}
	u.wasIdle = snap.Idle
	u.armClock()
}

// autopilotDone starts the footer message shown when autopilot runs out of
// work; it is taken down when work starts again.
const autopilotDone = "Autopilot is done"

// model builds the view model from the pump's state and returns the func
// that installs it.
func (u *UI) model() func() {
	now := u.o.Now()
	vm := viewModel{snap: u.snap, tasks: u.tasks, now: now, loaded: u.tasks != nil,
		agents: present.AgentIDs(u.snap), tiles: make(map[string]*tile.Tile, len(u.tiles)),
		labels: make(map[string]string, len(u.snap.Agents))}
	for id, t := range u.tiles {
		vm.tiles[id] = t
	}
	for id, a := range u.snap.Agents {
		vm.labels[id] = present.TileLabel(u.snap, *a, u.o.Config.Completion.MaxIterations, now)
	}
	u.labels = vm.labels
	vm.done = make(map[string]bool, len(u.finished))
	for _, f := range u.finished {
		vm.agents = append(vm.agents, f.id)
		vm.tiles[f.id] = f.tile
		vm.labels[f.id] = f.label
		vm.done[f.id] = true
	}
	vm.rows = present.TaskRows(u.tasks, u.snap, now)
	vm.counts = present.Count(u.tasks, u.snap)
	if !u.snap.StartedAt.IsZero() {
		vm.runtime = now.Sub(u.snap.StartedAt)
	}
	return func() { u.setModel(vm) }
}

// clockTick republishes only when a time shown on screen changed, so an
// idle Chorus does not redraw for nothing.
func (u *UI) clockTick(apply func(func())) {
	now := u.o.Now()
	changed := false
	for id, a := range u.snap.Agents {
		if present.TileLabel(u.snap, *a, u.o.Config.Completion.MaxIterations, now) != u.labels[id] {
			changed = true
			break
		}
	}
	if !u.snap.StartedAt.IsZero() && present.Elapsed(now.Sub(u.snap.StartedAt)) != present.Elapsed(u.lastRuntime) {
		changed = true
	}
	if changed {
		u.lastRuntime = now.Sub(u.snap.StartedAt)
		apply(u.model())
	}
	u.armClock()
}

// armClock sets the clock timer for the next moment a time shown on the
// main view changes (the run time and each agent's elapsed time), and
// leaves it off when none is shown. Pump only.
func (u *UI) armClock() {
	u.clock.Stop()
	u.clockC = nil
	now := u.o.Now()
	var next time.Time
	consider := func(start time.Time) {
		if at := now.Add(present.ElapsedChangesIn(now.Sub(start))); next.IsZero() || at.Before(next) {
			next = at
		}
	}
	if !u.snap.StartedAt.IsZero() {
		consider(u.snap.StartedAt)
	}
	for _, a := range u.snap.Agents {
		consider(a.StartedAt)
		if a.Check != "" && !a.CheckStarted.IsZero() {
			// A running check's time is shown to the second.
			if at := now.Add(time.Second - now.Sub(a.CheckStarted)%time.Second); next.IsZero() || at.Before(next) {
				next = at
			}
		}
	}
	if !next.IsZero() {
		u.clock.Reset(next.Sub(now))
		u.clockC = u.clock.C()
	}
}

// onEvent handles one engine event: bell and message for what needs a
// person, task reloads, the log ring.
func (u *UI) onEvent(ev orchestrator.Event, apply func(func())) {
	line := formatEvent(ev)
	u.logRing = append(u.logRing, line)
	if len(u.logRing) > logRingSize {
		u.logRing = u.logRing[len(u.logRing)-logRingSize:]
	}
	apply(func() { u.appendLog(line) })
	if reloadKinds[ev.Kind] {
		u.loadTasks()
	}
	switch ev.Kind {
	case orchestrator.EvNeedsHelp, orchestrator.EvNeedsHuman, orchestrator.EvBlocked, orchestrator.EvFailed:
		what := map[orchestrator.EventKind]string{orchestrator.EvNeedsHelp: "NEEDS HELP", orchestrator.EvNeedsHuman: "NEEDS HUMAN", orchestrator.EvBlocked: "BLOCKED", orchestrator.EvFailed: "FAILED"}[ev.Kind]
		msg := fmt.Sprintf("%s %s: %s", ev.Task, what, ev.Text)
		apply(func() {
			u.setFlash(msg, present.Err)
			if ev.Kind == orchestrator.EvNeedsHelp || ev.Kind == orchestrator.EvNeedsHuman {
				u.flashNeeds = ev.Task // goes when the task no longer needs anyone
			}
			_ = u.screen.Beep()
		})
	case orchestrator.EvQuality:
		// A failed required check is the agent's next iteration: say which
		// and how it failed.
		if ev.Fields["passed"] == false && ev.Fields["required"] == true {
			msg := fmt.Sprintf("%s: check %v failed, retrying", ev.Task, ev.Fields["name"])
			if tail, _ := ev.Fields["tail"].(string); tail != "" {
				msg += ": " + tail[strings.LastIndexByte(tail, '\n')+1:]
			}
			apply(func() { u.setFlash(msg, present.Warn) })
		}
	case orchestrator.EvPaused:
		// A pause the engine made (a full disk, a budget) says why; one a
		// person asked for has no text and needs no message.
		if ev.Text != "" {
			msg := "autopilot paused: " + ev.Text
			apply(func() {
				u.setFlash(msg, present.Err)
				_ = u.screen.Beep()
			})
		}
	case orchestrator.EvAlert, orchestrator.EvError, orchestrator.EvHook:
		text := ev.Text
		if ev.Task != "" {
			text = ev.Task + ": " + text
		}
		apply(func() { u.setFlash(text, present.Warn) })
	}
}

func formatEvent(ev orchestrator.Event) string {
	who := ev.Agent
	if who == "" {
		who = "-"
	}
	task := ev.Task
	if task == "" {
		task = "-"
	}
	s := fmt.Sprintf("%s %s %s %s", ev.Time.Local().Format("15:04:05"), who, task, ev.Kind)
	if ev.Text != "" {
		s += ": " + ev.Text
	}
	return present.Clean(s)
}

// loadTasks reads the store on a worker; at most one load runs, and a
// request during a load makes one more afterwards. Pump only.
func (u *UI) loadTasks() {
	if u.loading {
		u.reloadMore = true
		return
	}
	u.loading = true
	u.work(func(ctx context.Context) func() {
		ts, err := u.o.Store.List(ctx)
		return func() {
			u.loading = false
			if err != nil {
				msg := "reading tasks: " + err.Error()
				u.pumpApply(func() { u.setFlash(msg, present.Err) })
			} else {
				u.tasks = ts
				u.pumpApply(u.model())
			}
			if u.reloadMore {
				u.reloadMore = false
				u.loadTasks()
			}
		}
	})
}

// finishedTile is an agent the engine no longer has, whose tile stays to
// show its last screen.
type finishedTile struct {
	id    string
	tile  *tile.Tile
	label string // the tile's label when the agent went
}

// keepFinished is which finished tiles stay: those not back among the
// running agents, newest first, as many as the grid has free slots (a
// running agent needs its slot first).
func keepFinished(f []finishedTile, running map[string]*orchestrator.AgentState, slots int) []finishedTile {
	out := f[:0]
	room := slots - len(running)
	for _, t := range f {
		if _, back := running[t.id]; back || len(out) >= room {
			continue
		}
		out = append(out, t)
	}
	clear(f[len(out):])
	return out
}

// dismissFinished drops a finished agent's tile. Pump only.
func (u *UI) dismissFinished(id string) {
	for i, f := range u.finished {
		if f.id == id {
			u.finished = append(u.finished[:i], u.finished[i+1:]...)
			break
		}
	}
	u.pumpApply(u.model())
}
