package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/ui"
)

// planStart is where the planning screen begins.
type planStart struct {
	req       planning.Request
	prompt    func(planning.Request) string // the Plan Agent's first prompt for a request
	agent     string
	reviewing bool // resume at the review (the tasks exist)
	choose    bool // the plan is ready: only the mode is left to choose
	// uiOptions adjusts the interface's options (tests give it a screen).
	uiOptions func(*ui.Options)
	// handover, when set, runs the implementation once a mode is chosen:
	// the planning screen and its engine end, and the agents run in a
	// background engine the terminal attaches to (detach, attach,
	// `chorus events`, `chorus stop` from the first agent on). Unset, the
	// implementation view follows in this process.
	handover func(ctx context.Context, mode string) error
}

// backgroundHandover starts the chosen mode in a background engine and
// attaches this terminal to it, as a plain `chorus` does.
func backgroundHandover(p *project, g *globals, o *runOptions, s beads.Store, stderr io.Writer) func(context.Context, string) error {
	return func(ctx context.Context, mode string) error {
		p.cfg.Mode = mode
		if o == nil {
			o = &runOptions{}
		}
		if g == nil {
			g = &globals{}
		}
		return runEngineTUI(ctx, p, g, s, o, stderr)
	}
}

// runPlanScreen is planning in the full-screen interface, then the
// implementation view in the same session once a mode is chosen. The
// engine is the implementation engine in semi-auto, so that nothing
// starts while the Plan Agent writes tasks; the chosen mode is switched
// to with a Command.
func runPlanScreen(ctx context.Context, p *project, s beads.Store, st planStart, stderr io.Writer) error {
	cfg := p.cfg
	p.cfg.Mode = config.ModeSemiAuto
	ss, releaseLock, err := startSession(ctx, p, s, stderr)
	p.cfg = cfg
	if err != nil {
		return err
	}
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(releaseLock) }
	defer release()
	eng := ss.engine
	// A night chosen on this screen runs in this process: notify from here.
	if n := notifierFor(p.cfg, ss.log); n != nil {
		nctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		go n.follow(nctx, eng.Subscribe())
		defer n.close(notifyFlush)
		defer stop()
	}
	runCtx, cancel, done, err := ss.run(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer cancel()
	loop := &planning.Loop{
		Engine: eng, Store: s, Rules: p.loadRules, StatePath: p.dir.PlanningState(), SessionLog: p.dir.AppendLog,
		Max: p.cfg.Planning.MaxReviewIterations, Agent: st.agent,
		TurnTimeout: time.Duration(p.cfg.Planning.TimeoutMinutes) * time.Minute,
	}
	// Other shells reach this engine while the plan is written (the task
	// CLI goes through it, `chorus events` follows it); their stop request
	// quits the screen, as does a mode chosen for a handover.
	uctx, quitUI := context.WithCancel(ctx)
	defer quitUI()
	d := &planDriver{p: p, eng: eng, loop: loop, st: st, views: make(chan ui.PlanView, 64), acts: make(chan ui.PlanAction, 16)}
	if st.handover != nil {
		d.quit = quitUI
	}
	driverDone := make(chan struct{})
	go func() {
		defer close(driverDone)
		d.run(runCtx)
	}()
	o := ui.Options{Engine: eng, Store: s, Config: p.cfg, Version: buildVersion(), Dir: p.dir, Planner: d, FirstFrame: longLived}
	if st.uiOptions != nil {
		st.uiOptions(&o)
	}
	go recordModeChoices(runCtx, p, eng.Subscribe(), ss.log)
	stopServing := serveInProcess(ctx, p, eng, quitUI, ss.log, stderr)
	defer stopServing()
	uerr := ui.Run(uctx, o)
	running := eng.Snapshot().Running
	stopAt := time.Now()
	cancel()
	<-driverDone
	eerr := <-done
	if uerr == nil && eerr == nil && d.chosen() && st.handover != nil && ctx.Err() == nil {
		// The planning engine is done (its Plan Agent stopped); the
		// repository goes to the background engine.
		stopServing()
		release()
		return st.handover(ctx, d.mode)
	}
	if uerr != nil {
		ss.log.Error("full-screen interface failed", "err", uerr)
		return withCode(ExitFailure, fmt.Errorf("%w (run with --headless where there is no terminal)", uerr))
	}
	if eerr != nil {
		ss.log.Error("engine stopped with an error", "err", eerr)
	}
	if running > 0 && d.chosen() {
		fmt.Fprintln(stderr, "chorus: "+stoppedLine(running, uncommittedSince(p.dir, stopAt)))
	}
	if !d.chosen() {
		if st.choose {
			fmt.Fprintln(stderr, "chorus: no mode chosen; run `chorus` to choose one and start")
		} else {
			fmt.Fprintln(stderr, "chorus: planning paused; run `chorus` to resume it")
		}
	}
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, errors.New("interrupted"))
	}
	return eerr
}

