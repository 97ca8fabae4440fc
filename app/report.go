package app

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/report"
)

// newReportCmd prints the morning report of the last run (or since TIME).
func newReportCmd(g *globals) *cobra.Command {
	var since string
	var asJSON, asMarkdown bool
	c := &cobra.Command{
		Use:   "report",
		Short: "Summarise the night: what landed, failed (and why), waits for you (with the command to run), pauses, conflicts, retries, cost and time",
		Long: `Reads .chorus/session-log.jsonl, the merge history, state.json and the task
store. Without --since it covers the time since the last report you read
with this command (its end is kept in .chorus/reports/last.json): the
reports autopilot writes to .chorus/reports/ at the end of each run do not
move it, so after a night of several runs (crashes, restarts) this shows
them all. The first line says which period the report covers.`,
		Example: `  chorus report
  chorus report --since 12h --json
  chorus report --since "2026-03-01 08:00"`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if asJSON && asMarkdown {
				return withCode(ExitUsage, fmt.Errorf("choose one of --json and --markdown"))
			}
			t, err := parseSince(since, time.Now())
			if err != nil {
				return withCode(ExitUsage, err)
			}
			ctx := cmd.Context()
			p, err := g.loadProject(ctx, cmd.ErrOrStderr(), true)
			if err != nil {
				return err
			}
			s, err := p.store(ctx)
			if err != nil {
				return err
			}
			if c, ok := s.(interface{ Shutdown() }); ok {
				defer c.Shutdown()
			}
			r, err := buildReport(ctx, p.dir, s, t)
			if err != nil {
				return withCode(ExitFailure, err)
			}
			if asJSON {
				err = writeJSON(cmd.OutOrStdout(), r)
			} else {
				_, err = fmt.Fprint(cmd.OutOrStdout(), r.Markdown())
			}
			if err != nil {
				return withCode(ExitFailure, err)
			}
			// Shown: the next report starts where this one ends.
			if err := report.Record(p.dir, r, true); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: where this report ends was not recorded (%v); the next one covers this period again\n", err)
			}
			return nil
		},
	}
	c.Flags().StringVar(&since, "since", "", `start of the report: a time ("2006-01-02 15:04", RFC 3339) or a duration ago ("12h"); default: the end of the last report read`)
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	c.Flags().BoolVar(&asMarkdown, "markdown", false, "print Markdown (the default)")
	return c
}

// parseSince reads --since: empty, a duration before now, or a time.
func parseSince(s string, now time.Time) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil && d > 0 {
		return now.Add(-d), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.ParseInLocation(layout, s, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("--since %q is neither a time (2006-01-02 15:04, RFC 3339) nor a duration (12h, 30m)", s)
}

func buildReport(ctx context.Context, d chorusdir.Dir, s beads.Store, since time.Time) (report.Report, error) {
	tasks, err := s.List(ctx)
	if err != nil {
		return report.Report{}, fmt.Errorf("listing tasks: %w", err)
	}
	return report.Build(d, tasks, since)
}

// writeRunReport writes the report of the session that just ended to
// .chorus/reports/<time>.md and returns its path.
func writeRunReport(ctx context.Context, d chorusdir.Dir, s beads.Store) (string, error) {
	r, err := buildReport(ctx, d, s, time.Time{})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(d.Path, "reports")
	if err := os.MkdirAll(dir, chorusdir.DirMode); err != nil {
		return "", err
	}
	path := filepath.Join(dir, time.Now().Format("20060102-150405")+".md")
	if err := chorusdir.WriteAtomic(path, []byte(r.Markdown()), chorusdir.FileMode); err != nil {
		return "", err
	}
	// Not shown to anyone yet: the next report covers this period again.
	return path, report.Record(d, r, false)
}
