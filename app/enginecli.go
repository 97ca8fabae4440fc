package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/remote"
)

// While an engine runs for the repository it is the one writer: the
// commands that change tasks, the merge queue or the session reach it over
// its socket (the cli role) and take effect live; with none running they
// act directly, as they always did. Reads of the session's state (status,
// questions) come from it too: state.json alone lags behind its journal.

// cliEngine connects to the repository's engine for one command; nil
// (and no error) when none runs.
func cliEngine(ctx context.Context, p *project) (*remote.Client, error) {
	if !p.dir.Exists() {
		return nil, nil
	}
	c, err := dialEngine(ctx, p, remote.RoleCLI)
	if errors.Is(err, remote.ErrNoEngine) {
		return nil, nil
	}
	return c, err
}

// serveInProcess serves an engine running in this process (headless, the
// demo, the planning screen) on the repository's socket, so the CLI, `chorus
// events` and `chorus stop` work against it as against a background one.
// stop is what a client's stop request does. The returned function stops
// serving (once, however often it is called); a socket that cannot be had
// is reported and skipped.
func serveInProcess(ctx context.Context, p *project, eng *orchestrator.Engine, stop func(), log *slog.Logger, stderr io.Writer) func() {
	path := remote.SocketPath(p.dir)
	ln, err := remote.Listen(path)
	if err != nil {
		fmt.Fprintf(stderr, "warning: other shells cannot reach this Chorus (listening on %s: %v)\n", path, err)
		return func() {}
	}
	return serveOn(ctx, ln, eng, stop, log)
}

// watched is an in-process engine as its socket server sees it: with a
// Changed channel of its own, the engine's first one being the front
// end's.
type watched struct {
	*orchestrator.Engine
	ch <-chan struct{}
}

func (w watched) Changed() <-chan struct{} { return w.ch }

func serveOn(ctx context.Context, ln net.Listener, eng *orchestrator.Engine, stop func(), log *slog.Logger) func() {
	srv := &remote.Server{Eng: watched{eng, eng.Watch()}, Stop: stop, Log: log}
	sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			srv.Close()
			<-served
		})
	}
}

// recordModeChoices keeps the user's explicit mode choices made in a
// running engine (the m key, `chorus mode`, the mode dialog) as the
// repository's chosen mode, so they hold across restarts (README: "The
// mode").
func recordModeChoices(ctx context.Context, p *project, events <-chan orchestrator.Event, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-events:
			if ev.Kind != orchestrator.EvMode {
				continue
			}
			mode := ev.Text
			if err := saveModeChoice(p, mode); err != nil && log != nil {
				log.Error("the mode choice was not recorded", "mode", mode, "err", err)
			}
		}
	}
}

// saveModeChoice records mode as the user's choice.
func saveModeChoice(p *project, mode string) error {
	if mode != config.ModeSemiAuto && mode != config.ModeAutopilot {
		return fmt.Errorf("mode %q is not valid; allowed: semi-auto, autopilot", mode)
	}
	_, err := planning.Update(p.dir.PlanningState(), func(st *planning.State) { st.ChosenMode = &mode })
	return err
}

// Agent states as `chorus status` lists them.
const (
	StateRunning  = "running"
	StateChecking = "checking"
	StateWaiting  = "waiting for a person"
	StateIdle     = "idle"
	StateStopping = "stopping"
)

// agentState names an engine agent status for a person.
func agentState(status string) string {
	switch status {
	case orchestrator.AgentChecking:
		return StateChecking
	case orchestrator.AgentNeedsHelp, orchestrator.AgentNeedsHuman:
		return StateWaiting
	case orchestrator.AgentWaiting:
		return StateIdle
	case orchestrator.AgentStopping:
		return StateStopping
	}
	return StateRunning
}
