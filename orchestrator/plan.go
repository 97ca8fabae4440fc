package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/worktree"
)

// The planning run: the Plan Agent works in a checkout of its own
// (planwt.go), on no branch or task, and only creates and edits tasks (through
// `chorus task …`). It is an agentRun like any other, so front ends see
// it in the snapshot, draw its screen and type into it; its supervisor is
// planWork instead of work.

// Planning event kinds.
const (
	// EvPlanTurn: the Plan Agent finished a turn. Fields["complete"] says
	// whether it signalled COMPLETE; Text carries BLOCKED/NEEDS_HELP text.
	EvPlanTurn EventKind = "plan_turn"
)

// CmdType types Text into an agent (the chat line). A Plan Agent whose
// process has exited is started again with Text as its prompt.
const CmdType = "type"

// AgentWaiting: the Plan Agent finished a turn and waits for more text.
const AgentWaiting = "waiting"

// planTaskID stands for the task a planning run does not have: agents
// see it as CHORUS_TASK_ID (`chorus signal` wants one) and its usage is
// booked under it. No task store makes ids with parentheses.
const planTaskID = "(plan)"

// PlanAgentID is the id of the planning run for a profile.
func PlanAgentID(profile string) string { return "plan-" + worktree.Slug(profile) }

// PlanOptions start a planning run.
type PlanOptions struct {
	Agent  string // profile; "" for agents.default
	Prompt string // the whole first prompt
}

// StartPlan starts the Plan Agent and returns its agent id. It fails when
// the profile is unknown or its command is missing.
func (e *Engine) StartPlan(ctx context.Context, opt PlanOptions) (string, error) {
	name := opt.Agent
	if name == "" {
		name = e.cfg.Agents.Default
	}
	p, ok := e.cfg.Profile(name)
	if !ok {
		return "", fmt.Errorf("agent %q is not in agents.available", name)
	}
	r := &agentRun{e: e, profileName: name, profile: p, id: PlanAgentID(name), taskID: planTaskID,
		events: make(chan turnEvent, 64), answers: make(chan string, 4), restart: make(chan struct{}, 1),
		closed: make(chan struct{})}
	if why := missingCommand(p, r.chorusPath()); why != "" {
		return "", errors.New(why)
	}
	// Its `chorus signal` envelopes are signed like any agent's.
	key, err := signal.NewKey()
	if err != nil {
		return "", err
	}
	r.key = key
	derr := e.do(ctx, func() {
		if e.closing {
			err = errors.New("the session is ending")
			return
		}
		if _, busy := e.runs[r.id]; busy {
			err = fmt.Errorf("the Plan Agent %s is already running", r.id)
			return
		}
		r.ctx, r.cancel = context.WithCancelCause(context.Background())
		cols, rows := e.opt.Cols, e.opt.Rows
		r.size.Store(uint64(cols)<<32 | uint64(rows))
		r.screen = term.New(cols, rows, term.WithScrollback(e.cfg.Agents.Scrollback), term.WithReplies(replyWriter{r}))
		e.runs[r.id] = r
		e.st.Agents[r.id] = &AgentState{ID: r.id, Type: name, Title: "Plan Agent", Worktree: e.opt.Dir.Root, Status: AgentStarting, StartedAt: time.Now().UTC()}
		e.emit(Event{Kind: EvAssigned, Agent: r.id, Fields: map[string]any{"profile": name, "plan": true}})
		e.wg.Add(1)
		go func() {
			defer e.wg.Done()
			reason := r.planWork(opt.Prompt)
			r.waitMeters()
			close(r.closed)
			e.post(func() { e.planFinished(r, reason) })
		}()
	})
	if derr != nil {
		return "", derr
	}
	return r.id, err
}

// planFinished removes the planning run. Loop only.
func (e *Engine) planFinished(r *agentRun, reason string) {
	// What planning cost goes with the event, for the morning report.
	fields := map[string]any{"plan": true}
	if a := e.st.Agents[r.id]; a != nil {
		fields["usage"] = a.Usage
	}
	delete(e.runs, r.id)
	delete(e.st.Agents, r.id)
	delete(e.st.Tasks, planTaskID)
	e.emit(Event{Kind: EvFinished, Agent: r.id, Text: reason, Fields: fields})
}

