package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/remote"
)

// runOptions are the root command's flags.
type runOptions struct {
	autopilot bool
	mode      string
	maxAgents int
	headless  bool
	tasks     []string
	json      bool      // --json: events as JSON objects on stdout
	stdout    io.Writer // where --json events go
	global    *globals
	// inProcess runs the TUI's engine in this process (the demo), not as
	// a background engine to attach to.
	inProcess bool
}

// Route is where `chorus` without a subcommand goes.
type Route string

const (
	RouteInit       Route = "init"
	RoutePlanning   Route = "planning"
	RouteReview     Route = "review"
	RouteModeChoice Route = "mode-choice" // the plan is ready: pick semi-auto or autopilot
	RouteImplement  Route = "implementation"
)

// Planning states, as planning-state.json spells them.
const (
	PlanPlanning       = planning.StatusPlanning
	PlanReviewing      = planning.StatusReviewing
	PlanReady          = planning.StatusReady
	PlanImplementation = planning.StatusImplementation
)

// routeInput is what routing looks at.
type routeInput struct {
	initialised bool   // .chorus/ exists
	status      string // planning-state.json status
	tasks       int    // tasks in the store, closed ones included
	ready       int    // tasks ready now, plus work a crashed session left
	forced      bool   // --autopilot or --mode: no mode choice
	headless    bool   // nobody to ask
	// unplanned: status planning with no goal and no spec recorded, as
	// init leaves a project with no tasks: nothing is being written, so
	// tasks created by hand route as a ready plan would.
	unplanned bool
}

// decideRoute is the App Router: no .chorus/ → init; a plan being written
// or reviewed → planning (review); no tasks at all → planning; a ready
// plan → the mode choice, or straight into implementation when the mode
// was given (or nobody is there to choose); implementation → the
// implementation view while there is work, planning when there is none.
func decideRoute(in routeInput) (Route, error) {
	if !in.initialised {
		return RouteInit, nil
	}
	status := in.status
	if status == PlanPlanning && in.unplanned {
		status = PlanReady
	}
	switch status {
	case PlanPlanning:
		return RoutePlanning, nil
	case PlanReviewing:
		return RouteReview, nil
	case PlanReady, PlanImplementation, "":
		if in.tasks == 0 || in.ready == 0 {
			return RoutePlanning, nil
		}
		if status == PlanImplementation || in.forced || in.headless {
			return RouteImplement, nil
		}
		return RouteModeChoice, nil
	}
	return "", fmt.Errorf(".chorus/planning-state.json: status %q is not valid; allowed: planning, reviewing, ready, implementation", in.status)
}

// planningState reads planning-state.json; a missing file counts as "ready".
func planningState(path string) (status string, chosen string, err error) {
	st, err := planning.Load(path)
	if err != nil {
		return "", "", err
	}
	return st.Status, st.Mode(), nil
}

// effectiveMode is the mode rule (README, "The mode"): --autopilot for
// this run only, else --mode (recorded as the choice by dispatch), else
// the user's last explicit choice (planning-state.json's chosenMode: m,
// `chorus mode`, --mode, the mode dialog), else the config's mode.
func (o *runOptions) effectiveMode(cfg config.Config, chosen string) (string, error) {
	mode := cfg.Mode
	if chosen != "" {
		mode = chosen
	}
	if o.mode != "" {
		if o.mode != config.ModeSemiAuto && o.mode != config.ModeAutopilot {
			return "", withCode(ExitUsage, fmt.Errorf("--mode: %q is not valid; allowed: %s", o.mode, strings.Join(config.Modes, ", ")))
		}
		mode = o.mode
	}
	if o.autopilot {
		if o.mode == config.ModeSemiAuto {
			return "", withCode(ExitUsage, errors.New("--autopilot and --mode semi-auto contradict each other; pick one"))
		}
		mode = config.ModeAutopilot
	}
	return mode, nil
}

