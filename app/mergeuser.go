package app

import (
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
target branch. Your branch is kept. Runs until the merge lands or needs you;
when another Chorus is running in this repository, it says so instead.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			out := cmd.ErrOrStderr()
			p, err := g.loadProject(ctx, out, true)
			if err != nil {
				return err
			}
			s, err := p.store(ctx)
			if err != nil {
				return err
			}
			p.cfg.Mode = config.ModeSemiAuto
			return runHeadlessWith(ctx, p, s, &runOptions{headless: true}, out, func(eng *orchestrator.Engine) error {
				if err := eng.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdMergeUser, Text: args[0]}); err != nil {
					return withCode(ExitFailure, err)
				}
				fmt.Fprintf(out, "queued %s for merging\n", args[0])
				return nil
			})
		},
	}
}
