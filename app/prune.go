package app

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/worktree"
)

func newPruneCmd(g *globals) *cobra.Command {
	var kept bool
	var olderThan string
	c := &cobra.Command{
		Use:   "prune --kept [--older-than D]",
		Short: "Delete saved work under refs/chorus/kept/ (listed by `chorus status`)",
		Long: `Before Chorus removes a worktree or a branch, and when an agent moves its
branch away from commits Chorus had seen, it keeps what would otherwise be
lost under refs/chorus/kept/<task>/. Those refs stay until you prune them.`,
		Example: `  chorus prune --kept                  # delete every kept ref
  chorus prune --kept --older-than 14d # only those older than two weeks`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !kept {
				return withCode(ExitUsage, errors.New("say what to prune: --kept (the saved work `chorus status` lists)"))
			}
			age, err := parseAge(olderThan)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			ctx := cmd.Context()
			root, err := g.repoRoot(ctx)
			if err != nil {
				return err
			}
			gone, err := worktree.PruneKept(ctx, root, age, time.Now())
			for _, k := range gone {
				fmt.Fprintf(cmd.OutOrStdout(), "deleted %s (%s)\n", line(k.Ref), k.Commit)
			}
			if err != nil {
				return withCode(ExitFailure, err)
			}
			if len(gone) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "nothing to prune")
			}
			return nil
		},
	}
	c.Flags().BoolVar(&kept, "kept", false, "delete kept refs (refs/chorus/kept/)")
	c.Flags().StringVar(&olderThan, "older-than", "", "only refs older than this: a Go duration (36h) or days (14d)")
	return c
}

// parseAge reads a duration that may also be given in days ("14d").
func parseAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if n, ok := strings.CutSuffix(s, "d"); ok {
		if d, err := strconv.Atoi(n); err == nil && d >= 0 {
			return time.Duration(d) * 24 * time.Hour, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("--older-than %q: give a duration such as 36h or a number of days such as 14d", s)
	}
	return d, nil
}
