package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/report"
	"github.com/chorus-dev/chorus/ui"
	"github.com/chorus-dev/chorus/ui/present"
)

// session is one running engine with what it needs around it.
type session struct {
	p      *project
	store  beads.Store
	engine *orchestrator.Engine
	target string
	log    *slog.Logger // the diagnostic log, .chorus/logs/chorus.log
}

// startSession takes the repository lock and builds the engine, recovered
// from the previous run's state.
func startSession(ctx context.Context, p *project, s beads.Store, stderr io.Writer) (*session, func(), error) {
	lock, err := p.dir.Acquire(strings.Join(os.Args, " "))
	if err != nil {
		return nil, nil, withCode(ExitLocked, err)
	}
	log, closeLog, err := openDiagLog(p, stderr)
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	fail := func(err error) (*session, func(), error) {
		log.Error("session did not start", "err", err)
		closeLog()
		lock.Release()
		return nil, nil, err
	}
	// Temp files a killed run left behind; only now, holding the lock, is
	// no other Chorus writing them.
	if removed, err := p.dir.CleanTemps(time.Now()); err != nil {
		fmt.Fprintf(stderr, "warning: cleaning temp files in %s: %v\n", p.dir.Path, err)
	} else if len(removed) > 0 {
		p.logEvent(stderr, "startup", "temp_files_removed", map[string]any{"paths": removed})
	}
	target, err := recordTarget(ctx, p, stderr)
	if err != nil {
		return fail(withCode(ExitSetup, fmt.Errorf("finding the checked-out branch: %w", err)))
	}
	if target == "" {
		return fail(withCode(ExitSetup, errors.New("the main checkout is on a detached HEAD; check out the branch agents should merge into, or set merge.targetBranch in .chorus/config.json")))
	}
	if _, err := gitx.Git(ctx, p.root, "rev-parse", "--verify", "--quiet", target+"^{commit}"); err != nil {
		return fail(withCode(ExitSetup, fmt.Errorf("branch %q has no commits yet; make a first commit so agents have something to branch from", target)))
	}
	if err := teamStoreCheck(p.cfg, s.Backend()); err != nil {
		return fail(withCode(ExitSetup, err))
	}
	logSessionStart(log, p, target)
	// Where the morning report of this run starts.
	_ = p.dir.AppendLog("implementation", report.SessionStarted, map[string]any{"target": target, "mode": p.cfg.Mode})
	runner, err := hostRunner(p.cfg, p.dir)
	if err != nil {
		return fail(withCode(ExitSetup, err))
	}
	eng, err := orchestrator.New(orchestrator.Options{Dir: p.dir, Config: p.cfg, Store: s, Target: target, ChorusExe: selfExe(), Runner: runner})
	if err != nil {
		return fail(err)
	}
	stopEvents := logEvents(log, eng.Subscribe())
	if err := eng.Recover(ctx); err != nil {
		stopEvents()
		return fail(withCode(ExitSetup, err))
	}
	engineHere.Store(true)
	release := func() {
		engineHere.Store(false)
		stopEvents()
		log.Info("session ended")
		closeLog()
		lock.Release()
	}
	return &session{p: p, store: s, engine: eng, target: target, log: log}, release, nil
}

// run starts the session's engine under a context derived from parent,
// with `chorus signal` routed to it; cancel stops it and done reports how
// Run ended.
func (ss *session) run(parent context.Context) (context.Context, context.CancelFunc, <-chan error, error) {
	runCtx, cancel := context.WithCancel(parent)
	if err := ss.engine.RouteSignals(runCtx); err != nil {
		cancel()
		return nil, nil, nil, err
	}
	done := make(chan error, 1)
	go func() { done <- ss.engine.Run(runCtx) }()
	return runCtx, cancel, done, nil
}

// runImplementation starts the engine with a front end.
func runImplementation(ctx context.Context, p *project, s beads.Store, o *runOptions, ready int, stderr io.Writer) error {
	// Autopilot alone with an agent that cannot start would only cycle.
	if p.cfg.Mode == config.ModeAutopilot {
		if msg := defaultAgentMissing(p.cfg); msg != "" {
			return withCode(ExitSetup, errors.New(msg+" (see `chorus doctor`)"))
		}
	}
	if !o.headless {
		if !isTTY(os.Stdin) || !isTTY(os.Stdout) {
			return withCode(ExitUsage, errors.New("the full-screen interface needs a terminal; run with --headless for plain progress lines"))
		}
		if o.inProcess {
			return runTUI(ctx, p, s, stderr)
		}
		g := o.global
		if g == nil {
			g = &globals{}
		}
		return runEngineTUI(ctx, p, g, s, o, stderr)
	}
	if o.json && o.stdout == nil {
		o.stdout = os.Stdout
	}
	return runHeadless(ctx, p, s, o, stderr)
}

