package ui

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// Outcome is how a UI attached to a background engine ended.
type Outcome int

const (
	// OutcomeDetach: the engine and its agents go on without this UI.
	OutcomeDetach Outcome = iota
	// OutcomeStop: the user asked to stop the engine too (its agents
	// stopped, their work committed, tasks back to open).
	OutcomeStop
)

// RunAttached shows the interface on an engine that runs in another
// process (Options.Engine is its client) and reports whether the user
// detached or asked to stop the engine. q (or, while typing into an
// agent, the prefix key then d) asks whether to stop the engine too,
// detaching by default while agents run. When ctx ends (the engine went away) it returns
// OutcomeDetach.
func RunAttached(ctx context.Context, o Options) (Outcome, error) {
	u, err := newUI(o)
	if err != nil {
		return OutcomeDetach, err
	}
	u.attached = true
	if o.Notice != "" {
		u.setFlash(o.Notice, present.Warn)
	}
	err = u.run(ctx)
	return u.outcome, err
}

// detach ends this UI and leaves the engine running.
func (u *UI) detach() {
	u.outcome = OutcomeDetach
	u.quitting = true
	u.quit()
}

// askQuitAttached is q on an attached UI: detach (the default while
// agents run), stop the engine with its agents, or wait for them and then
// stop it.
func (u *UI) askQuitAttached() {
	if u.quitting {
		u.quit()
		return
	}
	stop := func() { u.outcome = OutcomeStop; u.quitting = true; u.quit() }
	detach := choice{key: 'd', label: "Detach", desc: "the engine and its agents keep running; chorus attach comes back", run: u.detach}
	n := u.vm.snap.Running
	if n == 0 {
		u.choose("Quit Chorus?", []choice{
			{key: 's', label: "Stop the engine and quit", desc: "nothing is running", run: stop},
			detach,
			{key: 'c', label: "Cancel", desc: "keep working", run: func() {}},
		})
		return
	}
	grace := u.o.QuitGrace
	u.choose(fmt.Sprintf("%d agent(s) running. Quit how?", n), []choice{
		detach,
		{key: 'k', label: "Kill the agents and quit", desc: "stops the engine: tasks back to pending, work kept as commits", run: stop},
		{key: 'w', label: "Wait for them to finish", desc: fmt.Sprintf("then stop the engine; no new agents start; the rest are stopped after %s", present.Duration(grace)), run: func() {
			u.outcome = OutcomeStop
			u.quitting = true
			u.setFlash(fmt.Sprintf("waiting for %d agent(s); stopping the engine when they finish or in %s (q again: now)", n, present.Duration(grace)), present.Warn)
			u.send(orchestrator.Command{Kind: orchestrator.CmdPause}, "", nil)
			u.toPump(func() { u.startQuitWait(grace) })
		}},
		{key: 'c', label: "Cancel", desc: "keep working", run: func() {}},
	})
}
