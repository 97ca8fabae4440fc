package planning

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/taskrules"
)

// ChunkLines is how many lines of a spec the Plan Agent takes at a time;
// a longer spec is split along its headings (Chunks) and planned one part
// per turn.
const ChunkLines = 500

// Request is what to plan.
type Request struct {
	Goal     string // the user's words
	SpecPath string // --from: a spec to decompose (relative to the repository)
	Spec     string // its text
}

// Prompt is the Plan Agent's first prompt: its instructions (from
// .chorus/prompts/plan-agent.md), the rules in force, the project's
// patterns, and the goal or the spec.
func Prompt(instructions string, rules taskrules.Rules, patterns string, req Request) string {
	var b strings.Builder
	b.WriteString(strings.TrimSpace(instructions))
	b.WriteString("\n\n## Task rules (checked after you finish)\n")
	b.WriteString(rules.Summary())
	if p := strings.TrimSpace(patterns); p != "" {
		b.WriteString("\n## Project patterns\n")
		b.WriteString(p)
		b.WriteString("\n")
	}
	b.WriteString("\n## What to plan\n")
	if req.Goal != "" {
		b.WriteString(strings.TrimSpace(req.Goal))
		b.WriteString("\n")
	}
	if req.SpecPath != "" {
		lines := specLines(req.Spec)
		if lines <= ChunkLines {
			fmt.Fprintf(&b, "\nDecompose this spec (%s) into tasks:\n\n<spec>\n%s\n</spec>\n", req.SpecPath, strings.TrimSpace(req.Spec))
		} else {
			// Long: Chorus hands it over in parts along its headings
			// (Loop.Plan sends the later ones).
			chunkIntro(&b, req.SpecPath, lines, Chunks(req.Spec, ChunkLines)[0])
		}
	}
	b.WriteString(`
## When you are done
Create every task with ` + "`chorus task create`" + ` and wire the order with --deps or
` + "`chorus task dep add ID DEP`" + `. Check your work with ` + "`chorus task validate`" + `.
Then run ` + "`chorus signal COMPLETE`" + `. Create tasks only: do not write code.
If you cannot go on without an answer, run ` + "`chorus signal NEEDS_HELP \"question\"`" + `.
`)
	return b.String()
}

// ReviewPrompt hands the violations back to the Plan Agent.
func ReviewPrompt(vs []taskrules.Violation, iteration, max int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task review %d/%d: these tasks break the task rules.\n\n", iteration, max)
	for _, v := range vs {
		fmt.Fprintf(&b, "- %s [%s] %s\n", v.TaskID, v.Rule, v.Message)
	}
	b.WriteString(`
Fix each one: ` + "`chorus task update ID`" + ` (--title, -d, --acceptance), split a task with
` + "`chorus task create`" + ` and ` + "`chorus task delete ID`" + `, break a cycle with
` + "`chorus task dep remove ID DEP`" + `. Run ` + "`chorus task validate`" + ` to check, then run
` + "`chorus signal COMPLETE`" + `.
`)
	return b.String()
}

// Loop is the planning phase's driver: the Plan Agent's turns and the
// review loop, with planning-state.json written at every step.
type Loop struct {
	Engine    *orchestrator.Engine
	Store     beads.Store
	Rules     func() (taskrules.Rules, error) // read again each pass: the user may edit the file
	StatePath string
	Max       int    // review iterations
	Agent     string // profile; "" for the default
	// TurnTimeout bounds one Plan Agent turn (0: none): an agent that ends
	// its turn without signalling would otherwise be waited for forever.
	TurnTimeout time.Duration
	// Progress reports each step (optional).
	Progress func(Progress)
	// SessionLog records planning events in the session log (optional):
	// chorusdir.Dir.AppendLog.
	SessionLog func(mode, event string, details map[string]any) error

	agentID string
	events  <-chan orchestrator.Event
}

// Progress is one step of the loop, for a front end.
type Progress struct {
	Status     string // planning-state status
	Iteration  int    // review iteration (0 while planning)
	Max        int
	Violations []taskrules.Violation
	Text       string // what happens
}

// Result is how the loop ended.
type Result struct {
	Valid      bool
	Violations []taskrules.Violation // what remains when not valid
	Tasks      int
}

// ErrPlanAgent: the Plan Agent ended (stopped, crashed) before the plan
// was done.
var ErrPlanAgent = errors.New("the Plan Agent stopped")

