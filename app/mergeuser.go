package app

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// newMergeUserCmd queues a user's own branch for the merge service and runs
// it: the same quality gate and landing as agents' work.
func newMergeUserCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "merge-user BRANCH",
		Short: "Merge one of your own branches through Chorus's merge queue (quality commands first)",
		Long: `Queues BRANCH like a finished agent branch: merged without touching your
working tree, checked with the required quality commands, then landed on the
target branch. Your branch is kept. With no Chorus running, runs until the
merge lands or needs you; while one runs, queues the branch in it and
returns (its merge worker lands it; ` + "`chorus events`" + ` follows it).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQueueCommand(cmd, g, orchestrator.Command{Kind: orchestrator.CmdMergeUser, Text: args[0]}, "queued "+args[0]+" for merging")
		},
	}
}

// newMergeCmd groups commands about the merge queue.
func newMergeCmd(g *globals) *cobra.Command {
	c := &cobra.Command{Use: "merge", Short: "Act on Chorus's merge queue"}
	c.AddCommand(newAcceptTargetCmd(g), newMergeDecisionCmd(g, orchestrator.CmdApprove), newMergeDecisionCmd(g, orchestrator.CmdMergeDrop))
	return c
}

// newAcceptTargetCmd releases a merge queue held because the target branch
// moved outside Chorus, then runs the queue until it is idle.
func newAcceptTargetCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "accept-target [TIP]",
		Short: "Accept the target branch's (merge.targetBranch) new tip after it moved outside Chorus, and resume merging",
		Long: `When something other than Chorus moves the target branch, merge.targetBranch
in .chorus/config.json (an agent running
git update-ref, a push, a reset), the merge queue holds: nothing lands on a
tip no quality command verified. Look at the new tip; if it is good, this
command makes it the baseline and lands what is queued. TIP, when given
(the new tip as shown in the message), must still be the target's tip.
While Chorus runs, the running engine accepts it (or press A in the TUI's
merge view).`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			tip := ""
			if len(args) == 1 {
				tip = args[0]
			}
			err := runQueueCommandTo(cmd, g, orchestrator.Command{Kind: orchestrator.CmdMergeAcceptTarget, Text: tip}, func(target string) string {
				return "target accepted: the tip of branch " + target + " (merge.targetBranch) is the new baseline; merging into " + target + " resumes"
			})
			var ee *exitError
			if errors.As(err, &ee) && ee.code == ExitLocked {
				return withCode(ExitLocked, fmt.Errorf("%w\nIn the running Chorus, open the merge view (M) and press A to accept the target", err))
			}
			return err
		},
	}
}

// runQueueCommand starts a semi-auto headless session, gives its engine c,
// says done, and runs until the merge queue is idle or needs a person.
func runQueueCommand(cmd *cobra.Command, g *globals, c orchestrator.Command, done string) error {
	return runQueueCommandTo(cmd, g, c, func(string) string { return done })
}

// runQueueCommandTo is runQueueCommand whose message names the target.
func runQueueCommandTo(cmd *cobra.Command, g *globals, c orchestrator.Command, done func(target string) string) error {
	ctx := cmd.Context()
	out := cmd.ErrOrStderr()
	p, err := g.loadProject(ctx, out, true)
	if err != nil {
		return err
	}
	// An engine runs: it acts on the command live, and its merge worker
	// does the rest.
	if ec, err := cliEngine(ctx, p); err != nil {
		return err
	} else if ec != nil {
		defer ec.Close()
		if err := ec.Do(ctx, c); err != nil {
			return withCode(ExitFailure, err)
		}
		fmt.Fprintf(out, "%s (by the running engine, pid %d; `chorus events` follows it)\n", done(p.cfg.Merge.TargetBranch), ec.PID())
		return nil
	}
	s, err := p.store(ctx)
	if err != nil {
		return err
	}
	p.cfg.Mode = config.ModeSemiAuto
	return runHeadlessWith(ctx, p, s, &runOptions{headless: true}, out, func(eng *orchestrator.Engine) error {
		if err := eng.Do(ctx, c); err != nil {
			return withCode(ExitFailure, err)
		}
		fmt.Fprintln(out, done(p.cfg.Merge.TargetBranch))
		return nil
	})
}
