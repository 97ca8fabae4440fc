// Package app wires Chorus together: the command line, mode routing, and the
// order in which the engine and a front end start and stop. It holds no
// business logic of its own.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// BuildInfo is stamped into the binary at build time with -ldflags; what
// is left empty comes from the go command's build information (complete).
type BuildInfo struct {
	Version, Commit, Date string
	committed             bool // Date is the commit's time, not the build's
}

// Exit codes. Documented in the README; scripts may rely on them.
const (
	ExitOK          = 0 // success
	ExitFailure     = 1 // the operation failed, or doctor found a problem
	ExitUsage       = 2 // bad flags or arguments
	ExitSetup       = 3 // not a git repository, Chorus not initialised, or config invalid
	ExitTasks       = 4 // the task store is unavailable (bd missing, store unreadable)
	ExitLocked      = 5 // another Chorus holds this repository
	ExitUnfinished  = 6 // a run ended with tasks failed, blocked or waiting for a human
	ExitInterrupted = 130
)

// exitError carries an exit code with its message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func withCode(code int, err error) error {
	if err == nil {
		return nil
	}
	var ee *exitError
	if errors.As(err, &ee) {
		return err
	}
	return &exitError{code: code, err: err}
}

// Main runs the command line and returns the process exit code.
func Main(args []string, bi BuildInfo) int {
	inBinary = true
	if !keepsMemProfile(os.Getenv) {
		runtime.MemProfileRate = 0
	}
	if code, ok := signalFast(args, os.Stderr); ok {
		return code
	}
	return run(args, bi.complete(debug.ReadBuildInfo()), os.Stdin, os.Stdout, os.Stderr)
}

// lastResortExit ends the process when shutdown overran its grace period.
var lastResortExit = os.Exit

func run(args []string, bi BuildInfo, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := watchStopSignals(stderr, lastResortExit)
	defer stop()
	root := newRootCmd(bi, args)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, "chorus: "+err.Error())
	var ee *exitError
	if errors.As(err, &ee) {
		return ee.code
	}
	if ctx.Err() != nil {
		return ExitInterrupted
	}
	// Errors cobra raises itself (unknown flag, wrong arg count) are usage errors.
	return ExitUsage
}

// globals are the persistent flags every command sees.
type globals struct {
	configPath string
	dir        string
	version    string // what --version prints, for doctor's look at the agent image
}

// newRootCmd is the command tree for args: only the subcommand they name
// when they name one (cmdtree.go), else every one.
func newRootCmd(bi BuildInfo, args []string) *cobra.Command {
	g := &globals{version: "chorus " + bi.String()}
	ro := &runOptions{global: g}
	root := &cobra.Command{
		Use:   "chorus",
		Short: "Run several AI coding agents in parallel on one git repository",
		Long: `Chorus takes tasks from Beads, gives each agent its own git worktree and
branch, watches every agent live, runs the project's quality commands when an
agent says it is done, and merges finished branches into the target branch.

Without a subcommand, chorus picks the mode from the project's state: no
.chorus/ directory → init; otherwise planning or implementation, by the
planning state and the ready tasks.`,
		Version:       bi.String(),
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runRoot(cmd, g, ro)
		},
	}
	root.SetVersionTemplate("chorus {{.Version}}\n")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return withCode(ExitUsage, fmt.Errorf("%v (see `%s --help`)", err, c.CommandPath()))
	})
	pf := root.PersistentFlags()
	pf.StringVar(&g.configPath, "config", "", "path to config.json (default: .chorus/config.json in the repository)")
	pf.StringVarP(&g.dir, "directory", "C", "", "run as if chorus was started in this directory")
	f := root.Flags()
	f.BoolVar(&ro.autopilot, "autopilot", false, "start in autopilot: work through the ready queue alone")
	f.StringVar(&ro.mode, "mode", "", "operating mode: semi-auto or autopilot (default: from config)")
	f.IntVar(&ro.maxAgents, "max-agents", 0, "run at most N agents at once (default: agents.maxParallel)")
	f.BoolVar(&ro.headless, "headless", false, "no full-screen UI: print one line per event (for cron, CI and ssh)")
	f.StringSliceVar(&ro.tasks, "task", nil, "with --headless in semi-auto: the task ids to run (repeatable)")
	f.BoolVar(&ro.json, "json", false, "with --headless: one JSON object per event on stdout (docs/events.md)")
	_ = root.RegisterFlagCompletionFunc("mode", cobra.FixedCompletions(config.Modes, cobra.ShellCompDirectiveNoFileComp))

	addSubcommands(root, subcommands(g, bi), args)
	return root
}

