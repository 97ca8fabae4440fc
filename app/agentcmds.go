package app

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/stdio"
	"github.com/chorus-dev/chorus/agent/scriptagent"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/merge/driver"
)

// newSignalCmd is what agents run to tell the running Chorus about their
// task. A key that is missing or not the agent's is a usage error (exit
// 2) and nothing is sent; the engine takes the signal only from the
// agent's own processes, and a refusal (exit 1) says why.
func newSignalCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "signal TYPE [PAYLOAD]",
		Short: "Report to the running Chorus from inside an agent: COMPLETE, BLOCKED, PROGRESS, NEEDS_HELP, RESOLVED, NEEDS_HUMAN",
		Example: `  chorus signal COMPLETE
  chorus signal COMPLETE "nothing to change: the endpoint already validates input"
  chorus signal BLOCKED "the API key is missing"
  chorus signal PROGRESS 40
  chorus signal NEEDS_HELP "which database should this use?"`,
		Args: cobra.MinimumNArgs(1),
		ValidArgsFunction: func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			var ts []string
			for _, t := range signal.Types {
				ts = append(ts, string(t))
			}
			return ts, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runSignal(args, cmd.ErrOrStderr())
		},
	}
}

func runSignal(args []string, stderr io.Writer) error {
	from, sig, err := signal.FromEnv(args, os.Getenv)
	if err != nil {
		return withCode(ExitUsage, err)
	}
	if err := signal.Send(from, sig); err != nil {
		return withCode(ExitFailure, err)
	}
	fmt.Fprintf(stderr, "chorus: %s sent for %s\n", sig, from.TaskID)
	return nil
}

// signalFast runs `chorus signal TYPE [PAYLOAD]` without building the
// command tree or reading build information: agents start it for every
// signal, on the way from COMPLETE to the target branch. Anything else
// (a flag, help, a wrong count) takes the full command line.
func signalFast(args []string, stderr io.Writer) (int, bool) {
	if !signal.CommandArgs(args) {
		return 0, false
	}
	return signal.Command(args[1:], os.Getenv, stderr), true
}

// sendSignal is the scripted agent's `send`: what `chorus signal ARGS`
// does, from the agent's own process.
func sendSignal(args []string) error {
	from, sig, err := signal.FromEnv(args, os.Getenv)
	if err != nil {
		return err
	}
	return signal.Send(from, sig)
}

// newScriptedAgentCmd runs the built-in scripted agent (demo and tests).
func newScriptedAgentCmd() *cobra.Command {
	var script string
	c := &cobra.Command{
		Use:    "scripted-agent --script FILE PROMPT",
		Short:  "Run the built-in scripted agent (used by the demo and the tests)",
		Hidden: true,
		Args:   cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if script == "" {
				return withCode(ExitUsage, errors.New("--script is required"))
			}
			if !filepath.IsAbs(script) {
				// Relative to the repository, whichever worktree the agent
				// runs in; an agent in a clone far from it (a pod) finds
				// the script in its working directory.
				if d := os.Getenv(signal.EnvDir); d != "" {
					if p := filepath.Join(filepath.Dir(d), script); fileExists(p) {
						script = p
					}
				}
			}
			prompt := ""
			if len(args) == 1 {
				prompt = args[0]
			}
			if code := scriptagent.Main(script, prompt, sendSignal, cmd.InOrStdin(), cmd.OutOrStdout()); code != 0 {
				return withCode(code, fmt.Errorf("scripted agent exited with %d", code))
			}
			return nil
		},
	}
	c.Flags().StringVar(&script, "script", "", "script file (relative paths are taken from the repository root)")
	return c
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// newMergeDriverCmd is what git runs for Chorus's registered merge drivers
// (learnings, beads JSONL, lock files).
func newMergeDriverCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "merge-driver KIND BASE OURS THEIRS PATH",
		Short:              "Merge driver git calls for files Chorus knows how to merge",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if code := driver.Main(args); code != 0 {
				return withCode(code, fmt.Errorf("merge driver: conflict in %v", args))
			}
			return nil
		},
	}
}

// newAgentHostBridgeCmd runs beside an agent host in a pod: the engine
// reaches the host's socket through it, over a pod exec's stdin and
// stdout.
func newAgentHostBridgeCmd() *cobra.Command {
	return &cobra.Command{
		Use:                "agent-host-bridge [--stop] SOCKET",
		Short:              "Carry an agent host's socket over stdin and stdout (run by the engine through a pod's exec)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := stdio.Main(cmd.Context(), args, os.Stdin, os.Stdout); err != nil {
				return withCode(ExitUsage, err)
			}
			return nil
		},
	}
}

// newAgentHostCmd is the process the engine runs each agent in when
// agents.host is on: it owns the agent's terminal and outlives the engine.
func newAgentHostCmd(bi BuildInfo) *cobra.Command {
	return &cobra.Command{
		Use:                "agent-host --socket PATH [--meta FILE] [--orphan DURATION] [--info JSON]",
		Short:              "Run one agent in a host process that outlives the engine (started by the engine)",
		Hidden:             true,
		DisableFlagParsing: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			longLived()
			if err := host.Main(args, bi.String()); err != nil {
				return withCode(ExitUsage, err)
			}
			return nil
		},
	}
}
