package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/taskrules"
	"github.com/chorus-dev/chorus/worktree"
)

// loadRules reads .chorus/task-rules.md; without one the template's
// defaults apply. A malformed file is a setup error naming the line.
func (p *project) loadRules() (taskrules.Rules, error) {
	path := p.dir.TaskRules()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return taskrules.Default(), nil
	}
	if err != nil {
		return taskrules.Rules{}, withCode(ExitSetup, err)
	}
	r, err := taskrules.Parse(path, string(b))
	if err != nil {
		return taskrules.Rules{}, withCode(ExitSetup, fmt.Errorf("%w (fix that line of the file, or run `chorus init --yes` after moving it away to get the default)", err))
	}
	return r, nil
}

// validateStore checks every task (or only ids, when given; the graph is
// always checked whole).
func validateStore(ctx context.Context, p *project, s beads.Store, ids []string) ([]taskrules.Violation, int, error) {
	rules, err := p.loadRules()
	if err != nil {
		return nil, 0, err
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, 0, withCode(ExitTasks, err)
	}
	vs := taskrules.Validate(all, rules)
	if len(ids) == 0 {
		return vs, countOpen(all), nil
	}
	for _, id := range ids {
		if !slices.ContainsFunc(all, func(t beads.Task) bool { return t.ID == id }) {
			return nil, 0, withCode(ExitFailure, fmt.Errorf("%w: %s", beads.ErrNotFound, id))
		}
	}
	vs = slices.DeleteFunc(vs, func(v taskrules.Violation) bool { return !slices.Contains(ids, v.TaskID) })
	return vs, len(ids), nil
}

func countOpen(ts []beads.Task) int {
	n := 0
	for _, t := range ts {
		if t.Status != beads.StatusClosed {
			n++
		}
	}
	return n
}

func printViolations(w io.Writer, vs []taskrules.Violation) {
	for _, v := range vs {
		fmt.Fprintf(w, "✗ %s [%s] %s\n", line(v.TaskID), v.Rule, line(v.Message))
	}
}

func newTaskValidateCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "validate [ID…]",
		Short: "Check tasks against the built-in rules and .chorus/task-rules.md",
		Long: `Checks every open task (or the ones named) against the built-in rules
(acceptance criteria present and checkable, one job per task, no dependency
cycles) and the limits and optional rules in .chorus/task-rules.md. One line per
violation: task id, rule, message. Exits 1 when there is any.`,
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				vs, n, err := validateStore(ctx, p, s, args)
				if err != nil {
					return err
				}
				if asJSON {
					if vs == nil {
						vs = []taskrules.Violation{}
					}
					if err := writeJSON(cmd.OutOrStdout(), map[string]any{"tasks": n, "violations": vs}); err != nil {
						return err
					}
				} else {
					printViolations(cmd.OutOrStdout(), vs)
				}
				if len(vs) > 0 {
					return withCode(ExitFailure, fmt.Errorf("%d rule violation(s) in %d task(s) checked", len(vs), n))
				}
				if !asJSON {
					fmt.Fprintf(cmd.ErrOrStderr(), "%d task(s) valid.\n", n)
				}
				return nil
			})
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON: {tasks, violations: [{taskId, rule, message}]}")
	return c
}

// warnRules prints t's violations on stderr, without failing the command:
// the planner fixes them in review.
func warnRules(w io.Writer, p *project, t beads.Task) {
	rules, err := p.loadRules()
	if err != nil {
		fmt.Fprintln(w, "warning: "+err.Error())
		return
	}
	for _, v := range taskrules.Check(t, rules) {
		fmt.Fprintf(w, "warning: %s [%s] %s\n", line(v.TaskID), v.Rule, line(v.Message))
	}
}

