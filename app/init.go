package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

type initOptions struct {
	yes       bool
	maxAgents int
	prefix    string
}

func newInitCmd(g *globals) *cobra.Command {
	o := &initOptions{}
	c := &cobra.Command{
		Use:   "init",
		Short: "Set up Chorus in this repository (.chorus/, .agent/, .gitignore)",
		Long: `Checks prerequisites, detects the project type and its quality commands,
and creates .chorus/ from the built-in template. Running it again keeps every
file that already exists and says so.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runInit(cmd.Context(), g, o, cmd.InOrStdin(), cmd.ErrOrStderr())
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

func runInit(ctx context.Context, g *globals, o *initOptions, stdin io.Reader, stderr io.Writer) error {
	wd, err := g.workDir()
	if err != nil {
		return withCode(ExitSetup, err)
	}
	root, err := gitx.MainRoot(ctx, wd)
	if err != nil {
		fmt.Fprintln(stderr, "✗ git repository: not found")
		return withCode(ExitSetup, fmt.Errorf("%s is not inside a git repository; run `git init` there first", wd))
	}
	d := chorusdir.At(root)
	if !o.yes {
		f, isFile := stdin.(*os.File)
		if !isFile || !term.IsTerminal(int(f.Fd())) {
			return withCode(ExitUsage, errors.New("init needs confirmation; run `chorus init --yes` to accept the defaults non-interactively"))
		}
		fmt.Fprintf(stderr, "Set up Chorus in %s? [Y/n] ", root)
		ans, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(ans)); a != "" && a != "y" && a != "yes" {
			return withCode(ExitFailure, errors.New("init cancelled"))
		}
	}
	if o.maxAgents < 0 || o.maxAgents > 32 {
		return withCode(ExitUsage, fmt.Errorf("--max-agents: %d is not valid; allowed: an integer from 1 to 32", o.maxAgents))
	}

	fmt.Fprintln(stderr, "Checking prerequisites…")
	fmt.Fprintf(stderr, "  ✓ git repository at %s\n", root)
	cfg := config.Default()
	for _, c := range toolChecks(ctx, cfg) {
		mark := "✓"
		switch {
		case c.Fatal:
			mark = "✗"
		case !c.OK:
			mark = "!" // optional and missing: Chorus works without it
		}
		fmt.Fprintf(stderr, "  %s %s: %s\n", mark, c.Name, c.Detail)
		if c.Fatal {
			return withCode(ExitSetup, errors.New(c.Detail))
		}
	}

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
	if cfg.QualityCommands == nil {
		cfg.QualityCommands = []config.QualityCommand{}
	}
	if err := cfg.Validate(); err != nil {
		return withCode(ExitUsage, err)
	}
	fmt.Fprintln(stderr, "Project detection:")
	if det.Evidence != "" {
		fmt.Fprintf(stderr, "  %s found → %s\n", det.Evidence, det.Type)
	} else {
		fmt.Fprintln(stderr, "  no go.mod, package.json, pyproject.toml or Cargo.toml: type unknown")
	}
	fmt.Fprintf(stderr, "  name %q, task id prefix %q\n", cfg.Project.Name, cfg.Project.TaskIDPrefix)

	fresh := !d.Exists()
	res, err := config.Install(root, cfg)
	if err != nil {
		return withCode(ExitFailure, err)
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
	}
	fmt.Fprintln(stderr, "Next: create tasks with `chorus task create \"title\"`, then run `chorus`.")
	return nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