func runRoot(cmd *cobra.Command, g *globals, o *runOptions) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	if o.maxAgents < 0 || o.maxAgents > 32 {
		return withCode(ExitUsage, fmt.Errorf("--max-agents: %d is not valid; allowed: an integer from 1 to 32", o.maxAgents))
	}
	root, err := g.repoRoot(ctx)
	if err != nil {
		return err
	}
	p := &project{root: root}
	if _, err := os.Stat(root + "/.chorus"); err != nil {
		if !isTTY(cmd.InOrStdin()) || o.headless {
			//lint:ignore ST1005 Chorus is a name; the message is shown as it is
			return withCode(ExitSetup, fmt.Errorf("Chorus is not set up in %s; run `chorus init --yes` first", root))
		}
		fmt.Fprintln(stderr, "No .chorus/ here yet: starting init.")
		if _, err := runInit(ctx, g, &initOptions{maxAgents: o.maxAgents}, cmd.InOrStdin(), stderr); err != nil {
			return err
		}
	}
	p, err = g.loadProject(ctx, stderr, true)
	if err != nil {
		return err
	}
	if o.json && !o.headless {
		return withCode(ExitUsage, errors.New("--json goes with --headless (or use `chorus events --json` beside a running engine)"))
	}
	o.stdout = cmd.OutOrStdout()
	// An engine already runs for this repository: the TUI attaches to it
	// whatever the planning state says.
	if !o.headless && isTTY(os.Stdin) && isTTY(os.Stdout) {
		if c, err := dialEngine(ctx, p, remote.RoleTUI); err == nil {
			s, err := p.store(ctx)
			if err != nil {
				c.Close()
				return err
			}
			return runAttached(ctx, p, g, s, c, stderr, nil)
		} else if !errors.Is(err, remote.ErrNoEngine) {
			return err
		}
	}
	// Say so up front when another Chorus owns the repository: its claimed
	// tasks would otherwise look like an empty queue.
	if st, err := p.dir.InspectLock(); err == nil && st.Held {
		if c, err := dialEngine(ctx, p, remote.RoleEvents); err == nil {
			c.Close()
			return withCode(ExitLocked, fmt.Errorf("a background Chorus engine (pid %d) runs this repository: `chorus attach` opens it, `chorus events --json` follows it, `chorus stop --wait` ends it", c.PID()))
		}
		return withCode(ExitLocked, (&chorusdir.HeldError{Path: p.dir.Lock(), Holder: st.Holder}))
	} else if err == nil && st.Stale() {
		// Left by a Chorus that was killed: take it and let it go, which
		// removes the file without racing a Chorus starting right now.
		if l, err := p.dir.Acquire("chorus (tidying a stale lock)"); err == nil {
			l.Release()
		}
	}
	pst, err := planning.Load(p.dir.PlanningState())
	if err != nil {
		return withCode(ExitSetup, err)
	}
	status, chosen := pst.Status, pst.Mode()
	mode, err := o.effectiveMode(p.cfg, chosen)
	if err != nil {
		return err
	}
	if o.maxAgents > 0 {
		p.cfg.Agents.MaxParallel = o.maxAgents
	}
	p.cfg.Mode = mode
	s, err := p.store(ctx)
	if err != nil {
		return err
	}
	ready, err := s.Ready(ctx, beads.ReadyOptions{})
	if err != nil {
		return withCode(ExitTasks, err)
	}
	all, err := s.List(ctx)
	if err != nil {
		return withCode(ExitTasks, err)
	}
	// Work a previous session left (agents killed with it, merges still
	// queued) needs a session too, to be recovered and finished.
	route, err := decideRoute(routeInput{initialised: true, status: status, tasks: len(all), ready: len(ready) + leftover(ctx, p, s),
		forced: o.autopilot || o.mode != "", headless: o.headless, unplanned: pst.Unplanned()})
	if err != nil {
		return withCode(ExitSetup, err)
	}
	// Failed and blocked tasks are retried from the full-screen view: open
	// it for them even when nothing is ready.
	if route == RoutePlanning && (status != PlanPlanning || pst.Unplanned()) && !o.headless && stuckTasks(ctx, s) > 0 {
		route = RouteImplement
	}
	return dispatch(ctx, route, p, s, o, len(ready), stderr)
}