func newTaskUpdateCmd(g *globals) *cobra.Command {
	var title, desc, acc, model, agentName string
	var accs []string
	var prio int
	var labels, addLabels, removeLabels []string
	var asJSON bool
	c := &cobra.Command{
		Use:   "update ID",
		Short: "Change a task's title, description, acceptance criteria, priority, labels, model or agent",
		Example: `  chorus task update ch-a1b2 --acceptance "go test ./auth passes" -p 1
  chorus task update ch-a1b2 --add-label backend --agent codex`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			f := cmd.Flags()
			var u beads.Update
			set := func(name string, v *string) *string {
				if f.Changed(name) {
					return v
				}
				return nil
			}
			acc = strings.Join(accs, "\n")
			u.Title, u.Description, u.Acceptance = set("title", &title), set("description", &desc), set("acceptance", &acc)
			if u.Title != nil && strings.TrimSpace(title) == "" {
				return withCode(ExitUsage, errors.New("--title is empty; give the task a title"))
			}
			if f.Changed("priority") {
				if prio < 0 || prio > 4 {
					return withCode(ExitUsage, fmt.Errorf("-p: %d is not valid; allowed: 0 (critical) to 4 (backlog)", prio))
				}
				u.Priority = &prio
			}
			if f.Changed("labels") && (len(addLabels) > 0 || len(removeLabels) > 0) {
				return withCode(ExitUsage, errors.New("--labels replaces every label; use it alone, or --add-label/--remove-label"))
			}
			for _, l := range slices.Concat(labels, addLabels, removeLabels) {
				if strings.TrimSpace(l) == "" || strings.ContainsAny(l, " \t\n") {
					return withCode(ExitUsage, fmt.Errorf("label %q is not valid; allowed: one word without commas or spaces", l))
				}
			}
			if f.Changed("model") || f.Changed("agent") {
				u.Metadata = map[string]any{}
				if f.Changed("model") {
					u.Metadata[beads.MetaModel] = model
				}
				if f.Changed("agent") {
					u.Metadata[beads.MetaAgent] = agentName
				}
			}
			changed := false
			for _, n := range []string{"title", "description", "acceptance", "priority", "labels", "add-label", "remove-label", "model", "agent"} {
				changed = changed || f.Changed(n)
			}
			if !changed {
				return withCode(ExitUsage, errors.New("nothing to change; give at least one of --title, -d, --acceptance, -p, --labels, --add-label, --remove-label, --model, --agent"))
			}
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				if f.Changed("agent") && agentName != "" {
					if _, ok := p.cfg.Profile(agentName); !ok {
						return withCode(ExitUsage, fmt.Errorf("--agent: %q is not valid; allowed: %s", agentName, strings.Join(p.cfg.AgentNames(), ", ")))
					}
				}
				t, err := s.Update(ctx, id, u)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				if f.Changed("labels") {
					addLabels = labels
					for _, l := range t.Labels {
						if !slices.Contains(labels, l) {
							removeLabels = append(removeLabels, l)
						}
					}
				}
				for _, l := range addLabels {
					if !t.HasLabel(l) {
						if err := s.AddLabel(ctx, id, l); err != nil {
							return withCode(ExitFailure, err)
						}
					}
				}
				for _, l := range removeLabels {
					if err := s.RemoveLabel(ctx, id, l); err != nil {
						return withCode(ExitFailure, err)
					}
				}
				if t, err = s.Get(ctx, id); err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_updated", map[string]any{"taskId": id})
				warnRules(cmd.ErrOrStderr(), p, t)
				if asJSON {
					return writeJSON(cmd.OutOrStdout(), t)
				}
				fmt.Fprintf(cmd.ErrOrStderr(), "Updated %s: %s\n", id, line(t.Title))
				return nil
			})
		},
	}
	fl := c.Flags()
	fl.StringVar(&title, "title", "", "new title")
	fl.StringVarP(&desc, "description", "d", "", "new description")
	fl.StringArrayVar(&accs, "acceptance", nil, "new acceptance criteria, replacing the old (one per line, or repeat the flag)")
	fl.IntVarP(&prio, "priority", "p", 2, "priority 0 (critical) to 4 (backlog)")
	fl.StringSliceVarP(&labels, "labels", "l", nil, "replace the labels, comma-separated")
	fl.StringSliceVar(&addLabels, "add-label", nil, "add labels, comma-separated")
	fl.StringSliceVar(&removeLabels, "remove-label", nil, "remove labels, comma-separated")
	fl.StringVar(&model, "model", "", "model for the agent working on this task (\"\" for the default)")
	fl.StringVar(&agentName, "agent", "", "agent profile for this task (\"\" for the default)")
	fl.BoolVar(&asJSON, "json", false, "print the updated task as JSON")
	return c
}

func newTaskDepCmd(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:   "dep add|remove ID DEP",
		Short: "Make task ID wait for task DEP, or stop waiting",
		Long: `add: ID cannot start before DEP is closed. A dependency that would close a
cycle is refused and the cycle is named. remove: drop that dependency.`,
		Example: `  chorus task dep add ch-b2 ch-a1
  chorus task dep remove ch-b2 ch-a1`,
		Args: cobra.ExactArgs(3),
		ValidArgsFunction: func(cmd *cobra.Command, args []string, s string) ([]string, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return []string{"add", "remove"}, cobra.ShellCompDirectiveNoFileComp
			}
			return completeTaskIDs(g)(cmd, nil, s)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			op, id, dep := args[0], args[1], args[2]
			if op != "add" && op != "remove" {
				return withCode(ExitUsage, fmt.Errorf("%q is not valid; allowed: add, remove", op))
			}
			if id == dep {
				return withCode(ExitUsage, fmt.Errorf("%s cannot wait for itself", id))
			}
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				var err error
				if op == "add" {
					err = s.AddDependency(ctx, id, dep)
				} else {
					err = s.RemoveDependency(ctx, id, dep)
				}
				if errors.Is(err, beads.ErrCycle) {
					return withCode(ExitFailure, fmt.Errorf("refused: %w; remove one of those dependencies first", err))
				}
				if err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_dep_"+op, map[string]any{"taskId": id, "dependsOn": dep})
				if op == "add" {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s now waits for %s\n", id, dep)
				} else {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s no longer waits for %s\n", id, dep)
				}
				return nil
			})
		},
	}
}