// runTUI runs the engine under the full-screen interface. Shutdown order:
// ui.Run returns only after its pump and frame ticker stopped and
// app.Stop restored the terminal; then the engine is cancelled (agents
// stopped, tasks back to open, work committed) and waited for.
func runTUI(ctx context.Context, p *project, s beads.Store, stderr io.Writer) error {
	ss, release, err := startSession(ctx, p, s, stderr)
	if err != nil {
		return err
	}
	defer release()
	eng := ss.engine
	if n := notifierFor(p.cfg, ss.log); n != nil {
		nctx, stop := context.WithCancel(context.WithoutCancel(ctx))
		go n.follow(nctx, eng.Subscribe())
		defer n.close(notifyFlush)
		defer stop()
	}
	// The engine outlives a signal until the UI has let go of the terminal.
	runCtx, cancel, done, err := ss.run(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	defer cancel()
	go recordModeChoices(runCtx, p, eng.Subscribe(), ss.log)
	// Other shells reach this engine too; their stop request quits the UI.
	uctx, quitUI := context.WithCancel(ctx)
	defer quitUI()
	stopServing := serveInProcess(ctx, p, eng, quitUI, ss.log, stderr)
	defer stopServing()
	uerr := ui.Run(uctx, ui.Options{Engine: eng, Store: s, Config: p.cfg, Version: buildVersion(), Dir: p.dir, FirstFrame: longLived})
	running := eng.Snapshot().Running
	stopAt := time.Now()
	cancel()
	eerr := <-done
	if eng.Snapshot().Mode == config.ModeAutopilot {
		if path, err := writeRunReport(context.WithoutCancel(ctx), p.dir, s); err != nil {
			fmt.Fprintf(stderr, "chorus: the run's report was not written: %v\n", err)
		} else {
			fmt.Fprintf(stderr, "chorus: the run's report is in %s\n", path)
		}
	}
	if uerr != nil {
		ss.log.Error("full-screen interface failed", "err", uerr)
	}
	if eerr != nil {
		ss.log.Error("engine stopped with an error", "err", eerr)
	}
	if uerr != nil {
		return withCode(ExitFailure, fmt.Errorf("%w (run with --headless where there is no terminal)", uerr))
	}
	if running > 0 {
		fmt.Fprintln(stderr, "chorus: "+stoppedLine(running, uncommittedSince(p.dir, stopAt)))
	}
	if ctx.Err() != nil {
		return withCode(ExitInterrupted, errors.New("interrupted"))
	}
	return eerr
}

// selfExe is the chorus binary agents run for `chorus signal` and the
// task CLI (tests in this package point it at a built binary).
var selfExe = func() string {
	exe, _ := os.Executable()
	return exe
}

// buildVersion is the version the header shows: the module version the
// binary was built from, or "dev".
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// runHeadless prints one line per event and ends when nothing more can
// happen without a human.
func runHeadless(ctx context.Context, p *project, s beads.Store, o *runOptions, out io.Writer) error {
	return runHeadlessWith(ctx, p, s, o, out, nil)
}

// runHeadlessWith is runHeadless with a first step run once the engine is up.
func runHeadlessWith(ctx context.Context, p *project, s beads.Store, o *runOptions, out io.Writer, first func(*orchestrator.Engine) error) error {
	longLived()
	engineHeap()
	ss, release, err := startSession(ctx, p, s, out)
	if err != nil {
		return err
	}
	defer release()
	eng := ss.engine
	events := eng.Subscribe()
	// Fed from this loop's own events, so the run's last events are told
	// before it ends.
	notify := notifierFor(p.cfg, ss.log)
	runCtx, cancel, done, err := ss.run(ctx)
	if err != nil {
		return err
	}
	defer cancel()
	go recordModeChoices(runCtx, p, eng.Subscribe(), ss.log)
	// Other shells reach this engine too (the CLI, `chorus attach`,
	// `chorus events`); their stop request ends the run as quitting does.
	stopped := make(chan struct{})
	var stopOnce sync.Once
	stopServing := serveInProcess(ctx, p, eng, func() { stopOnce.Do(func() { close(stopped) }) }, ss.log, out)
	defer stopServing()
	start := time.Now()
	fmt.Fprintf(out, "%s chorus: %s mode, up to %d agents, target branch %s\n", start.Format("15:04:05"), p.cfg.Mode, p.cfg.Agents.MaxParallel, ss.target)
	if first != nil {
		if err := first(eng); err != nil {
			cancel()
			<-done
			return err
		}
	} else if p.cfg.Mode == config.ModeSemiAuto {
		if len(o.tasks) == 0 {
			cancel()
			<-done
			return withCode(ExitUsage, errors.New("semi-auto without the TUI needs the tasks to run: --task ID (repeatable), or use --autopilot"))
		}
		for _, id := range o.tasks {
			if err := eng.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id}); err != nil {
				cancel()
				<-done
				return withCode(ExitFailure, err)
			}
		}
	}
	_ = eng.Sync(ctx) // idleness is judged on a snapshot that includes the above
	sum := summary{}
	interrupted := false