// ErrTurnTimeout: a Plan Agent turn took longer than allowed.
var ErrTurnTimeout = errors.New("the Plan Agent did not finish its turn")

func (l *Loop) report(p Progress) {
	p.Max = l.Max
	if l.Progress != nil {
		l.Progress(p)
	}
}

// Session log modes and events of planning, as the spec names them.
const (
	LogPlanning         = "planning"
	LogReview           = "review"
	EvTasksGenerated    = "tasks_generated"
	EvIterationComplete = "iteration_complete"
)

func (l *Loop) log(mode, event string, details map[string]any) {
	if l.SessionLog != nil {
		_ = l.SessionLog(mode, event, details)
	}
}

// AgentID is the running Plan Agent's id, once started.
func (l *Loop) AgentID() string { return l.agentID }

// Plan starts the Plan Agent with prompt and waits for its turn to end.
func (l *Loop) Plan(ctx context.Context, req Request, prompt string) error {
	if _, err := Update(l.StatePath, func(s *State) {
		s.Status, s.ChosenMode, s.ReviewIterations = StatusPlanning, nil, nil
		s.PlanSummary = Summary{UserGoal: req.Goal, From: req.SpecPath}
		s.Agent = l.Agent
	}); err != nil {
		return err
	}
	l.report(Progress{Status: StatusPlanning, Text: "the Plan Agent is writing tasks"})
	if err := l.turn(ctx, prompt); err != nil {
		return err
	}
	if req.SpecPath != "" && specLines(req.Spec) > ChunkLines {
		// The first part went with the prompt; each later one gets the
		// tasks the earlier parts made as context.
		chunks := Chunks(req.Spec, ChunkLines)
		for _, c := range chunks[1:] {
			earlier, err := l.Store.List(ctx)
			if err != nil {
				return err
			}
			l.report(Progress{Status: StatusPlanning, Text: fmt.Sprintf("the Plan Agent is writing tasks for part %d/%d of %s (lines %d-%d)", c.Index, c.Of, req.SpecPath, c.From, c.To)})
			text := ChunkPrompt(req.SpecPath, req.Spec, c, earlier)
			if l.agentID == "" {
				text = prompt + "\n\n" + text
			}
			if err := l.turn(ctx, text); err != nil {
				return err
			}
		}
	}
	if open, _, err := l.Check(ctx); err == nil {
		l.log(LogPlanning, EvTasksGenerated, map[string]any{"count": open})
	}
	return nil
}

// turn sends text to the Plan Agent (starting it if needed) and waits for
// the end of its turn.
func (l *Loop) turn(ctx context.Context, text string) error {
	if l.events == nil {
		l.events = l.Engine.Subscribe()
	}
	// Turns this loop did not wait for (text typed in the chat line) left
	// their events behind: old news, not the end of the turn started here.
	for drained := false; !drained; {
		select {
		case <-l.events:
		default:
			drained = true
		}
	}
	if l.agentID == "" {
		id, err := l.Engine.StartPlan(ctx, orchestrator.PlanOptions{Agent: l.Agent, Prompt: text})
		if err != nil {
			return err
		}
		l.agentID = id
	} else if err := l.Engine.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdType, AgentID: l.agentID, Text: text}); err != nil {
		return err
	}
	var timeout <-chan time.Time
	if l.TurnTimeout > 0 {
		t := time.NewTimer(l.TurnTimeout)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("%w: no COMPLETE within %s (planning.timeoutMinutes); its terminal is in .chorus/logs/%s.log", ErrTurnTimeout, l.TurnTimeout, l.agentID)
		case ev := <-l.events:
			if ev.Agent != l.agentID {
				continue
			}
			switch ev.Kind {
			case orchestrator.EvPlanTurn:
				if ev.Fields["complete"] != true && ev.Text != "" {
					l.report(Progress{Status: StatusPlanning, Text: ev.Text})
				}
				return nil
			case orchestrator.EvFinished:
				l.agentID = ""
				return fmt.Errorf("%w: %s", ErrPlanAgent, ev.Text)
			case orchestrator.EvNeedsHuman:
				// Its screen shows it waits for a person (a dialog, a
				// login, API errors): say what, not "writing tasks".
				l.report(Progress{Status: StatusPlanning, Text: fmt.Sprintf("the Plan Agent is stuck: %s; its screen is in .chorus/logs/%s.log (`chorus doctor` checks the setup); fix the cause and run `chorus plan` again", ev.Text, l.agentID)})
			case orchestrator.EvNeedsHumanCleared:
				l.report(Progress{Status: StatusPlanning, Text: "the Plan Agent goes on (" + ev.Text + ")"})
			}
		}
	}
}