// subcommands is every subcommand under the name it answers to, in the
// order help lists them; each is built only when added.
func subcommands(g *globals, bi BuildInfo) []subcommand {
	return []subcommand{
		{"init", func() *cobra.Command { return newInitCmd(g) }},
		{"task", func() *cobra.Command { return newTaskCmd(g) }},
		{"status", func() *cobra.Command { return newStatusCmd(g, bi) }},
		{"doctor", func() *cobra.Command { return newDoctorCmd(g) }},
		{"signal", newSignalCmd},
		{"note", newNoteCmd},
		{"ask", newAskCmd},
		{"answer", func() *cobra.Command { return newAnswerCmd(g) }},
		{"report", func() *cobra.Command { return newReportCmd(g) }},
		{"scripted-agent", newScriptedAgentCmd},
		{"merge-driver", newMergeDriverCmd},
		{"merge-user", func() *cobra.Command { return newMergeUserCmd(g) }},
		{"merge", func() *cobra.Command { return newMergeCmd(g) }},
		{"demo", func() *cobra.Command { return newDemoCmd(g) }},
		{"prune", func() *cobra.Command { return newPruneCmd(g) }},
		{"plan", func() *cobra.Command { return newPlanCmd(g) }},
		{"patterns", func() *cobra.Command { return newPatternsCmd(g) }},
		{"replay", newReplayCmd},
		{"agent-host", func() *cobra.Command { return newAgentHostCmd(bi) }},
		{"agent-host-bridge", newAgentHostBridgeCmd},
		{"engine", func() *cobra.Command { return newEngineCmd(g) }},
		{"attach", func() *cobra.Command { return newAttachCmd(g) }},
		{"stop", func() *cobra.Command { return newStopCmd(g) }},
		{"events", func() *cobra.Command { return newEventsCmd(g) }},
		{"mode", func() *cobra.Command { return newModeCmd(g) }},
		{"pause", func() *cobra.Command { return newPauseCmd(g, false) }},
		{"resume", func() *cobra.Command { return newPauseCmd(g, true) }},
	}
}

// project is a resolved repository with its Chorus configuration.
type project struct {
	root   string // main worktree
	dir    chorusdir.Dir
	cfg    config.Config
	loaded *config.Loaded // nil when there is no config file yet
}

// workDir is where the command acts: -C or the current directory.
func (g *globals) workDir() (string, error) {
	if g.dir != "" {
		return filepath.Abs(g.dir)
	}
	return os.Getwd()
}

// repoRoot finds the main worktree of the repository around the work dir.
func (g *globals) repoRoot(ctx context.Context) (string, error) {
	wd, err := g.workDir()
	if err != nil {
		return "", withCode(ExitSetup, err)
	}
	if err := gitx.LookGit(); err != nil {
		return "", withCode(ExitSetup, err)
	}
	if st, err := os.Stat(wd); err != nil || !st.IsDir() {
		return "", withCode(ExitSetup, fmt.Errorf("%s does not exist or is not a directory (deleted, or a typo in -C?)", wd))
	}
	root, err := gitx.MainRoot(ctx, wd)
	if err != nil {
		return "", withCode(ExitSetup, err)
	}
	return root, nil
}

// loadProject resolves the repository and loads its config. When the
// project has no config yet and required is false, defaults are used.
func (g *globals) loadProject(ctx context.Context, stderr io.Writer, required bool) (*project, error) {
	p, err := g.findProject(ctx)
	if err != nil {
		return nil, err
	}
	if err := g.loadConfig(p, stderr, required); err != nil {
		return nil, err
	}
	return p, nil
}

// findProject resolves the repository, its config not read yet
// (loadConfig).
func (g *globals) findProject(ctx context.Context) (*project, error) {
	root, err := g.repoRoot(ctx)
	if err != nil {
		return nil, err
	}
	return &project{root: root, dir: chorusdir.At(root)}, nil
}

// loadConfig reads the config of a project findProject resolved.
func (g *globals) loadConfig(p *project, stderr io.Writer, required bool) error {
	root := p.root
	path := g.configPath
	if path == "" {
		path = p.dir.Config()
	}
	l, err := config.Load(path)
	switch {
	case errors.Is(err, config.ErrNotFound) && !required && g.configPath == "":
		p.cfg = config.Default()
		p.cfg.Project.Name = filepath.Base(root)
		p.cfg.Project.TaskIDPrefix = config.PrefixFor(p.cfg.Project.Name)
		return nil
	case err != nil:
		return withCode(ExitSetup, err)
	}
	for _, w := range l.Warnings {
		fmt.Fprintln(stderr, "warning: "+w)
	}
	p.cfg, p.loaded = l.Config, l
	setShutdown(time.Duration(p.cfg.Completion.ShutdownGraceSeconds)*time.Second, p.dir.Path)
	return nil
}

// store opens the task store for the project.
func (p *project) store(ctx context.Context) (beads.Store, error) {
	s, err := beads.Open(ctx, beads.OpenOptions{RepoDir: p.root, Prefix: p.cfg.Project.TaskIDPrefix, Actor: actor()})
	if err != nil {
		return nil, withCode(ExitTasks, err)
	}
	return s, nil
}

// actor is the identity task writes are recorded under: the agent's own
// BEADS_ACTOR inside an agent, otherwise the user.
func actor() string {
	if a := os.Getenv("BEADS_ACTOR"); a != "" {
		return a
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "chorus"
}

// logEvent appends to the session log; a failure to log is reported, never fatal.
func (p *project) logEvent(stderr io.Writer, mode, event string, details map[string]any) {
	if !p.dir.Exists() {
		return
	}
	if err := p.dir.AppendLog(mode, event, details); err != nil {
		fmt.Fprintln(stderr, "warning: "+err.Error())
	}
}