loop:
	for {
		select {
		case ev := <-events:
			o.print(out, ev)
			sum.add(ev)
			notify.event(ev)
			// Nobody is here to answer (or to log in, or to pass a dialog):
			// the task waits for a human. Errors the CLI still retries may
			// yet pass; it reports again when it gives up.
			// A question from `chorus ask` can be answered from any shell
			// (`chorus answer`): it waits instead, with its options listed.
			if ev.Kind == orchestrator.EvNeedsHelp && ev.Fields["question"] != nil {
				printQuestion(out, ev)
			} else if ev.Kind == orchestrator.EvNeedsHelp || (ev.Kind == orchestrator.EvNeedsHuman && ev.Fields["retrying"] != true) {
				go eng.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdBlock, TaskID: ev.Task, Text: "needs a human: " + ev.Text})
			}
		case <-eng.Changed():
			if eng.Snapshot().Idle {
				break loop
			}
		case <-ctx.Done():
			interrupted = true
			break loop
		case <-stopped:
			fmt.Fprintf(out, "%s chorus: stop requested from another shell\n", time.Now().Format("15:04:05"))
			break loop
		}
	}
	// What the stop below sends back to open: the agents running now, or
	// the releases it reports if more.
	running, releasedBefore := eng.Snapshot().Running, sum.released
	cancel()
	if err := <-done; err != nil {
		ss.log.Error("engine stopped with an error", "err", err)
	}
	for {
		select {
		case ev := <-events:
			o.print(out, ev)
			sum.add(ev)
			notify.event(ev)
			continue
		default:
		}
		break
	}
	snap := eng.Snapshot()
	sum.print(out, snap, time.Since(start))
	notify.close(notifyFlush) // autopilot's end came as an idle event
	if snap.Mode == config.ModeAutopilot {
		if path, err := writeRunReport(context.WithoutCancel(ctx), p.dir, s); err != nil {
			fmt.Fprintf(out, "  report: not written: %v\n", err)
		} else {
			fmt.Fprintf(out, "  report: %s (or run chorus report)\n", path)
		}
	}
	if interrupted {
		running = max(running, sum.released-releasedBefore)
		switch {
		case len(sum.uncommitted) > 0:
			return withCode(ExitInterrupted, fmt.Errorf("interrupted; %d running task(s) went back to open, but the work of %d could not be committed (see \"not committed\" above)", running, len(sum.uncommitted)))
		case running > 0:
			return withCode(ExitInterrupted, fmt.Errorf("interrupted; %d running task(s) went back to open with their work committed", running))
		}
		return withCode(ExitInterrupted, errors.New("interrupted; no agent was running"))
	}
	var waiting int
	for _, it := range snap.Merge.Items {
		switch it.Status {
		case merge.StatusWaitingHuman, merge.StatusWaitingApproval, merge.StatusHeld, merge.StatusFailed:
			waiting++
			fmt.Fprintf(out, "  merge of %s waits for you (%s): %s\n", line(it.TaskID), it.Status, line(it.Action))
			if it.Status == merge.StatusWaitingApproval {
				fmt.Fprintf(out, "    see it: chorus task diff %s; land it: chorus merge approve %s; or: chorus merge drop %s\n", line(it.TaskID), line(it.TaskID), line(it.TaskID))
			}
		}
	}
	if waiting > 0 {
		return withCode(ExitUnfinished, fmt.Errorf("%d merge(s) wait for a person; they stay queued for the next run", waiting))
	}
	if ms := snap.Merge.Stats; ms.Paused {
		return withCode(ExitUnfinished, fmt.Errorf("the merge queue is held: %s", ms.PauseReason))
	}
	if snap.Paused && snap.Mode == config.ModeAutopilot {
		return withCode(ExitUnfinished, errors.New("autopilot paused (by hand or a budget reached); see the events above, then run again"))
	}
	if n := len(failedTasks(snap)); n > sum.failed {
		sum.failed = n // FAILED in an earlier run (one a crash ended) counts too
	}
	if sum.failed+sum.blocked+sum.errors > 0 {
		return withCode(ExitUnfinished, fmt.Errorf("%d task(s) failed, %d blocked or waiting for a human, %d error(s)", sum.failed, sum.blocked, sum.errors))
	}
	return nil
}

