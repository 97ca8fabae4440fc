package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
	"github.com/chorus-dev/chorus/ui"
)

// The engine as a process of its own: `chorus` starts it in the background
// (`chorus engine`, in a session of its own, its output in
// .chorus/logs/engine.log) and attaches the TUI to it over a Unix socket,
// so the agents outlive the terminal. It holds the repository lock; it
// ends on `chorus stop`, on q → stop in a TUI, or on SIGINT/SIGTERM, by
// the same shutdown as quitting did in-process.

// engineLog is where a background engine's stdout and stderr go.
func engineLog(p *project) string { return filepath.Join(p.dir.Logs(), "engine.log") }

func newEngineCmd(g *globals) *cobra.Command {
	var ro runOptions
	var readyFD int
	cmd := &cobra.Command{
		Use:    "engine",
		Short:  "Run the engine in the background for TUIs to attach to (started by chorus)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			longLived()
			engineHeap()
			var ready io.WriteCloser
			if readyFD > 0 {
				ready = readyPipe(readyFD)
			}
			err := runEngine(cmd.Context(), g, &ro, ready, cmd.ErrOrStderr())
			if err != nil && ready != nil {
				// Whoever started us shows the reason.
				fmt.Fprintln(ready, err.Error())
				ready.Close()
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&ro.mode, "mode", "", "operating mode: semi-auto or autopilot (default: from config)")
	f.IntVar(&ro.maxAgents, "max-agents", 0, "run at most N agents at once")
	f.IntVar(&readyFD, "ready-fd", 0, "file descriptor to write \"ok\" (or the error) to once listening")
	return cmd
}

// readyPipe is the descriptor `chorus` handed the engine to say it
// listens, made close-on-exec at once: a process the engine starts before
// it is ready (its long-lived git update-ref and cat-file, an agent)
// would otherwise hold the pipe open, and the TUI waiting for its end
// would show a blank screen for as long as that process lives.
func readyPipe(fd int) *os.File {
	syscall.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "ready")
}

// runEngine runs the engine until a stop request or a stop signal, serving
// it on the repository's socket.
func runEngine(ctx context.Context, g *globals, o *runOptions, ready io.WriteCloser, stderr io.Writer) error {
	// Losing the terminal that started us must not stop the agents.
	signal.Ignore(syscall.SIGHUP)
	p, err := g.loadProject(ctx, stderr, true)
	if err != nil {
		return err
	}
	_, chosen, err := planningState(p.dir.PlanningState())
	if err != nil {
		return withCode(ExitSetup, err)
	}
	if p.cfg.Mode, err = o.effectiveMode(p.cfg, chosen); err != nil {
		return err
	}
	if o.maxAgents > 0 {
		p.cfg.Agents.MaxParallel = o.maxAgents
	}
	s, err := p.store(ctx)
	if err != nil {
		return err
	}
	ss, release, err := startSession(ctx, p, s, stderr)
	if err != nil {
		return err
	}
	defer release()
	path := remote.SocketPath(p.dir)
	ln, err := remote.Listen(path)
	if err != nil {
		return withCode(ExitSetup, fmt.Errorf("listening on %s: %w", path, err))
	}
	// SIGINT/SIGTERM (ctx) stop the engine as quitting does.
	_, cancel, done, err := ss.run(ctx)
	if err != nil {
		ln.Close()
		return err
	}
	defer cancel()
	srv := &remote.Server{Eng: ss.engine, Stop: cancel, Log: ss.log}
	srvCtx, stopServing := context.WithCancel(context.WithoutCancel(ctx))
	go recordModeChoices(srvCtx, p, ss.engine.Subscribe(), ss.log)
	n := notifierFor(p.cfg, ss.log)
	if n != nil {
		go n.follow(srvCtx, ss.engine.Subscribe())
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(srvCtx, ln) }()
	ss.log.Info("engine serving", "socket", path, "pid", os.Getpid())
	if ready != nil {
		fmt.Fprintln(ready, "ok")
		ready.Close()
	}
	eerr := <-done
	// The report and the last notifications before the socket goes: a
	// `chorus stop --wait` returns when it closes, and then the engine is
	// done but for letting go of the lock.
	if ss.engine.Snapshot().Mode == config.ModeAutopilot {
		if path, err := writeRunReport(context.WithoutCancel(ctx), p.dir, s); err != nil {
			ss.log.Error("the run's report was not written", "err", err)
		} else {
			ss.log.Info("the run's report is written", "path", path)
		}
	}
	n.close(notifyFlush)
	// Clients see the shutdown through until here; then the socket goes.
	stopServing()
	srv.Close()
	<-served
	if eerr != nil {
		ss.log.Error("engine stopped with an error", "err", eerr)
	}
	return eerr
}

