package app

import (
	"context"
	"errors"
	"fmt"
	"github.com/chorus-dev/chorus/agent/claudetrust"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/taskrules"
	"github.com/chorus-dev/chorus/ui"
)

type initOptions struct {
	yes       bool
	maxAgents int
	prefix    string
	// wizard adjusts the wizard's options; set, it stands in for a
	// terminal (tests give it a simulation screen).
	wizard func(*ui.InitOptions)
}

func newInitCmd(g *globals) *cobra.Command {
	o := &initOptions{}
	c := &cobra.Command{
		Use:   "init",
		Short: "Set up Chorus in this repository (.chorus/, .agent/, .gitignore)",
		Long: `Checks prerequisites, detects the project type and its quality commands,
and creates .chorus/ from the built-in template. Running it again keeps every
file that already exists and says so.

In a terminal, without --yes, a first init is a full-screen wizard: the
prerequisites, the project name and task id prefix, the quality commands
(add, edit, remove, toggle required) and the task-rule limits, then a
confirmation; planning starts right after when there are no tasks yet.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			wizard, err := runInit(cmd.Context(), g, o, cmd.InOrStdin(), cmd.ErrOrStderr())
			if err != nil || !wizard {
				return err
			}
			return afterWizard(cmd, g)
		},
	}
	c.Flags().BoolVarP(&o.yes, "yes", "y", false, "accept every default without asking")
	c.Flags().IntVar(&o.maxAgents, "max-agents", 0, "agents.maxParallel to write (default 3)")
	c.Flags().StringVar(&o.prefix, "prefix", "", "task id prefix, e.g. \"myapp\" or \"myapp-\" (default: from the project name)")
	return c
}

// check is one prerequisite or health finding.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Fatal marks findings that make Chorus unusable, not merely limited.
	Fatal bool `json:"fatal,omitempty"`
}

// agentCLIs are the agent binaries Chorus knows how to drive.
var agentCLIs = []string{"claude", "codex", "opencode"}

// toolChecks reports git's version and which agent CLIs and bd are found.
func toolChecks(ctx context.Context, cfg config.Config) []check {
	var out []check
	v, nums, err := gitx.Version(ctx)
	switch {
	case err != nil:
		out = append(out, check{Name: "git", Detail: err.Error() + " (install git 2.38 or newer)", Fatal: true})
	case !gitx.AtLeast(nums, gitx.MinVersion):
		out = append(out, check{Name: "git", Detail: fmt.Sprintf("git %s is older than 2.38, which merges need (merge-tree --write-tree); upgrade git", v), Fatal: true})
	default:
		out = append(out, check{Name: "git", OK: true, Detail: "git " + v})
	}
	seen := map[string]bool{}
	cmds := append([]string(nil), agentCLIs...)
	for _, n := range cfg.AgentNames() {
		cmds = append(cmds, cfg.Agents.Available[n].Command)
	}
	for _, c := range cmds {
		if seen[c] {
			continue
		}
		seen[c] = true
		if p, err := exec.LookPath(c); err == nil {
			out = append(out, check{Name: "agent " + c, OK: true, Detail: "found at " + p})
		} else {
			out = append(out, check{Name: "agent " + c, Detail: "not found on PATH"})
		}
	}
	if p, err := exec.LookPath("bd"); err == nil {
		out = append(out, check{Name: "bd", OK: true, Detail: "found at " + p})
	} else {
		out = append(out, check{Name: "bd", Detail: "not found; tasks use the built-in store (.beads/issues.jsonl)"})
	}
	return out
}

// runInit sets Chorus up. Without --yes, on a fresh repository, the
// person answers the wizard first; wizard says it ran (and was confirmed).
func runInit(ctx context.Context, g *globals, o *initOptions, stdin io.Reader, stderr io.Writer) (wizard bool, err error) {
	wd, err := g.workDir()
	if err != nil {
		return false, withCode(ExitSetup, err)
	}
	root, err := gitx.MainRoot(ctx, wd)
	if err != nil {
		fmt.Fprintln(stderr, "✗ git repository: not found")
		return false, withCode(ExitSetup, fmt.Errorf("%s is not inside a git repository; run `git init` there first", wd))
	}
	d := chorusdir.At(root)
	if o.maxAgents < 0 || o.maxAgents > 32 {
		return false, withCode(ExitUsage, fmt.Errorf("--max-agents: %d is not valid; allowed: an integer from 1 to 32", o.maxAgents))
	}
	_, statErr := os.Stat(d.Config())
	wizard = !o.yes && errors.Is(statErr, os.ErrNotExist)
	if !o.yes && o.wizard == nil && !isTTY(stdin) {
		return false, withCode(ExitUsage, errors.New("init asks its questions in a terminal, and standard input is not one; run `chorus init --yes` to accept the defaults non-interactively (--prefix and --max-agents set those two)"))
	}

	cfg := config.Default()
	checks := toolChecks(ctx, cfg)
	det := config.Detect(root)
	cfg.Project.Name = det.Name
	cfg.Project.Type = det.Type
	cfg.Project.TaskIDPrefix = config.PrefixFor(det.Name)
	if o.prefix != "" {
		cfg.Project.TaskIDPrefix = strings.TrimSuffix(strings.ToLower(o.prefix), "-")
	}
	if o.maxAgents != 0 {
		cfg.Agents.MaxParallel = o.maxAgents
	}
	cfg.QualityCommands = det.Quality
	// The target is fixed now: a later checkout of another branch must not
	// move where agents' work lands.
	target, err := initialTarget(ctx, root)
	if err != nil {
		return false, withCode(ExitSetup, fmt.Errorf("finding the checked-out branch: %w", err))
	}
	cfg.Merge.TargetBranch = target
	if target != "" {
		checks = append(checks, check{Name: "target branch", OK: true, Detail: target + ": agents' work lands there (merge.targetBranch), whichever branch is checked out later"})
	} else {
		checks = append(checks, check{Name: "target branch", Detail: "HEAD is detached and no default branch was found: the first run records the branch checked out then (or set merge.targetBranch)"})
	}
	if cfg.QualityCommands == nil {
		cfg.QualityCommands = []config.QualityCommand{}
	}
	checks = append(checks, teamChecks(ctx, root, &cfg)...)
	var limits map[string]int
	if wizard {
		if cfg, limits, err = initWizard(ctx, root, cfg, det, checks, o); err != nil {
			return false, err
		}
	} else {
		fmt.Fprintln(stderr, "Checking prerequisites…")
		fmt.Fprintf(stderr, "  ✓ git repository at %s\n", root)
		for _, c := range checks {
			mark := "✓"
			switch {
			case c.Fatal:
				mark = "✗"
			case !c.OK:
				mark = "!" // optional and missing: Chorus works without it
			}
			fmt.Fprintf(stderr, "  %s %s: %s\n", mark, c.Name, c.Detail)
			if c.Fatal {
				return false, withCode(ExitSetup, errors.New(c.Detail))
			}
		}
	}
	if err := cfg.Validate(); err != nil {
		return false, withCode(ExitUsage, err)
	}
	if !wizard {
		fmt.Fprintln(stderr, "Project detection:")
		if det.Evidence != "" {
			fmt.Fprintf(stderr, "  %s found → %s\n", det.Evidence, det.Type)
		} else {
			fmt.Fprintln(stderr, "  no go.mod, package.json, pyproject.toml or Cargo.toml: type unknown")
		}
		if statErr == nil {
			// Set up before: what counts is what the config holds.
			name, prefix := cfg.Project.Name, cfg.Project.TaskIDPrefix
			if m, err := config.ReadJSONObject(d.Config()); err == nil {
				if pj, _ := m["project"].(map[string]any); pj != nil {
					if v, ok := pj["name"].(string); ok {
						name = v
					}
					if v, ok := pj["taskIdPrefix"].(string); ok && v != "" {
						prefix = v
					}
				}
			}
			fmt.Fprintf(stderr, "  name %q, task id prefix %q (from .chorus/config.json)\n", name, prefix)
		} else {
			fmt.Fprintf(stderr, "  name %q, task id prefix %q\n", cfg.Project.Name, cfg.Project.TaskIDPrefix)
		}
	}

	fresh := !d.Exists()
	res, err := config.Install(root, cfg)
	if err != nil {
		return false, withCode(ExitFailure, err)
	}
	// The wizard's limits go into the task-rules.md just written (one the
	// user already had is theirs and kept).
	if limits != nil && contains(res.Created, ".chorus/task-rules.md") {
		b, err := os.ReadFile(d.TaskRules())
		if err == nil {
			var text string
			if text, err = taskrules.SetLimits(string(b), limits); err == nil {
				err = chorusdir.WriteAtomic(d.TaskRules(), []byte(text), 0o644)
			}
		}
		if err != nil {
			return false, withCode(ExitFailure, fmt.Errorf("writing the task-rule limits to %s: %w", d.TaskRules(), err))
		}
	}
	for _, p := range res.Created {
		fmt.Fprintf(stderr, "  created %s\n", p)
	}
	for _, p := range res.Existing {
		fmt.Fprintf(stderr, "  kept    %s (already existed)\n", p)
	}
	if len(res.GitignoreAdded) > 0 {
		fmt.Fprintf(stderr, "  .gitignore: added %s\n", strings.Join(res.GitignoreAdded, " "))
	}
	if fresh {
		_ = d.AppendLog("init", "started", map[string]any{"root": root})
	}
	if contains(res.Created, ".chorus/config.json") {
		var qc []string
		for _, q := range cfg.QualityCommands {
			qc = append(qc, q.Command)
		}
		if qc == nil {
			qc = []string{}
		}
		_ = d.AppendLog("init", "config_saved", map[string]any{"qualityCommands": qc, "maxParallel": cfg.Agents.MaxParallel, "prefix": cfg.Project.TaskIDPrefix})
		if len(cfg.QualityCommands) == 0 {
			fmt.Fprintln(stderr, "Note: no quality commands were detected; add them to .chorus/config.json (qualityCommands) so finished work is checked before it merges.")
		}
	} else {
		fmt.Fprintln(stderr, "Chorus was already set up here; existing files were left as they are.")
		reinitFlags(stderr, d.Config(), o)
		// Except an empty target, which an older init left: fixed now.
		if last := lastSessionTarget(d); last != "" && branchExists(ctx, root, last) {
			target = last // where earlier sessions merged, whatever is checked out now
		}
		if m, err := config.ReadJSONObject(d.Config()); err == nil && target != "" {
			if mg, _ := m["merge"].(map[string]any); mg == nil || mg["targetBranch"] == nil || mg["targetBranch"] == "" {
				if err := config.SetKey(d.Config(), "merge.targetBranch", target); err != nil {
					fmt.Fprintf(stderr, "warning: recording merge.targetBranch %q in %s: %v\n", target, d.Config(), err)
				} else {
					fmt.Fprintf(stderr, "  recorded merge.targetBranch %q in .chorus/config.json (it was empty): agents' work lands there whichever branch is checked out\n", target)
				}
			}
		}
	}
	if contains(res.Created, ".chorus/planning-state.json") {
		unplannedState(ctx, root, cfg, d)
	}
	commitAdvice(ctx, stderr, root, append(append([]string{}, res.Created...), res.Existing...))
	if p, ok := cfg.Profile(cfg.Agents.Default); ok {
		if msg := claudetrust.Problem(cfg.Agents.Default, p, root); msg != "" {
			fmt.Fprintln(stderr, "Note: "+msg+".")
		}
	}
	if !wizard {
		fmt.Fprintln(stderr, "Next: create tasks with `chorus task create \"title\"`, then run `chorus`.")
	}
	return wizard, nil
}