// print shows one event: a line on out, or with --json a JSON object on
// stdout.
func (o *runOptions) print(out io.Writer, ev orchestrator.Event) {
	if o.json && o.stdout != nil {
		if err := writeEventJSON(o.stdout, ev); err != nil {
			fmt.Fprintf(out, "chorus: %v\n", err)
		}
		return
	}
	printEvent(out, ev)
}

func printEvent(w io.Writer, ev orchestrator.Event) {
	who := ev.Agent
	if who == "" {
		who = "-"
	}
	task := ev.Task
	if task == "" {
		task = "-"
	}
	what := string(ev.Kind)
	if ev.Text != "" {
		what += ": " + ev.Text
	}
	fmt.Fprintf(w, "%s %s %s %s\n", ev.Time.Format("15:04:05"), line(who), line(task), line(what))
}

// summary counts what happened in this run (from its events), not over the
// repository's lifetime.
type summary struct {
	closed, failed, blocked, released, errors int
	merges, iterations                        int
	errorText                                 []string
	needsHuman                                []string
	tasks                                     []string // in order of first appearance
	seen                                      map[string]bool
	spent                                     map[string]orchestrator.Usage // closed tasks, from their completion
	uncommitted                               []uncommittedWork
}

func (s *summary) add(ev orchestrator.Event) {
	if ev.Task != "" && !s.seen[ev.Task] {
		if s.seen == nil {
			s.seen = map[string]bool{}
		}
		s.seen[ev.Task] = true
		s.tasks = append(s.tasks, ev.Task)
	}
	switch ev.Kind {
	case orchestrator.EvCompleted:
		s.closed++
		if u, ok := ev.Fields["usage"].(orchestrator.Usage); ok {
			if s.spent == nil {
				s.spent = map[string]orchestrator.Usage{}
			}
			s.spent[ev.Task] = u
		}
	case orchestrator.EvFailed:
		s.failed++
	case orchestrator.EvBlocked:
		s.blocked++
	case orchestrator.EvReleased:
		s.released++
	case orchestrator.EvNeedsHelp, orchestrator.EvNeedsHuman:
		s.needsHuman = append(s.needsHuman, ev.Task+": "+ev.Text)
	case orchestrator.EvError:
		s.errors++
		s.errorText = append(s.errorText, ev.Task+": "+ev.Text)
		if u, ok := uncommittedFrom(ev); ok {
			s.uncommitted = addUncommitted(s.uncommitted, u)
		}
	case orchestrator.EvIteration:
		s.iterations++
	case orchestrator.EventKind("merge_" + string(merge.EventLanded)):
		s.merges++
	}
}

// failedTasks are the FAILED tasks the engine knows, sorted.
func failedTasks(snap orchestrator.Snapshot) []string {
	var ids []string
	for id, tr := range snap.Tasks {
		if tr.Failed != "" {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

func (s *summary) print(w io.Writer, snap orchestrator.Snapshot, wall time.Duration) {
	fmt.Fprintf(w, "summary: %d closed, %d failed, %d blocked, %d released, %d errors, %d merges, %d iterations, wall time %s%s\n",
		s.closed, s.failed, s.blocked, s.released, s.errors, s.merges, s.iterations, wall.Round(time.Second), present.Story(snap))
	for _, e := range s.errorText {
		fmt.Fprintf(w, "  error: %s\n", line(e))
	}
	for _, q := range s.needsHuman {
		fmt.Fprintf(w, "  needs a human: %s\n", line(q))
	}
	for _, u := range s.uncommitted {
		fmt.Fprintf(w, "  not committed: %s: its changes are still uncommitted files in %s (%s); nothing was deleted, the task's next run continues there; to keep them now: git -C %s add -A && git -C %s commit -m wip\n",
			line(u.Task), u.Worktree, line(u.Why), u.Worktree, u.Worktree)
	}
	for _, id := range failedTasks(snap) {
		fmt.Fprintf(w, "  failed: %s: %s (evidence: chorus task show %s; retry: chorus task label remove %s failed && chorus task reopen %s)\n",
			line(id), line(snap.Tasks[id].Failed), line(id), line(id), line(id))
	}
	// What the agents reported spending: this session, then each task of
	// it (its total over every run).
	if !snap.Usage.IsZero() {
		fmt.Fprintf(w, "  usage: %s\n", snap.Usage)
		for _, id := range s.tasks {
			u, ok := s.spent[id]
			if tr := snap.Tasks[id]; !ok && tr != nil {
				u = tr.Usage
			}
			if !u.IsZero() {
				fmt.Fprintf(w, "    %s: %s\n", line(id), u)
			}
		}
	}
}