// Review validates and hands violations to the Plan Agent until the tasks
// are valid or Max iterations were spent. Status ends ready when valid,
// reviewing otherwise. resume is the Plan Agent's base prompt, used when
// it has to be started for a fix (a resumed session).
func (l *Loop) Review(ctx context.Context, resume string) (Result, error) {
	st, err := Update(l.StatePath, func(s *State) { s.Status = StatusReviewing })
	if err != nil {
		return Result{}, err
	}
	iteration := len(st.ReviewIterations)
	var prev []taskrules.Violation
	for {
		open, vs, err := l.Check(ctx)
		if err != nil {
			return Result{}, err
		}
		fixed := countFixed(prev, vs)
		valid := len(vs) == 0 && open > 0
		// A pass that hands nothing back is an iteration too: a plan clean
		// at its first check records {iteration, 0 issues}.
		clean := valid && prev == nil
		if clean {
			iteration++
		}
		if _, err := Update(l.StatePath, func(s *State) {
			if n := len(s.ReviewIterations); n > 0 && prev != nil {
				s.ReviewIterations[n-1].Fixed = fixed
			}
			if clean {
				s.ReviewIterations = append(s.ReviewIterations, Iteration{Iteration: iteration})
			}
			s.PlanSummary.EstimatedTasks = open
			if valid {
				s.Status = StatusReady
			}
		}); err != nil {
			return Result{}, err
		}
		if prev != nil {
			l.log(LogReview, EvIterationComplete, map[string]any{"iteration": iteration, "issues": len(prev), "fixed": fixed})
		}
		if clean {
			l.log(LogReview, EvIterationComplete, map[string]any{"iteration": iteration, "issues": 0, "fixed": 0})
		}
		if valid {
			l.report(Progress{Status: StatusReady, Iteration: iteration, Text: fmt.Sprintf("%d task(s) valid", open)})
			return Result{Valid: true, Tasks: open}, nil
		}
		if open == 0 {
			vs = []taskrules.Violation{{Rule: "no_tasks", Message: "the plan has no tasks: the Plan Agent created none"}}
		}
		if iteration >= l.Max {
			l.report(Progress{Status: StatusReviewing, Iteration: iteration, Violations: vs,
				Text: fmt.Sprintf("%d violation(s) remain after %d review iteration(s)", len(vs), iteration)})
			return Result{Violations: vs, Tasks: open}, nil
		}
		iteration++
		if _, err := Update(l.StatePath, func(s *State) {
			s.ReviewIterations = append(s.ReviewIterations, Iteration{Iteration: iteration, Issues: len(vs)})
		}); err != nil {
			return Result{}, err
		}
		l.report(Progress{Status: StatusReviewing, Iteration: iteration, Violations: vs,
			Text: fmt.Sprintf("review %d/%d: %d violation(s) handed to the Plan Agent", iteration, l.Max, len(vs))})
		text := ReviewPrompt(vs, iteration, l.Max)
		if l.agentID == "" && resume != "" {
			text = resume + "\n\n" + text
		}
		if err := l.turn(ctx, text); err != nil {
			return Result{}, err
		}
		prev = vs
	}
}

// Check validates the tasks against the rules as they are now, with no
// agent and no change to the state: open counts the tasks not closed.
func (l *Loop) Check(ctx context.Context) (open int, vs []taskrules.Violation, err error) {
	rules, err := l.Rules()
	if err != nil {
		return 0, nil, err
	}
	all, err := l.Store.List(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, t := range all {
		if t.Status != beads.StatusClosed {
			open++
		}
	}
	return open, taskrules.Validate(all, rules), nil
}

// Stop ends the Plan Agent, if it runs.
func (l *Loop) Stop(ctx context.Context) {
	if l.agentID != "" {
		_ = l.Engine.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdStop, AgentID: l.agentID})
		l.agentID = ""
	}
}

// countFixed: violations of before (task and rule) that are gone now.
func countFixed(before, now []taskrules.Violation) int {
	still := map[string]bool{}
	for _, v := range now {
		still[v.TaskID+"\x00"+v.Rule] = true
	}
	n := 0
	for _, v := range before {
		if !still[v.TaskID+"\x00"+v.Rule] {
			n++
		}
	}
	return n
}