// dialEngine connects to the repository's engine, if one runs.
func dialEngine(ctx context.Context, p *project, role string) (*remote.Client, error) {
	c, err := remote.Dial(ctx, remote.SocketPath(p.dir), role)
	if err != nil && errors.Is(err, remote.ErrNoEngine) {
		return nil, err
	}
	if err != nil {
		return nil, withCode(ExitFailure, err)
	}
	return c, nil
}

// noEngine is the error of attach, stop and events without an engine.
// runningEngine connects to the repository's engine for a command that
// needs one; what names the action in the error when none runs.
func runningEngine(ctx context.Context, p *project, role, what string) (*remote.Client, error) {
	c, err := dialEngine(ctx, p, role)
	if errors.Is(err, remote.ErrNoEngine) {
		return nil, noEngine(p, what)
	}
	return c, err
}

func noEngine(p *project, what string) error {
	return withCode(ExitFailure, fmt.Errorf("no Chorus engine is running for %s, so there is nothing to %s; start one with `chorus` (or `chorus --autopilot`)", p.root, what))
}

// startEngine starts `chorus engine` for the repository in a session of
// its own and waits until it listens (or says why it cannot).
func startEngine(ctx context.Context, p *project, g *globals, o *runOptions) error {
	if err := os.MkdirAll(p.dir.Logs(), 0o700); err != nil {
		return err
	}
	logf, err := os.OpenFile(engineLog(p), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "--- %s chorus engine starting\n", time.Now().Format(time.RFC3339))
	pr, pw, err := os.Pipe()
	if err != nil {
		return err
	}
	defer pr.Close()
	args := []string{"engine", "-C", p.root, "--ready-fd", "3", "--mode", p.cfg.Mode}
	if g.configPath != "" {
		args = append(args, "--config", g.configPath)
	}
	if o.maxAgents > 0 {
		args = append(args, "--max-agents", strconv.Itoa(o.maxAgents))
	}
	cmd := exec.Command(selfExe(), args...)
	cmd.Dir = p.root
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{pw}
	// Its own session: no controlling terminal, so closing ours (SIGHUP)
	// or a signal to our process group never reaches it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		pw.Close()
		return withCode(ExitFailure, fmt.Errorf("starting the engine: %w", err))
	}
	pw.Close()
	// Reaped here while we run; once we exit, init adopts it.
	go cmd.Wait()
	b, _ := io.ReadAll(pr)
	if msg := strings.TrimSpace(string(b)); msg != "ok" {
		if msg == "" {
			msg = "it exited without saying why"
		}
		var held error
		if st, err := p.dir.InspectLock(); err == nil && st.Held && st.Holder.PID != cmd.Process.Pid {
			held = withCode(ExitLocked, fmt.Errorf("the engine did not start: %s", msg))
		}
		if held != nil {
			return held
		}
		return withCode(ExitFailure, fmt.Errorf("the engine did not start: %s (its log: %s)", msg, engineLog(p)))
	}
	return nil
}

// runEngineTUI is `chorus` with a terminal: attach to the repository's
// engine, starting it first when none runs.
func runEngineTUI(ctx context.Context, p *project, g *globals, s beads.Store, o *runOptions, stderr io.Writer) error {
	c, err := dialEngine(ctx, p, remote.RoleTUI)
	if errors.Is(err, remote.ErrNoEngine) {
		if err := startEngine(ctx, p, g, o); err != nil {
			return err
		}
		c, err = dialEngine(ctx, p, remote.RoleTUI)
	}
	if err != nil {
		return err
	}
	return runAttached(ctx, p, g, s, c, stderr, nil)
}

