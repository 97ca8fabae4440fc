package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/taskrules"
)

type planOptions struct {
	from     string
	headless bool
	agent    string
}

func newPlanCmd(g *globals) *cobra.Command {
	o := &planOptions{}
	c := &cobra.Command{
		Use:   "plan [GOAL…]",
		Short: "Turn a goal or a spec into a validated task graph with the Plan Agent",
		Long: `Runs the Plan Agent (an agent CLI from agents.available, the default unless
--agent) in the repository root with .chorus/prompts/plan-agent.md, the task
rules and the goal (or the spec given with --from). It creates tasks with
` + "`chorus task create`" + ` and signals COMPLETE. Then the review loop: the tasks are
validated against the rules, the violations handed back to the Plan Agent to
fix, up to planning.maxReviewIterations times. A valid plan leaves
planning-state.json "ready"; run ` + "`chorus`" + ` to choose a mode and start.

Without a goal, a plan that was interrupted is resumed.
With --headless nobody is asked anything: it ends with exit 6 and the list of
violations when some remain.`,
		Example: `  chorus plan "A REST API for a todo list with users"
  chorus plan --from docs/SPEC.md --headless
  chorus plan --agent codex "Add OAuth login"`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runPlan(cmd, g, o, strings.TrimSpace(strings.Join(args, " ")))
		},
	}
	f := c.Flags()
	f.StringVar(&o.from, "from", "", "a spec or PRD file to decompose into tasks")
	f.BoolVar(&o.headless, "headless", false, "no full-screen UI and no questions: plan, review, print the result")
	f.StringVar(&o.agent, "agent", "", "agent profile for the Plan Agent (default: agents.default)")
	return c
}

func runPlan(cmd *cobra.Command, g *globals, o *planOptions, goal string) error {
	ctx := cmd.Context()
	stderr := cmd.ErrOrStderr()
	p, err := g.loadProject(ctx, stderr, true)
	if err != nil {
		return err
	}
	if o.agent != "" {
		if _, ok := p.cfg.Profile(o.agent); !ok {
			return withCode(ExitUsage, fmt.Errorf("--agent: %q is not valid; allowed: %s", o.agent, strings.Join(p.cfg.AgentNames(), ", ")))
		}
	}
	st, err := planning.Load(p.dir.PlanningState())
	if err != nil {
		return withCode(ExitSetup, err)
	}
	req := planning.Request{Goal: goal}
	if o.from != "" {
		wd, _ := g.workDir()
		path := o.from
		if !filepath.IsAbs(path) {
			path = filepath.Join(wd, path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return withCode(ExitUsage, fmt.Errorf("--from: %v; give a readable spec file", err))
		}
		if strings.TrimSpace(string(b)) == "" {
			return withCode(ExitUsage, fmt.Errorf("--from: %s is empty", o.from))
		}
		req.Spec, req.SpecPath = string(b), rel(p.root, path)
	}
	// Resuming: the goal and agent of the interrupted plan.
	resume := goal == "" && o.from == "" && !st.Unplanned() && (st.Status == planning.StatusPlanning || st.Status == planning.StatusReviewing)
	if resume {
		req.Goal = st.PlanSummary.UserGoal
		if f := st.PlanSummary.From; f != "" {
			if b, err := os.ReadFile(filepath.Join(p.root, f)); err == nil {
				req.Spec, req.SpecPath = string(b), f
			}
		}
		if o.agent == "" {
			o.agent = st.Agent
		}
	}
	if o.headless && !resume && req.Goal == "" && req.SpecPath == "" {
		return withCode(ExitUsage, errors.New("nothing to plan: give a goal (`chorus plan \"what to build\"`) or a spec (`--from SPEC.md`)"))
	}
	if !o.headless {
		if !isTTY(os.Stdin) || !isTTY(os.Stdout) {
			return withCode(ExitUsage, errors.New("planning with the full-screen interface needs a terminal; run with --headless"))
		}
	}
	rules, err := p.loadRules()
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
	if !o.headless {
		// Without a goal the planning screen asks for one.
		return runPlanScreen(ctx, p, s, planStart{req: req, prompt: p.planPrompt(rules), agent: o.agent,
			reviewing: resume && st.Status == planning.StatusReviewing}, stderr)
	}
	prompt := p.planPrompt(rules)(req)
	ps, release, err := startPlanSession(ctx, p, s)
	if err != nil {
		return err
	}
	defer release()
	loop := &planning.Loop{
		Engine: ps.engine, Store: s, Rules: p.loadRules, StatePath: p.dir.PlanningState(), SessionLog: p.dir.AppendLog,
		Max: p.cfg.Planning.MaxReviewIterations, Agent: o.agent,
		TurnTimeout: time.Duration(p.cfg.Planning.TimeoutMinutes) * time.Minute,
	}
	loop.Progress = func(pr planning.Progress) {
		fmt.Fprintf(stderr, "%s plan: %s\n", time.Now().Format("15:04:05"), line(pr.Text))
	}
	defer ps.stop()
	var res planning.Result
	err = func() error {
		if !(resume && st.Status == planning.StatusReviewing) {
			if err := loop.Plan(ctx, req, prompt); err != nil {
				return err
			}
		}
		var err error
		res, err = loop.Review(ctx, prompt)
		return err
	}()
	loop.Stop(context.WithoutCancel(ctx))
	if err != nil {
		if ctx.Err() != nil {
			return withCode(ExitInterrupted, errors.New("interrupted; `chorus plan` resumes the plan"))
		}
		return withCode(ExitFailure, fmt.Errorf("%w; `chorus plan` resumes the plan", err))
	}
	return planResult(cmd.OutOrStdout(), stderr, res, loop.Max)
}

func planResult(stdout, stderr io.Writer, res planning.Result, max int) error {
	if !res.Valid {
		printViolations(stdout, res.Violations)
		return withCode(ExitUnfinished, fmt.Errorf("%d rule violation(s) remain after %d review iteration(s); fix them (`chorus task validate` lists them) and run `chorus plan` to review again", len(res.Violations), max))
	}
	fmt.Fprintf(stderr, "The plan is ready: %d task(s), all valid. Run `chorus` to choose Semi-Auto or Autopilot and start.\n", res.Tasks)
	return nil
}

// readOr returns a file's text, or def when it cannot be read.
func readOr(path, def string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return def
	}
	return string(b)
}