// planDriver runs the planning phase for the interface: the Plan Agent's
// turns and the review loop on its own goroutine, decisions from the
// interface through acts, what happens back through views.
type planDriver struct {
	p     *project
	eng   *orchestrator.Engine
	loop  *planning.Loop
	st    planStart
	views chan ui.PlanView
	acts  chan ui.PlanAction

	done bool   // a mode was chosen; read once run returned
	mode string // the mode chosen
	// quit ends the screen once a mode is chosen (a handover); nil: the
	// implementation view follows in place.
	quit func()
}

func (d *planDriver) Views() <-chan ui.PlanView { return d.views }

// Act never blocks: a decision made while sixteen are pending is dropped.
func (d *planDriver) Act(a ui.PlanAction) {
	select {
	case d.acts <- a:
	default:
	}
}

// chosen says a mode was chosen (after run returned).
func (d *planDriver) chosen() bool { return d.done }

func (d *planDriver) show(ctx context.Context, v ui.PlanView) {
	if v.Agent == "" {
		v.Agent = d.loop.AgentID()
	}
	select {
	case d.views <- v:
	case <-ctx.Done():
	}
}

// watchTasks tells the interface each time the task store's files change
// (the Plan Agent writes tasks with the task CLI, in its own process).
func (d *planDriver) watchTasks(ctx context.Context) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	defer w.Close()
	if err := w.Add(filepath.Join(d.p.root, ".beads")); err != nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.Errors:
		case ev := <-w.Events:
			if ev.Has(fsnotify.Write) || ev.Has(fsnotify.Create) || ev.Has(fsnotify.Rename) {
				select {
				case d.views <- ui.PlanView{TasksChanged: true}:
				default: // the interface is behind: it reloads on the next report anyway
				}
			}
		}
	}
}