// planWork runs the Plan Agent: a turn per prompt, each ending in a
// COMPLETE, BLOCKED or NEEDS_HELP signal or the process's exit; text typed
// with CmdType (r.answers) starts the next turn.
func (r *agentRun) planWork(prompt string) string {
	t := beads.Task{} // no task: no model override, no task id
	dir, done := r.planCheckout()
	defer done()
	r.update(func(s *State, a *AgentState) { a.Worktree = dir })
	wt := worktree.Worktree{Dir: dir}
	det := signal.NewDetector(signal.DetectorOptions{Prompts: []string{prompt}})
	retire, err := r.publishKey()
	if err != nil {
		r.event(EvError, "starting the Plan Agent: "+err.Error(), nil)
		return "start failed: " + err.Error()
	}
	defer retire()
	var p agentProc
	gen, it := 0, 0
	start := func(text string) error {
		gen++
		it++
		var err error
		p, err = r.spawn(t, wt, text, it, gen, det, func(s *State, a *AgentState) { a.Iteration, a.Status = it, AgentRunning })
		return err
	}
	if err := start(prompt); err != nil {
		r.event(EvError, "starting the Plan Agent: "+err.Error(), nil)
		return "start failed: " + err.Error()
	}
	turnEnd := func(complete bool, text string) {
		r.update(func(s *State, a *AgentState) { a.Status = AgentWaiting })
		r.event(EvPlanTurn, text, map[string]any{"complete": complete})
	}
	var exitWait <-chan time.Time
	var exitCode int
	ended := false // this turn already reported
	for {
		select {
		case <-r.ctx.Done():
			r.stopProc(p)
			return "stopped: " + context.Cause(r.ctx).Error()
		case <-exitWait:
			exitWait, p = nil, nil
			r.update(func(s *State, a *AgentState) { a.PID = 0 })
			r.event(EvAgentExit, "", map[string]any{"exitCode": exitCode})
			if !ended {
				ended = true
				turnEnd(false, fmt.Sprintf("the Plan Agent exited (code %d) without signalling COMPLETE", exitCode))
			}
		case text := <-r.answers:
			r.detect(func() { det.Reset(); det.AddPrompt(text) })
			ended = false
			r.update(func(s *State, a *AgentState) { a.Status = AgentRunning })
			if p != nil && r.interactive() {
				if err := r.typeInto(p, text); err == nil {
					continue
				} else {
					r.event(EvAlert, "could not type into the Plan Agent, starting it again: "+err.Error(), nil)
					r.stopProc(p)
					p = nil
				}
			}
			if p != nil {
				r.stopProc(p) // a headless turn still running: the new text replaces it
				p = nil
			}
			exitWait = nil
			if err := start(text); err != nil {
				r.event(EvError, "starting the Plan Agent: "+err.Error(), nil)
				return "start failed: " + err.Error()
			}
		case ev := <-r.events:
			if ev.exited {
				if ev.gen == gen && p != nil && exitWait == nil {
					exitCode = ev.code
					exitWait = time.After(exitGrace) // a `chorus signal` may still be on its way
				}
				continue
			}
			if ev.sig == nil {
				continue // a near miss or a turn's end: the Plan Agent is not asked
			}
			s := *ev.sig
			r.event(EvSignal, s.String(), map[string]any{"type": string(s.Type), "source": ev.source})
			if ended {
				continue // the same signal through a second channel
			}
			switch s.Type {
			case signal.Complete:
				ended = true
				turnEnd(true, s.Payload)
			case signal.Blocked, signal.NeedsHelp:
				ended = true
				turnEnd(false, string(s.Type)+": "+s.Payload)
			}
		}
	}
}

// typeText is CmdType: into a task agent's live terminal, or the Plan
// Agent's next turn.
func (e *Engine) typeText(ctx context.Context, c Command) error {
	if c.Text == "" {
		return errors.New("nothing to type")
	}
	var r *agentRun
	if err := e.do(ctx, func() { r = e.runs[c.AgentID] }); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
	}
	if r.taskID == planTaskID {
		select {
		case r.answers <- c.Text:
			return nil
		case <-r.closed:
			return fmt.Errorf("%w: %s", ErrUnknownAgent, c.AgentID)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	p := r.proc.Load()
	if p == nil {
		return fmt.Errorf("agent %s has no running process to type into", c.AgentID)
	}
	select {
	case <-p.Done():
		return fmt.Errorf("agent %s has no running process to type into", c.AgentID)
	default:
	}
	return r.typeInto(p, c.Text)
}