// runAttached shows the TUI on an engine's client until the user detaches
// or stops the engine, or the engine ends. An engine that dies under it
// (killed, crashed) is replaced and the TUI comes back on the new one,
// which has taken the agents back from their hosts. A terminal opened
// ahead (nil: the UI opens it) is the first UI's to end.
func runAttached(ctx context.Context, p *project, g *globals, s beads.Store, c *remote.Client, stderr io.Writer, term *ui.Terminal) error {
	notice := ""
	for {
		next, err := attachOnce(ctx, p, g, s, c, notice, stderr, term)
		if next == nil {
			return err
		}
		notice = restartedNotice(c.PID(), next.PID())
		c, term = next, nil
	}
}

// attachOnce is one TUI on one engine; it returns the client of the
// engine that replaced a dead one, if it came to that.
func attachOnce(ctx context.Context, p *project, g *globals, s beads.Store, c *remote.Client, notice string, stderr io.Writer, term *ui.Terminal) (*remote.Client, error) {
	defer c.Close()
	uctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-c.Done():
			cancel()
		case <-uctx.Done():
		}
	}()
	// The TUI's task writes go through the engine, as the CLI's do.
	out, uerr := ui.RunAttached(uctx, ui.Options{Engine: c, Store: remote.Store{Store: s, C: c}, Config: p.cfg, Version: buildVersion(), Dir: p.dir, FirstFrame: longLived, Terminal: term, Notice: notice})
	if uerr != nil {
		return nil, withCode(ExitFailure, fmt.Errorf("%w (the engine, pid %d, keeps running: `chorus attach` to try again, `chorus stop` to end it)", uerr, c.PID()))
	}
	select {
	case <-c.Done():
		if ctx.Err() == nil {
			next, err := replaceEngine(ctx, p, g, c)
			if next != nil {
				return next, nil
			}
			if err != nil {
				return nil, withCode(ExitFailure, fmt.Errorf("the engine (pid %d) died and no new one started: %w (its log: %s)", c.PID(), err, engineLog(p)))
			}
		}
		fmt.Fprintf(stderr, "chorus: the engine (pid %d) stopped; its log is %s\n", c.PID(), engineLog(p))
		return nil, nil
	default:
	}
	if ctx.Err() != nil || out == ui.OutcomeDetach {
		fmt.Fprintf(stderr, "chorus: detached; the engine (pid %d) keeps running: `chorus attach` comes back, `chorus stop` ends it\n", c.PID())
		if ctx.Err() != nil {
			return nil, withCode(ExitInterrupted, errors.New("interrupted; the engine keeps running"))
		}
		return nil, nil
	}
	running := c.Snapshot().Running
	stopAt := time.Now()
	fmt.Fprintf(stderr, "chorus: stopping the engine (pid %d)…\n", c.PID())
	if err := c.Stop(context.WithoutCancel(ctx), true); err != nil {
		return nil, withCode(ExitFailure, fmt.Errorf("stopping the engine: %w", err))
	}
	if running > 0 {
		fmt.Fprintln(stderr, "chorus: "+stoppedLine(running, uncommittedSince(p.dir, stopAt)))
	}
	return nil, nil
}

// engineDial is a dial's outcome.
type engineDial struct {
	c   *remote.Client
	err error
}

func newAttachCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "attach",
		Short: "Open the full-screen interface on the engine running for this repository",
		Long: `Attach opens the TUI on the engine that runs in the background for this
repository: every agent's tile shows its screen and history, then live output.
The prefix key (tui.prefixKey) then d detaches again; q asks whether to stop
the engine too. Several terminals may attach at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.findProject(ctx)
			if err != nil {
				return err
			}
			tty := isTTY(cmd.InOrStdin()) && isTTY(os.Stdout)
			// The terminal is set up and the engine dialed while the
			// config is read (a millisecond or two of JSON); the terminal
			// is given back as it was if the attach goes no further.
			var term *ui.Terminal
			dialed := make(chan engineDial, 1)
			if tty {
				term = ui.OpenTerminal()
				defer term.Close()
				go func() {
					c, err := runningEngine(ctx, p, remote.RoleTUI, "attach to")
					dialed <- engineDial{c, err}
				}()
			} else {
				close(dialed)
			}
			err = g.loadConfig(p, cmd.ErrOrStderr(), true)
			d := <-dialed
			if err == nil && !tty {
				err = withCode(ExitUsage, errors.New("attach needs a terminal; `chorus events --json` follows the engine without one"))
			}
			if err == nil {
				err = d.err
			}
			c := d.c
			if err != nil {
				if c != nil {
					c.Close()
				}
				return err
			}
			s, err := p.store(ctx)
			if err != nil {
				c.Close()
				return err
			}
			return runAttached(ctx, p, g, s, c, cmd.ErrOrStderr(), term)
		},
	}
}

func newStopCmd(g *globals) *cobra.Command {
	var wait bool
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Stop the engine running for this repository, as quitting does",
		Long: `Stop ends the background engine the way quitting the TUI does: agents are
stopped, their work committed, their tasks back to open, the merge queue kept
for the next run. With --wait it returns once the engine has finished.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			c, err := runningEngine(ctx, p, remote.RoleStop, "stop")
			if err != nil {
				return err
			}
			defer c.Close()
			stopAt := time.Now()
			if err := c.Stop(ctx, wait); err != nil {
				return withCode(ExitFailure, err)
			}
			if wait {
				// Its socket closed; the lock goes a moment later.
				if !waitLockFree(p.dir, 10*time.Second) {
					fmt.Fprintf(cmd.ErrOrStderr(), "chorus: the engine (pid %d) closed its socket but still holds %s\n", c.PID(), p.dir.Lock())
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "chorus: the engine (pid %d) stopped\n", c.PID())
				if lost := uncommittedSince(p.dir, stopAt); len(lost) > 0 {
					fmt.Fprintf(cmd.ErrOrStderr(), "chorus: the work of %d task(s) could not be committed: %s\n", len(lost), uncommittedText(lost))
				}
			} else {
				fmt.Fprintf(cmd.ErrOrStderr(), "chorus: the engine (pid %d) is stopping (its agents' work is committed first)\n", c.PID())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&wait, "wait", false, "return once the engine has finished stopping")
	return cmd
}

func newEventsCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "events",
		Short: "Follow the running engine's events (one line, or one JSON object, per event)",
		Long: `Events prints the background engine's events as they happen until the engine
stops: one line per event, or with --json one JSON object per line (see
docs/events.md for the format).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			c, err := runningEngine(ctx, p, remote.RoleEvents, "follow")
			if err != nil {
				return err
			}
			defer c.Close()
			events := c.Subscribe()
			out := cmd.OutOrStdout()
			print := func(ev orchestrator.Event) error {
				if asJSON {
					return writeEventJSON(out, ev)
				}
				printEvent(out, ev)
				return nil
			}
			// A first line says whom we follow, and that following has begun.
			if err := print(orchestrator.Event{Time: time.Now(), Kind: EvEngineAttached, Text: fmt.Sprintf("following the engine, pid %d", c.PID()),
				Fields: map[string]any{"pid": c.PID(), "protocol": remote.Version}}); err != nil {
				return withCode(ExitFailure, err)
			}
			for {
				select {
				case ev := <-events:
					if err := print(ev); err != nil {
						return withCode(ExitFailure, err)
					}
				case <-c.Done():
					for {
						select {
						case ev := <-events:
							_ = print(ev)
							continue
						default:
						}
						return nil
					}
				case <-ctx.Done():
					return nil
				}
			}
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "one JSON object per event (docs/events.md)")
	return cmd
}

// EvEngineAttached is the first line of `chorus events`: the engine
// followed, and that every event after it is seen.
const EvEngineAttached orchestrator.EventKind = "engine_attached"

// writeEventJSON prints one event as one line of JSON.
func writeEventJSON(w io.Writer, ev orchestrator.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encoding event %s: %w", ev.Kind, err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