// run is the planning phase: goal, Plan Agent turns, review, mode.
func (d *planDriver) run(ctx context.Context) {
	defer d.loop.Stop(context.WithoutCancel(ctx))
	go d.watchTasks(ctx)
	events := d.eng.Subscribe()
	d.loop.Progress = func(pr planning.Progress) {
		stage := ui.PlanWriting
		if pr.Status == planning.StatusReviewing {
			stage = ui.PlanReviewing
		}
		d.show(ctx, ui.PlanView{Stage: stage, Text: pr.Text, Iteration: pr.Iteration, Max: pr.Max})
	}
	// drain reads the events of turns the loop already waited for and
	// says whether the last one signalled COMPLETE.
	drain := func() (turns int, complete bool) {
		for {
			select {
			case ev := <-events:
				if ev.Kind == orchestrator.EvPlanTurn && ev.Agent == d.loop.AgentID() {
					turns++
					complete = ev.Fields["complete"] == true
				}
			default:
				return
			}
		}
	}
	fail := func(err error) {
		d.show(ctx, ui.PlanView{Stage: ui.PlanWriting, Text: err.Error() + "; quit and run `chorus` to resume the plan"})
	}
	req := d.st.req
	review := d.st.reviewing
	switch {
	case d.st.choose:
		// The plan was marked ready (by a review, or by init before any
		// task existed): say so if the tasks no longer pass the rules, but
		// leave the choice to the person.
		open, vs, err := d.loop.Check(ctx)
		v := ui.PlanView{Stage: ui.PlanChoose, Tasks: open}
		switch {
		case err != nil:
			v.Text = err.Error()
		case len(vs) > 0:
			v.Text = fmt.Sprintf("The plan has %d task(s); %d rule violation(s) remain (`chorus task validate` lists them, `chorus plan` reviews them).", open, len(vs))
		}
		d.show(ctx, v)
	case !review:
		if req.Goal == "" && req.SpecPath == "" {
			d.show(ctx, ui.PlanView{Stage: ui.PlanGoal})
			for req.Goal == "" {
				select {
				case <-ctx.Done():
					return
				case a := <-d.acts:
					if a.Kind == ui.ActGoal {
						req.Goal = a.Text
					}
				}
			}
		}
		d.show(ctx, ui.PlanView{Stage: ui.PlanWriting, Text: "the Plan Agent is writing tasks"})
		if err := d.loop.Plan(ctx, req, d.st.prompt(req)); err != nil {
			if ctx.Err() != nil {
				return
			}
			fail(err)
		} else if _, complete := drain(); complete {
			review = true
		}
	}
	// resume is the prompt a Plan Agent started again for a fix gets.
	resume := d.st.prompt(req)
	reviewOnce := func(fixes int) {
		st, err := planning.Load(d.p.dir.PlanningState())
		if err != nil {
			fail(err)
			return
		}
		// Review hands violations back until Max iterations were spent:
		// Max set from the iterations done so far makes it one step.
		d.loop.Max = len(st.ReviewIterations) + fixes
		d.show(ctx, ui.PlanView{Stage: ui.PlanReviewing, Text: "validating the tasks against the rules"})
		res, err := d.loop.Review(ctx, resume)
		drain()
		if err != nil {
			if ctx.Err() == nil {
				fail(err)
			}
			return
		}
		if res.Valid {
			d.show(ctx, ui.PlanView{Stage: ui.PlanChoose, Tasks: res.Tasks})
			return
		}
		// Not valid: every iteration asked for was spent (d.loop.Max).
		done, limit := d.loop.Max, d.p.cfg.Planning.MaxReviewIterations
		v := ui.PlanView{Stage: ui.PlanReview, Iteration: done, Max: max(done, limit),
			Text: fmt.Sprintf("%d violation(s) remain after %d review iteration(s)", len(res.Violations), done)}
		if done < limit {
			v.Iteration = done + 1
			v.Text = fmt.Sprintf("%d violation(s); Apply Fixes hands them to the Plan Agent (iteration %d of %d)", len(res.Violations), done+1, limit)
		}
		for _, x := range res.Violations {
			id := x.TaskID
			if id == "" {
				id = "-"
			}
			v.Violations = append(v.Violations, fmt.Sprintf("%s [%s] %s", id, x.Rule, x.Message))
		}
		d.show(ctx, v)
	}
	if review {
		// The first validation goes to the person at once, as the spec's
		// review dialog shows it at iteration 1: each Apply Fixes is one
		// iteration of the loop (the headless `chorus plan` runs them all).
		reviewOnce(0)
	}
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			// A turn typed in the chat line ended: review what it left.
			if ev.Kind == orchestrator.EvPlanTurn && ev.Agent == d.loop.AgentID() {
				if ev.Fields["complete"] == true {
					reviewOnce(0)
				} else if ev.Text != "" {
					d.show(ctx, ui.PlanView{Stage: ui.PlanWriting, Text: ev.Text})
				}
			}
		case a := <-d.acts:
			switch a.Kind {
			case ui.ActApply:
				reviewOnce(1)
			case ui.ActReview:
				reviewOnce(0)
			case ui.ActRules:
				d.show(ctx, ui.PlanView{Stage: ui.PlanReviewing, Text: "the rules are in " + d.p.dir.TaskRules() + ": edit them there; they are read again at each review"})
				reviewOnce(0)
			case ui.ActBack:
				d.show(ctx, ui.PlanView{Stage: ui.PlanWriting, Text: "back to the Plan Agent: tell it what to change; its next COMPLETE is reviewed"})
			case ui.ActMode:
				if d.chooseMode(ctx, a.Text) {
					return
				}
			}
		}
	}
}