// dispatch starts the chosen mode.
func dispatch(ctx context.Context, route Route, p *project, s beads.Store, o *runOptions, ready int, stderr io.Writer) error {
	switch route {
	case RoutePlanning, RouteReview:
		if !o.headless && isTTY(os.Stdin) && isTTY(os.Stdout) {
			return resumePlanScreen(ctx, p, s, stderr, backgroundHandover(p, o.global, o, s, stderr))
		}
		if ready > 0 {
			// The plan is not final yet, though tasks exist and are ready.
			fmt.Fprintf(stderr, "%d task(s) are ready in %s, but .chorus/planning-state.json says the plan is still being %s.\n", ready, p.root, map[Route]string{RoutePlanning: "written", RouteReview: "reviewed"}[route])
			fmt.Fprintln(stderr, "Run `chorus plan` to finish the plan (its review marks it ready), or set its status to \"ready\" once the tasks are final; then run `chorus` again.")
			return nil
		}
		fmt.Fprintf(stderr, "No tasks are ready to work on in %s.\n", p.root)
		fmt.Fprintln(stderr, "Plan them with `chorus plan \"what you want to build\"` (or `chorus plan --from SPEC.md`), or create them with `chorus task create \"title\" -p 1 --acceptance \"…\"`, then run `chorus` again.")
		if route == RouteReview {
			fmt.Fprintln(stderr, "planning-state.json says the plan is under review; set its status to \"ready\" once the tasks are final.")
		}
		return nil
	case RouteModeChoice, RouteImplement:
		// A ready plan whose mode nobody gave: the person picks it, and
		// the choice is recorded as the dialog closes.
		if route == RouteModeChoice && !o.headless && isTTY(os.Stdin) && isTTY(os.Stdout) {
			return chooseModeScreen(ctx, p, s, stderr, nil, backgroundHandover(p, o.global, o, s, stderr))
		}
		// The plan is under way. Only --mode is a choice that lasts (the
		// mode rule, modeRule): a one-off --autopilot, or headless in the
		// configured mode, leaves the recorded choice alone.
		if o.headless || (isTTY(os.Stdin) && isTTY(os.Stdout)) {
			if _, err := planning.Update(p.dir.PlanningState(), func(st *planning.State) {
				st.Status = planning.StatusImplementation
				if o.mode != "" && !o.autopilot {
					mode := o.mode
					st.ChosenMode = &mode
				}
			}); err != nil {
				return withCode(ExitSetup, err)
			}
		}
		return runImplementation(ctx, p, s, o, ready, stderr)
	}
	return fmt.Errorf("unknown route %q", route)
}

func isTTY(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// leftover counts tasks and merges a crashed session left behind: tasks
// claimed by Chorus agents and merge-queue items not yet landed.
// stuckTasks counts tasks that are blocked or failed (failed ones are
// blocked with a label): work a person can retry.
func stuckTasks(ctx context.Context, s beads.Store) int {
	ts, err := s.List(ctx)
	if err != nil {
		return 0
	}
	n := 0
	for _, t := range ts {
		if t.Status == beads.StatusBlocked {
			n++
		}
	}
	return n
}

// leftover counts this instance's unfinished business: its own claims
// (another instance's live claims are that one's work) and merges.
func leftover(ctx context.Context, p *project, s beads.Store) int {
	n := 0
	me := ""
	if in, err := p.dir.Instance(); err == nil {
		me = in.ID
	}
	if ts, err := s.List(ctx); err == nil {
		for _, t := range ts {
			if t.Status == beads.StatusInProgress && orchestrator.OwnClaim(t.Assignee, me) {
				n++
			}
		}
	}
	if st, err := orchestrator.LoadState(p.dir.State()); err == nil && st != nil {
		for _, it := range st.MergeQueue {
			if it.Status != merge.StatusLanded && it.Status != merge.StatusReverted {
				n++
			}
		}
	}
	return n
}