// initWizard asks the person, full screen, to confirm or change what was
// detected; it returns the config to write and task-rules.md's limits.
func initWizard(ctx context.Context, root string, cfg config.Config, det config.Detected, checks []check, o *initOptions) (config.Config, map[string]int, error) {
	setup := ui.InitSetup{Root: root, Evidence: det.Evidence, Type: det.Type, Name: cfg.Project.Name,
		Prefix: cfg.Project.TaskIDPrefix, MaxAgents: cfg.Agents.MaxParallel, Quality: cfg.QualityCommands}
	if setup.Type == "" {
		setup.Type = "unknown"
	}
	for _, c := range checks {
		setup.Checks = append(setup.Checks, ui.InitCheck{Name: c.Name, Detail: c.Detail, OK: c.OK, Fatal: c.Fatal})
	}
	for _, l := range taskrules.Limits(config.TaskRulesTemplate()) {
		setup.Limits = append(setup.Limits, ui.InitLimit{Name: l.Name, Description: l.Description, Value: l.Value})
	}
	apply := func(s ui.InitSetup) config.Config {
		c := cfg
		c.Project.Name, c.Project.TaskIDPrefix, c.Agents.MaxParallel = s.Name, s.Prefix, s.MaxAgents
		c.QualityCommands = append([]config.QualityCommand{}, s.Quality...)
		return c
	}
	opts := ui.InitOptions{Setup: setup, Check: func(s ui.InitSetup) error { return apply(s).Validate() }}
	if o.wizard != nil {
		o.wizard(&opts)
	}
	got, err := ui.RunInit(ctx, opts)
	if errors.Is(err, ui.ErrInitCancelled) {
		for _, c := range checks {
			if c.Fatal {
				return cfg, nil, withCode(ExitSetup, fmt.Errorf("%s; nothing was written", c.Detail))
			}
		}
		return cfg, nil, withCode(ExitFailure, err)
	}
	if err != nil {
		return cfg, nil, withCode(ExitFailure, fmt.Errorf("%w (run `chorus init --yes` where there is no terminal)", err))
	}
	limits := map[string]int{}
	for _, l := range got.Limits {
		limits[l.Name] = l.Value
	}
	return apply(got), limits, nil
}

