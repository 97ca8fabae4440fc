package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
)

// newNoteCmd is what agents run to write a discovery, a decision or a
// blocker into their task's ledger. It travels like `chorus signal`.
func newNoteCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "note TEXT",
		Short: "Record a discovery, decision or blocker in the task's ledger, from inside an agent",
		Example: `  chorus note "the config loader caches files: tests must reset it"
  chorus note decided to keep the old API and add a wrapper`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.TrimSpace(strings.Join(args, " "))
			if text == "" {
				return withCode(ExitUsage, fmt.Errorf("usage: chorus note TEXT (the note is empty)"))
			}
			from, sig, err := signal.FromEnv([]string{string(signal.Note), text}, os.Getenv)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			if err := signal.Send(from, sig); err != nil {
				return withCode(ExitFailure, err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "chorus: note sent for %s\n", from.TaskID)
			return nil
		},
	}
}

// printLedger names a task's ledger for `chorus task show`.
func printLedger(w io.Writer, p *project, id string) {
	path := orchestrator.LedgerPath(p.dir.Path, id)
	rel, err := filepath.Rel(p.dir.Root, path)
	if err != nil {
		rel = path
	}
	its, err := orchestrator.ReadLedger(path)
	switch {
	case err != nil:
		fmt.Fprintf(w, "ledger: %s (unreadable: %v)\n", rel, err)
	case its == nil:
		if _, err := os.Stat(path); err != nil {
			fmt.Fprintf(w, "ledger: %s (none yet: no agent has worked on it)\n", rel)
			return
		}
		fmt.Fprintf(w, "ledger: %s\n", rel)
	default:
		fmt.Fprintf(w, "ledger: %s (%d iterations)\n", rel, len(its))
	}
}

func newTaskTimelineCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "timeline ID",
		Short:             "Show the states a task went through, with time and tokens in each",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				if _, err := s.Get(ctx, args[0]); err != nil {
					return withCode(ExitFailure, err)
				}
				stages, err := orchestrator.Timeline(p.dir, args[0])
				if err != nil {
					return withCode(ExitFailure, fmt.Errorf("reading the timeline: %w", err))
				}
				if asJSON {
					if stages == nil {
						stages = []orchestrator.Stage{}
					}
					return writeJSON(cmd.OutOrStdout(), stages)
				}
				w := cmd.OutOrStdout()
				if len(stages) == 0 {
					fmt.Fprintf(w, "%s has no recorded states yet (no agent has worked on it in this repository)\n", line(args[0]))
					return nil
				}
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
				fmt.Fprintln(tw, "AT\tSTATE\tTIME\tTOKENS\tDETAIL")
				for _, st := range stages {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\n", st.At.Local().Format(time.DateTime), st.State,
						time.Duration(st.Seconds)*time.Second, st.Tokens, line(st.Detail))
				}
				return tw.Flush()
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
