package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/remote"
)

func newTaskCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "task",
		Short: "Create, list and change tasks in the task store (bd or built-in)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	c.AddCommand(newTaskCreateCmd(g), newTaskListCmd(g, false), newTaskListCmd(g, true), newTaskShowCmd(g),
		newTaskSetCmd(g, "close"), newTaskSetCmd(g, "reopen"), newTaskSetCmd(g, "block"), newTaskLabelCmd(g),
		newTaskUpdateCmd(g), newTaskDepCmd(g), newTaskDeleteCmd(g), newTaskValidateCmd(g), newTaskTimelineCmd(g), newTaskDiffCmd(g))
	return c
}

// withStore runs fn with the project's task store, after warning about
// unreadable lines in the task file.
func withStore(cmd *cobra.Command, g *globals, fn func(ctx context.Context, p *project, s beads.Store) error) error {
	return useStore(cmd, g, true, fn)
}

// changeStore is withStore for commands that change tasks: while an
// engine runs, its writes go through the engine (the one writer), which
// stops the agent of a task closed, blocked or deleted under it and shows
// the change on every screen at once.
func changeStore(cmd *cobra.Command, g *globals, fn func(ctx context.Context, p *project, s beads.Store) error) error {
	return useStore(cmd, g, true, func(ctx context.Context, p *project, s beads.Store) error {
		c, err := cliEngine(ctx, p)
		if err != nil {
			return err
		}
		if c == nil {
			return fn(ctx, p, s)
		}
		defer c.Close()
		return fn(ctx, p, remote.Store{Store: s, C: c})
	})
}

// useStore is withStore with the warning left to fn when warn is false.
func useStore(cmd *cobra.Command, g *globals, warn bool, fn func(ctx context.Context, p *project, s beads.Store) error) error {
	ctx := cmd.Context()
	p, err := g.loadProject(ctx, cmd.ErrOrStderr(), false)
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
	if warn {
		warnMalformed(cmd.ErrOrStderr(), s)
	}
	return fn(ctx, p, s)
}

// completeTaskIDs offers task ids for shell completion.
func completeTaskIDs(g *globals) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var ids []string
		_ = withStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
			ts, err := s.List(ctx)
			for _, t := range ts {
				ids = append(ids, t.ID+"\t"+line(t.Title))
			}
			return err
		})
		return ids, cobra.ShellCompDirectiveNoFileComp
	}
}