// afterWizard goes straight into planning when the project has no tasks
// yet, as `chorus` would; otherwise it says what comes next.
func afterWizard(cmd *cobra.Command, g *globals) error {
	ctx, stderr := cmd.Context(), cmd.ErrOrStderr()
	p, err := g.loadProject(ctx, stderr, true)
	if err != nil {
		return err
	}
	s, err := p.store(ctx)
	if err != nil {
		return err
	}
	all, err := s.List(ctx)
	if err != nil {
		return withCode(ExitTasks, err)
	}
	switch {
	case len(all) > 0:
		fmt.Fprintf(stderr, "Next: %d task(s) are already in the tracker; run `chorus` to review them and start.\n", len(all))
		return nil
	case !hasCommit(ctx, p.root):
		fmt.Fprintln(stderr, "Next: make a first commit (agents branch from it), then run `chorus` to plan the work.")
		return nil
	case !isTTY(os.Stdin) || !isTTY(os.Stdout):
		fmt.Fprintln(stderr, "Next: run `chorus` to plan the work.")
		return nil
	}
	fmt.Fprintln(stderr, "No tasks yet: starting planning.")
	return resumePlanScreen(ctx, p, s, stderr, backgroundHandover(p, g, nil, s, stderr))
}

// unplannedState: a project with no tasks is not a ready plan. Its fresh
// planning-state.json says planning (with no goal yet, Unplanned), so
// nothing reads "ready" before a plan exists; with tasks it stays ready.
func unplannedState(ctx context.Context, root string, cfg config.Config, d chorusdir.Dir) {
	s, err := beads.Open(ctx, beads.OpenOptions{RepoDir: root, Prefix: cfg.Project.TaskIDPrefix, Actor: actor()})
	if err != nil {
		return
	}
	if c, ok := s.(interface{ Shutdown() }); ok {
		defer c.Shutdown()
	}
	if all, err := s.List(ctx); err == nil && len(all) == 0 {
		_, _ = planning.Update(d.PlanningState(), func(st *planning.State) { st.Status = planning.StatusPlanning })
	}
}