func newTaskDeleteCmd(g *globals) *cobra.Command {
	var force bool
	c := &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a task and every dependency on it",
		Long: `Removes the task from the store. A task with unmerged work on an agent branch
(agent/*/ID) is refused unless --force; with --force each such branch's tip is
first kept under refs/chorus/kept/ID/<time>-tip, and the branch is deleted when no
worktree has it checked out.`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: completeTaskIDs(g),
		RunE: func(cmd *cobra.Command, args []string) error {
			id := args[0]
			return changeStore(cmd, g, func(ctx context.Context, p *project, s beads.Store) error {
				if _, err := s.Get(ctx, id); err != nil {
					return withCode(ExitFailure, err)
				}
				work, err := unmergedBranches(ctx, p, id)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				if len(work) > 0 && !force {
					return withCode(ExitFailure, fmt.Errorf("%s has unmerged work on %s; merge or drop it first, or delete with --force (the branch tips are kept under refs/chorus/kept/%s/)",
						id, strings.Join(work, ", "), worktree.Slug(id)))
				}
				wt := &worktree.Manager{RepoDir: p.root}
				for _, b := range work {
					// The owner of branches keeps the tip under the one
					// naming (<task>/<time>-tip) first, so status dates it
					// and prune --older-than can prune it.
					kept, err := wt.DeleteBranch(ctx, id, b, "task delete --force")
					if len(kept) == 0 {
						if err == nil {
							err = fmt.Errorf("keeping %s: it has no tip to keep; nothing deleted", b)
						}
						return withCode(ExitFailure, err)
					}
					fmt.Fprintf(cmd.ErrOrStderr(), "kept %s as %s\n", b, kept[0].Ref)
					if err != nil {
						fmt.Fprintf(cmd.ErrOrStderr(), "%s\n", oneLine(err))
					}
				}
				if err := s.Delete(ctx, id); err != nil {
					return withCode(ExitFailure, err)
				}
				p.logEvent(cmd.ErrOrStderr(), "cli", "task_deleted", map[string]any{"taskId": id, "keptBranches": work})
				fmt.Fprintf(cmd.ErrOrStderr(), "%s: deleted\n", id)
				return nil
			})
		},
	}
	c.Flags().BoolVar(&force, "force", false, "delete even with unmerged work on an agent branch (its tip is kept)")
	return c
}

// unmergedBranches lists agent/*/ID branches whose tip the checked-out
// branch (the merge target) does not contain.
func unmergedBranches(ctx context.Context, p *project, id string) ([]string, error) {
	out, err := gitx.Git(ctx, p.root, "for-each-ref", "--format=%(refname:short)", "refs/heads/"+worktree.BranchPrefix)
	if err != nil {
		return nil, err
	}
	target := "HEAD"
	if p.cfg.Merge.TargetBranch != "" {
		target = "refs/heads/" + p.cfg.Merge.TargetBranch
	}
	var work []string
	for _, b := range strings.Fields(out) {
		if _, task, ok := worktree.ParseBranch(b); !ok || task != worktree.Slug(id) {
			continue
		}
		// merge-base --is-ancestor exits 1 for "no": an error here means unmerged
		// (or an unborn target, where every commit is unmerged work).
		if _, err := gitx.Git(ctx, p.root, "merge-base", "--is-ancestor", "refs/heads/"+b, target); err != nil {
			work = append(work, b)
		}
	}
	return work, nil
}

// checkTaskRules is doctor's look at the plan: task-rules.md parses,
// no dependency cycle (a failure: those tasks can never start), and rule
// violations (a warning: agents can still work on them).
func checkTaskRules(r *doctorReport, root string, ts []beads.Task) {
	p := &project{root: root, dir: chorusdir.At(root)}
	rules, err := p.loadRules()
	if err != nil {
		r.add("task rules", levelFail, "%s", oneLine(err))
		return
	}
	var cycles, other []taskrules.Violation
	for _, v := range taskrules.Validate(ts, rules) {
		if v.Rule == taskrules.RuleAcyclic {
			cycles = append(cycles, v)
		} else {
			other = append(other, v)
		}
	}
	for _, v := range cycles {
		r.add("task dependencies", levelFail, "%s; `chorus task dep remove` one of them", line(v.Message))
	}
	switch {
	case len(other) > 0:
		r.add("task rules", levelWarn, "%d violation(s), first: %s [%s] %s; see `chorus task validate`", len(other), line(other[0].TaskID), other[0].Rule, line(other[0].Message))
	case len(cycles) == 0:
		r.add("task rules", levelOK, "%d open task(s) valid", countOpen(ts))
	}
}