// chooseMode records the mode, stops the Plan Agent and switches the
// engine to it: the implementation view takes over.
func (d *planDriver) chooseMode(ctx context.Context, mode string) bool {
	if mode != config.ModeSemiAuto && mode != config.ModeAutopilot {
		return false
	}
	// Autopilot alone with an agent that cannot start would only cycle.
	if mode == config.ModeAutopilot {
		if msg := defaultAgentMissing(d.p.cfg); msg != "" {
			d.show(ctx, ui.PlanView{Stage: ui.PlanChoose, Tasks: d.tasks(ctx), Text: msg + "; pick Semi-Auto or install it (see `chorus doctor`)"})
			return false
		}
	}
	if _, err := planning.Update(d.p.dir.PlanningState(), func(s *planning.State) {
		s.Status, s.ChosenMode = planning.StatusImplementation, &mode
	}); err != nil {
		d.show(ctx, ui.PlanView{Stage: ui.PlanChoose, Text: err.Error()})
		return false
	}
	d.loop.Stop(ctx)
	d.mode = mode
	if d.quit != nil {
		// No PlanDone view: its header would show this planning engine's
		// mode, and keys typed at it would be lost with the screen. The
		// background engine's screen comes next.
		d.done = true
		d.quit()
		return true
	}
	if mode != config.ModeSemiAuto {
		if err := d.eng.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdMode, Text: mode}); err != nil {
			d.show(ctx, ui.PlanView{Stage: ui.PlanChoose, Text: err.Error()})
			return false
		}
	}
	d.done = true
	d.show(ctx, ui.PlanView{Stage: ui.PlanDone, Text: "the plan is ready: " + mode + " mode"})
	return true
}

// tasks counts the plan's open tasks for the mode dialog.
func (d *planDriver) tasks(ctx context.Context) int {
	open, _, _ := d.loop.Check(ctx)
	return open
}

// chooseModeScreen is the mode choice for a ready plan: the planning
// screen opened at its last dialog, the implementation view after it.
// uiOptions adjusts the interface's options (tests give it a screen).
func chooseModeScreen(ctx context.Context, p *project, s beads.Store, stderr io.Writer, uiOptions func(*ui.Options), handover func(context.Context, string) error) error {
	st, err := planning.Load(p.dir.PlanningState())
	if err != nil {
		return withCode(ExitSetup, err)
	}
	rules, err := p.loadRules()
	if err != nil {
		return err
	}
	return runPlanScreen(ctx, p, s, planStart{prompt: p.planPrompt(rules), agent: st.Agent, choose: true, uiOptions: uiOptions, handover: handover}, stderr)
}

// resumePlanScreen opens the planning screen where planning-state.json
// left off: the review of a plan under review, the interrupted plan's
// goal again, or the question for a new goal.
func resumePlanScreen(ctx context.Context, p *project, s beads.Store, stderr io.Writer, handover func(context.Context, string) error) error {
	st, err := planning.Load(p.dir.PlanningState())
	if err != nil {
		return withCode(ExitSetup, err)
	}
	rules, err := p.loadRules()
	if err != nil {
		return err
	}
	ps := planStart{prompt: p.planPrompt(rules), agent: st.Agent, handover: handover}
	switch st.Status {
	case planning.StatusPlanning, planning.StatusReviewing:
		ps.req.Goal = st.PlanSummary.UserGoal
		if f := st.PlanSummary.From; f != "" {
			if b, err := os.ReadFile(filepath.Join(p.root, f)); err == nil {
				ps.req.Spec, ps.req.SpecPath = string(b), f
			}
		}
		ps.reviewing = st.Status == planning.StatusReviewing
	}
	return runPlanScreen(ctx, p, s, ps, stderr)
}