// hasCommit says the checked-out branch has a commit to branch from.
func hasCommit(ctx context.Context, root string) bool {
	_, err := gitx.Git(ctx, root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	return err == nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// reinitFlags applies what a re-run of init was told explicitly to the
// config that exists: --max-agents is written; --prefix is not (the
// tasks already made carry the old prefix), and the message says so.
func reinitFlags(stderr io.Writer, path string, o *initOptions) {
	m, err := config.ReadJSONObject(path)
	if err != nil {
		fmt.Fprintf(stderr, "warning: reading %s: %v\n", path, err)
		return
	}
	if o.maxAgents != 0 {
		old := -1
		if ag, _ := m["agents"].(map[string]any); ag != nil {
			if v, ok := ag["maxParallel"].(float64); ok {
				old = int(v)
			}
		}
		switch {
		case old == o.maxAgents:
			fmt.Fprintf(stderr, "  agents.maxParallel is already %d\n", old)
		default:
			if err := config.SetKey(path, "agents.maxParallel", o.maxAgents); err != nil {
				fmt.Fprintf(stderr, "warning: setting agents.maxParallel in %s: %v\n", path, err)
			} else if old >= 0 {
				fmt.Fprintf(stderr, "  updated agents.maxParallel %d → %d in .chorus/config.json\n", old, o.maxAgents)
			} else {
				fmt.Fprintf(stderr, "  set agents.maxParallel to %d in .chorus/config.json\n", o.maxAgents)
			}
		}
	}
	if o.prefix != "" {
		want := strings.TrimSuffix(strings.ToLower(o.prefix), "-")
		cur := ""
		if pj, _ := m["project"].(map[string]any); pj != nil {
			cur, _ = pj["taskIdPrefix"].(string)
		}
		if cur != want {
			fmt.Fprintf(stderr, "  kept task id prefix %q, not %q: tasks already made carry it; to change it, edit project.taskIdPrefix in .chorus/config.json\n", cur, want)
		}
	}
}