// planSession is an engine for planning: the repository lock, no merge
// service, semi-auto (nothing starts by itself).
type planSession struct {
	p      *project
	store  beads.Store
	engine *orchestrator.Engine
	cancel context.CancelFunc
	done   chan error
}

func startPlanSession(ctx context.Context, p *project, s beads.Store) (*planSession, func(), error) {
	lock, err := p.dir.Acquire(strings.Join(os.Args, " "))
	if err != nil {
		return nil, nil, withCode(ExitLocked, err)
	}
	cfg := p.cfg
	cfg.Mode = config.ModeSemiAuto
	target := cfg.Merge.TargetBranch
	if target == "" {
		target, _ = gitx.CurrentBranch(ctx, p.root)
	}
	exe, _ := os.Executable()
	eng, err := orchestrator.New(orchestrator.Options{Dir: p.dir, Config: cfg, Store: s, Target: target, ChorusExe: exe, NoMerge: true})
	if err != nil {
		lock.Release()
		return nil, nil, err
	}
	if err := eng.Recover(ctx); err != nil {
		lock.Release()
		return nil, nil, withCode(ExitSetup, err)
	}
	ps := &planSession{p: p, store: s, engine: eng, done: make(chan error, 1)}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ps.cancel = cancel
	if err := eng.RouteSignals(runCtx); err != nil {
		cancel()
		lock.Release()
		return nil, nil, err
	}
	go func() { ps.done <- eng.Run(runCtx) }()
	return ps, func() { ps.stop(); lock.Release() }, nil
}

// stop ends the engine (the Plan Agent with it) and waits; idempotent.
func (ps *planSession) stop() {
	if ps.cancel != nil {
		ps.cancel()
		<-ps.done
		ps.cancel = nil
	}
}

// planPrompt builds the Plan Agent's first prompt for a request: the
// project's plan-agent instructions, the rules and patterns, the goal.
func (p *project) planPrompt(rules taskrules.Rules) func(planning.Request) string {
	instr := readOr(filepath.Join(p.dir.Prompts(), "plan-agent.md"), config.PromptTemplate("plan-agent.md"))
	patterns := readOr(p.dir.Patterns(), "")
	return func(req planning.Request) string { return planning.Prompt(instr, rules, patterns, req) }
}
