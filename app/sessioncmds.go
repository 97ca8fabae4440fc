package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/remote"
)

// newModeCmd shows or changes the mode: live in a running engine, and as
// the choice the next start uses.
func newModeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "mode [semi-auto|autopilot]",
		Short: "Show the mode, or switch it (live in the running engine, and for the next start)",
		Long: `Without an argument, shows the running engine's mode, the chosen mode the
next start uses, and the configured default. With one, switches the running
engine to it at once (as m does in the TUI) and records it as your choice:
it holds across restarts until you change it (m, chorus mode, --mode, the
mode dialog). A one-off --autopilot run does not change it.`,
		Args:      cobra.MaximumNArgs(1),
		ValidArgs: config.Modes,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			ec, err := cliEngine(ctx, p)
			if err != nil {
				return err
			}
			if ec != nil {
				defer ec.Close()
			}
			if len(args) == 0 {
				m, err := modeInfo(ctx, p, ec)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				if m.Live != "" {
					fmt.Fprintf(cmd.OutOrStdout(), "live: %s\n", m.Live)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "next start: %s (%s)\n", m.Next, m.From)
				return nil
			}
			mode := args[0]
			if mode != config.ModeSemiAuto && mode != config.ModeAutopilot {
				return withCode(ExitUsage, fmt.Errorf("mode %q is not valid; allowed: %s", mode, strings.Join(config.Modes, ", ")))
			}
			if ec != nil {
				// The engine records it as the choice when it switches.
				if err := ec.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdMode, Text: mode}); err != nil {
					return withCode(ExitFailure, err)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "the running engine (pid %d) is in %s mode now; it stays your choice until you change it\n", ec.PID(), mode)
				return nil
			}
			if err := saveModeChoice(p, mode); err != nil {
				return withCode(ExitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "no engine runs; the next start is in %s mode\n", mode)
			return nil
		},
	}
	return c
}

// modeReport is the mode as `chorus status` and `chorus mode` show it.
type modeReport struct {
	Live       string `json:"live,omitempty"` // the running engine's mode
	Chosen     string `json:"chosen,omitempty"`
	Configured string `json:"configured"`
	Next       string `json:"next"` // what a plain `chorus` starts in
	From       string `json:"from"` // why: "your last choice" or "config"
}

// modeRule is the one rule for the mode at start: --autopilot for that run
// only, else --mode (which becomes the choice), else the last choice, else
// the config's mode.
func modeRule(configured, chosen string) (mode, from string) {
	if chosen != "" {
		return chosen, "your last choice (m, chorus mode, --mode or the mode dialog)"
	}
	return configured, "mode in .chorus/config.json; nothing chosen yet"
}

// modeInfo reads the mode's three sources; ec is the running engine, nil
// when none runs.
func modeInfo(ctx context.Context, p *project, ec *remote.Client) (modeReport, error) {
	st, err := planning.Load(p.dir.PlanningState())
	if err != nil {
		return modeReport{}, err
	}
	m := modeReport{Chosen: st.Mode(), Configured: p.cfg.Mode}
	m.Next, m.From = modeRule(m.Configured, m.Chosen)
	if ec != nil {
		snap, err := ec.Current(ctx)
		if err != nil {
			return m, err
		}
		m.Live = snap.Mode
	}
	return m, nil
}

// newPauseCmd pauses or resumes the running engine.
func newPauseCmd(g *globals, resume bool) *cobra.Command {
	use, short, kind, done := "pause", "Pause the running engine: no new agents start; running ones go on", orchestrator.CmdPause, "paused: no new agents start (`chorus resume` goes on)"
	if resume {
		use, short, kind, done = "resume", "Resume the running engine after a pause", orchestrator.CmdResume, "resumed"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			ec, err := cliEngine(ctx, p)
			if err != nil {
				return err
			}
			if ec == nil {
				return noEngine(p, use)
			}
			defer ec.Close()
			if err := ec.Do(ctx, orchestrator.Command{Kind: kind}); err != nil {
				return withCode(ExitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chorus: %s\n", done)
			return nil
		},
	}
}
