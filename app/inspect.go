package app

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/orchestrator"
)

// newTaskDiffCmd prints what a task changed.
func newTaskDiffCmd(g *globals) *cobra.Command {
	var stat bool
	c := &cobra.Command{
		Use:   "diff ID",
		Short: "Show what a task changed: its branch against the target, or its merge once landed",
		Long: `Prints the diff of a task's work: its agent branch (agent/*/ID) against its
merge base with the target branch while the branch holds work the target
lacks; once landed, the merge commit against the target before it. The
merge is found in .chorus/merge-history.jsonl or by the Chorus-Task trailer.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			target := p.cfg.Merge.TargetBranch
			if target == "" {
				if target, err = gitx.CurrentBranch(ctx, p.root); err != nil {
					return withCode(ExitSetup, fmt.Errorf("finding the target branch (set merge.targetBranch or check it out): %w", err))
				}
			}
			d, err := orchestrator.DiffTask(ctx, p.dir, target, args[0], nil, stat)
			if err != nil {
				return withCode(ExitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", d.TaskID, d.Source)
			if strings.TrimSpace(d.Text) == "" {
				fmt.Fprintln(cmd.ErrOrStderr(), "(no changes)")
				return nil
			}
			fmt.Fprintln(cmd.OutOrStdout(), d.Text)
			return nil
		},
	}
	c.Flags().BoolVar(&stat, "stat", false, "only the files changed and line counts")
	return c
}

// newMergeDecisionCmd approves or drops a merge waiting in the queue,
// without the full-screen view.
func newMergeDecisionCmd(g *globals, kind orchestrator.CommandKind) *cobra.Command {
	use, short, done := "approve ID", "Approve a merge waiting for approval, and land it", "approved %s"
	if kind == orchestrator.CmdMergeDrop {
		use, short, done = "drop ID", "Take a task out of the merge queue (its branch stays)", "dropped %s from the merge queue"
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runQueueCommand(cmd, g, orchestrator.Command{Kind: kind, TaskID: args[0]}, fmt.Sprintf(done, args[0]))
		},
	}
}