func newTaskCreateCmd(g *globals) *cobra.Command {
	var opt beads.CreateOptions
	var accs []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "create TITLE",
		Short: "Create a task",
		Example: `  chorus task create "Add login endpoint" -p 1 -l backend --acceptance "POST /login returns a token"
  chorus task create "Write docs" --deps ch-a1b2 --agent codex --json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			title := args[0]
			if strings.TrimSpace(title) == "" {
				return withCode(ExitUsage, fmt.Errorf("the title is empty; give the task a title"))
			}
			if opt.Priority < 0 || opt.Priority > 4 {
				return withCode(ExitUsage, fmt.Errorf("-p: %d is not valid; allowed: 0 (critical) to 4 (backlog)", opt.Priority))
			}
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				if opt.Agent != "" {
					if _, ok := p.cfg.Profile(opt.Agent); !ok {
						return withCode(ExitUsage, fmt.Errorf("--agent: %q is not valid; allowed: %s", opt.Agent, strings.Join(p.cfg.AgentNames(), ", ")))
					}
				}
				opt.Acceptance = strings.Join(accs, "\n")
				opt.PrioritySet = true // -p defaults to 2; an explicit 0 is critical, not unset
				t, err := s.Create(ctx, title, opt)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_created", map[string]any{"taskId": t.ID, "priority": t.Priority})
				warnRules(cmd.ErrOrStderr(), p, t)
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), t)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Created %s: %s\n", t.ID, line(t.Title))
				fmt.Fprintln(cmd.OutOrStdout(), t.ID)
				return nil
			})
		},
	}
	f := c.Flags()
	f.IntVarP(&opt.Priority, "priority", "p", 2, "priority 0 (critical) to 4 (backlog)")
	f.StringSliceVarP(&opt.Labels, "labels", "l", nil, "labels, comma-separated")
	f.StringSliceVar(&opt.Deps, "deps", nil, "ids of tasks this one waits for, comma-separated")
	f.StringVarP(&opt.Description, "description", "d", "", "what to do")
	// Repeated --acceptance flags are one criterion each, all kept.
	f.StringArrayVar(&accs, "acceptance", nil, "an acceptance criterion (repeat the flag for several)")
	f.StringVar(&opt.Model, "model", "", "model for the agent working on this task")
	f.StringVar(&opt.Agent, "agent", "", "agent profile for this task (see agents.available)")
	f.BoolVar(&asJSON, "json", false, "print the created task as JSON")
	return c
}

func newTaskListCmd(g *globals, ready bool) *cobra.Command {
	var asJSON, includeDeferred bool
	use, short := "list", "List every task"
	if ready {
		use, short = "ready", "List tasks ready to work on (open, not waiting on another task, not deferred)"
	}
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			shortLived()
			opt := beads.ReadyOptions{IncludeDeferred: includeDeferred}
			if ready && asJSON {
				return readyJSON(cmd, g, opt)
			}
			return withStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				var ts []beads.Task
				var err error
				if ready {
					ts, err = s.Ready(ctx, opt)
				} else {
					ts, err = s.List(ctx)
				}
				if err != nil {
					return withCode(ExitTasks, err)
				}
				if asJSON {
					b, err := tasksJSON(ts)
					if err != nil {
						return err
					}
					_, err = cmd.OutOrStdout().Write(b)
					return err
				}
				printTasks(cmd.OutOrStdout(), ts)
				if len(ts) == 0 {
					fmt.Fprintln(cmd.ErrOrStderr(), "No tasks.")
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	if ready {
		c.Flags().BoolVar(&includeDeferred, "include-deferred", false, "also list tasks labelled deferred")
	}
	return c
}

// tasksJSON is the --json form of a task list: one compact line, since
// lists can be thousands of tasks and indenting them costs more than
// computing them.
func tasksJSON(ts []beads.Task) ([]byte, error) {
	if ts == nil {
		ts = []beads.Task{}
	}
	b, err := json.Marshal(ts)
	return append(b, '\n'), err
}

// readyJSONFormat tells tasksJSON's output apart from any other rendering
// kept in the ready cache.
const readyJSONFormat = "tasks-json-1"

// readyJSON is `task ready --json`, through the store's ready cache when
// it has one: scripts and agents poll it, and on an unchanged task file
// the answer is then copied from the cache instead of computed from every
// task.
func readyJSON(cmd *cobra.Command, g *globals, opt beads.ReadyOptions) error {
	return useStore(cmd, g, false, func(ctx context.Context, p *project, s beads.Store) error {
		rc, ok := s.(beads.ReadyCache)
		if !ok {
			warnMalformed(cmd.ErrOrStderr(), s)
			ts, err := s.Ready(ctx, opt)
			if err != nil {
				return withCode(ExitTasks, err)
			}
			b, err := tasksJSON(ts)
			if err == nil {
				_, err = cmd.OutOrStdout().Write(b)
			}
			return err
		}
		computed, err := rc.CachedReady(ctx, cmd.OutOrStdout(), opt, readyJSONFormat, tasksJSON)
		// A cached answer was computed from a file without bad lines.
		if computed {
			warnMalformed(cmd.ErrOrStderr(), s)
		}
		if err != nil && computed {
			err = withCode(ExitTasks, err)
		}
		return err
	})
}

func newTaskShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:               "show ID",
		Short:             "Show one task",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				t, err := s.Get(ctx, args[0])
				if err != nil {
					return withCode(ExitFailure, err)
				}
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), t)
				}
				printTask(cmd.OutOrStdout(), t)
				printLedger(cmd.OutOrStdout(), p, t.ID)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newTaskSetCmd(g *globals, verb string) *cobra.Command {
	var reason string
	short := map[string]string{
		"close":  "Mark a task done",
		"reopen": "Open a closed or blocked task again",
		"block":  "Mark a task blocked so no agent picks it",
	}[verb]
	c := &cobra.Command{
		Use:               verb + " ID",
		Short:             short,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				var err error
				switch verb {
				case "close":
					err = s.Close(ctx, id, reason)
				case "reopen":
					err = s.Reopen(ctx, id)
				case "block":
					err = s.Block(ctx, id, reason)
				}
				if err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_"+verb+map[string]string{"close": "d", "reopen": "ed", "block": "ed"}[verb],
					map[string]any{"taskId": id, "reason": reason})
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: %s\n", id, map[string]string{"close": "closed", "reopen": "open", "block": "blocked"}[verb])
				return nil
			})
		},
	}
	if verb != "reopen" {
		c.Flags().StringVarP(&reason, "reason", "r", "", "why (kept in the task's notes)")
	}
	return c
}

func newTaskLabelCmd(g *globals) *cobra.Command {
	c := &cobra.Command{
		Use:   "label add|remove ID LABEL",
		Short: "Add or remove a task label (e.g. deferred)",
		Example: `  chorus task label add ch-a1b2 deferred
  chorus task label remove ch-a1b2 deferred`,
		Args: cobra.ExactArgs(3),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"add", "remove"}, cobra.ShellCompDirectiveNoFileComp
			}
			if len(args) == 1 {
				return completeTaskIDs(g)(cmd, nil, s)
			}
			return []string{beads.LabelDeferred}, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			op, id, label := args[0], args[1], args[2]
			if op != "add" && op != "remove" {
				return withCode(ExitUsage, fmt.Errorf("%q is not valid; allowed: add, remove", op))
			}
			if strings.TrimSpace(label) == "" || strings.ContainsAny(label, ", \t\n") {
				return withCode(ExitUsage, fmt.Errorf("label %q is not valid; allowed: one word without commas or spaces", label))
			}
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				var err error
				if op == "add" {
					err = s.AddLabel(ctx, id, label)
				} else {
					err = s.RemoveLabel(ctx, id, label)
				}
				if err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_label_"+op, map[string]any{"taskId": id, "label": label})
				return nil
			})
		},
	}
	return c
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func printTasks(w io.Writer, ts []beads.Task) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tP\tSTATUS\tTITLE")
	statusOf := map[string]string{}
	for _, t := range ts {
		statusOf[t.ID] = t.Status
	}
	for _, t := range ts {
		status := taskStatus(t)
		if t.Status == beads.StatusOpen {
			// Open but not ready: say what it waits for.
			var open []string
			for _, d := range t.BlockedBy() {
				if st, ok := statusOf[d]; ok && st != beads.StatusClosed {
					open = append(open, d)
				}
			}
			if len(open) > 0 {
				status = "waiting on " + line(strings.Join(open, ","))
			}
		}
		if t.HasLabel(beads.LabelDeferred) {
			status += " (deferred)"
		}
		if t.Assignee != "" && t.Status == beads.StatusInProgress {
			status += " @" + line(t.Assignee)
		}
		fmt.Fprintf(tw, "%s\tP%d\t%s\t%s\n", line(t.ID), t.Priority, status, line(t.Title))
	}
	tw.Flush()
}

// taskStatus is a task's status as Chorus speaks of it: a blocked task
// with the failed label is FAILED (see "When a task fails" in the README).
func taskStatus(t beads.Task) string {
	if t.Status == beads.StatusBlocked && t.HasLabel(beads.LabelFailed) {
		return "failed"
	}
	return t.Status
}

func printTask(w io.Writer, t beads.Task) {
	fmt.Fprintf(w, "%s  %s\n", line(t.ID), line(t.Title))
	fmt.Fprintf(w, "status: %s   priority: P%d", taskStatus(t), t.Priority)
	if t.Assignee != "" {
		fmt.Fprintf(w, "   assignee: %s", line(t.Assignee))
	}
	fmt.Fprintln(w)
	if len(t.Labels) > 0 {
		fmt.Fprintf(w, "labels: %s\n", line(strings.Join(t.Labels, ", ")))
	}
	if b := t.BlockedBy(); len(b) > 0 {
		fmt.Fprintf(w, "waits for: %s\n", line(strings.Join(b, ", ")))
	}
	for _, k := range []string{beads.MetaAgent, beads.MetaModel} {
		if v, ok := t.Metadata[k]; ok {
			fmt.Fprintf(w, "%s: %s\n", k, line(fmt.Sprint(v)))
		}
	}
	fmt.Fprintf(w, "created: %s\n", t.CreatedAt.Local().Format(time.DateTime))
	for _, sec := range []struct{ h, body string }{{"Description", t.Description}, {"Acceptance criteria", t.AcceptanceCriteria}, {"Notes", t.Notes}} {
		if strings.TrimSpace(sec.body) != "" {
			fmt.Fprintf(w, "\n%s:\n%s\n", sec.h, beads.SanitizeText(sec.body))
		}
	}
}

// line makes text safe to print on one terminal line: escape sequences and
// control characters removed, newlines and tabs folded into spaces.
func line(s string) string {
	return strings.Join(strings.Fields(beads.SanitizeText(s)), " ")
}

// warnMalformed tells the user about an unreadable line in the task file:
// reads go on around it, writes wait until it is fixed.
func warnMalformed(w io.Writer, s beads.Store) {
	if l, ok := s.(interface{ LoadError() error }); ok {
		if err := l.LoadError(); err != nil {
			fmt.Fprintln(w, "warning: "+err.Error())
		}
	}
}
