package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/host"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/agent/usage"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/worktree"
)

// agentRun is one agent working on one task: a supervisor goroutine that
// owns the process and reports every transition to the loop.
type agentRun struct {
	e               *Engine
	id, profileName string
	taskID          string
	profile         config.AgentProfile

	ctx    context.Context
	cancel context.CancelCauseFunc

	// events carries signals from every channel plus process exits, in the
	// order they happened, to the supervisor.
	events  chan turnEvent
	answers chan string
	restart chan struct{}

	screen *term.Emulator
	proc   procSlot
	// hostRunner, when set, runs the agent in an agent host; adopted is a
	// host of the previous engine this run carries on with.
	hostRunner host.Runner
	adopted    *host.Client
	adoptedSig *signal.Signal // a signal the previous engine took and did not judge
	// resetTo, when set, makes the next restart roll the worktree back to
	// that commit first (rollback level 1).
	resetTo atomic.Pointer[string]
	size    atomic.Uint64 // cols<<32 | rows

	// detMu guards the detector, shared by the supervisor (new prompts,
	// new turns) and the output pump (scanning).
	detMu sync.Mutex
	// closed is closed when the supervisor returns, so a pump that outlives
	// it never blocks on a channel nobody reads.
	closed chan struct{}
	// sawBusy: the agent's screen has shown busyMarker, so typing into it
	// waits for it to be idle and confirms by it turning busy.
	sawBusy atomic.Bool
	// continued: a person answered a stuck alert with Continue (CmdContinue).
	continued atomic.Bool
	// turnFrom (unix ns) is when the agent was last given input (spawn,
	// typed feedback or question): a near miss or turn end read before it
	// belongs to a turn already judged.
	turnFrom atomic.Int64
	// meters are the transcript readers of this run's processes; their
	// last reading is booked before the run finishes.
	meters sync.WaitGroup
	// stuck notices an agent waiting for a person (see stuck.go).
	stuck stuckWatch

	// key signs this run's `chorus signal` envelopes (CHORUS_SIGNAL_KEY);
	// seenSignals are the envelope ids already applied (loop only).
	key         string
	seenSignals map[string]bool
	led         ledgerState // the task's ledger and repeated failures (ledger.go)
}

// busyMarker is on Claude Code's and Codex's screen while a turn runs
// ("esc to interrupt"); busyWord is what of it survives in the raw output,
// whose words are placed by cursor moves.
const (
	busyMarker = "to interrupt"
	busyWord   = "interrupt"
)

type turnEvent struct {
	sig    *signal.Signal
	exited bool
	code   int
	gen    int // process generation, so a stale exit is ignored
	source string
	reason string // with exited: the CLI's own failure report, if any
	// lost, with exited: the agent's host went away before reporting the
	// exit (what its runner saw); the turn ended with the machine.
	lost string
	// miss: the turn ended on a tag that did not count (a near miss).
	miss *signal.Verdict
	// turnEnded: the agent's record shows a turn ended (signal or not).
	turnEnded bool
	at        time.Time // when a miss or turnEnded was read
	// limit: the agent reported its account's rate or usage limit.
	limit *usage.Finding
}

// outcomeKind says how a run ended.
type outcomeKind string

const (
	outCompleted   outcomeKind = "completed"
	outBlocked     outcomeKind = "blocked"
	outFailed      outcomeKind = "failed"
	outReleased    outcomeKind = "released"
	outClaimLost   outcomeKind = "claim-lost"
	outError       outcomeKind = "error"        // before the agent ran: counts as a start failure
	outStartFailed outcomeKind = "start-failed" // the agent process could not be started
	outUnstartable outcomeKind = "unstartable"  // its command is missing: no task can start with it
)

// outcome is how a run ended, applied to State by the loop.
type outcome struct {
	kind   outcomeKind
	reason string
}

// startTask creates the run for a task and its supervisor. Loop only.
func (e *Engine) startTask(taskID, profile string) { e.startTaskWith(taskID, profile, nil, nil) }

// startTaskWith starts a run; adopted, when set, is the live host of the
// previous engine's agent for the task, which the run carries on with.
func (e *Engine) startTaskWith(taskID, profile string, adopted *host.Client, sig *signal.Signal) {
	if e.closing {
		return
	}
	t := beads.Task{ID: taskID}
	name, p, err := e.profileFor(t, profile)
	if profile == "" {
		// The task's own choice is only known after Get; the supervisor
		// re-resolves it. Use the default for the id until then.
		name, p, err = e.cfg.Agents.Default, e.cfg.Agents.Available[e.cfg.Agents.Default], nil
	}
	if err != nil {
		e.emit(Event{Kind: EvError, Task: taskID, Text: err.Error()})
		return
	}
	r := &agentRun{e: e, profileName: name, profile: p, taskID: taskID,
		events: make(chan turnEvent, 64), answers: make(chan string, 4), restart: make(chan struct{}, 1),
		closed: make(chan struct{})}
	r.id = agentID(name, taskID)
	r.hostRunner = e.runner()
	r.adopted, r.adoptedSig = adopted, sig
	if adopted != nil {
		// Its signals are its own from the first moment.
		r.proc.Store(adopted)
	}
	if _, busy := e.runs[r.id]; busy {
		return
	}
	if adopted != nil {
		// The agent keeps signing with the key it was started with.
		r.key = adoptedKey(adopted)
	} else if r.key, err = signal.NewKey(); err != nil {
		e.emit(Event{Kind: EvError, Task: taskID, Text: "making the agent's signal key: " + err.Error()})
		return
	}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	cols, rows := e.opt.Cols, e.opt.Rows
	r.size.Store(uint64(cols)<<32 | uint64(rows))
	if adopted != nil {
		// The tile shows the agent's screen as its host has it.
		w, h, st := adopted.Screen()
		if w >= 2 && h >= 2 {
			cols, rows = w, h
		}
		r.size.Store(uint64(cols)<<32 | uint64(rows))
		r.screen = term.New(cols, rows, term.WithScrollback(e.cfg.Agents.Scrollback), term.WithReplies(replyWriter{r}))
		_, _ = r.screen.Write(st)
	} else {
		r.screen = term.New(cols, rows, term.WithScrollback(e.cfg.Agents.Scrollback), term.WithReplies(replyWriter{r}))
	}
	e.runs[r.id] = r
	if e.st.Hold != nil {
		// The run is held: this agent tries whether the cause has gone.
		e.probe = taskID
		e.emit(Event{Kind: EvProbe, Task: taskID, Text: "trying one agent: " + e.st.Hold.Cause})
	}
	e.st.Agents[r.id] = &AgentState{ID: r.id, Type: name, TaskID: taskID, Status: AgentStarting, StartedAt: time.Now().UTC()}
	e.emit(Event{Kind: EvAssigned, Agent: r.id, Task: taskID, Fields: map[string]any{"profile": name}})
	e.wg.Add(1)
	go r.main(profile == "")
}

// main is the supervisor goroutine.
func (r *agentRun) main(taskPicksAgent bool) {
	defer r.e.wg.Done()
	out := r.work(taskPicksAgent)
	if cl := r.adopted; cl != nil {
		// The run ended before it carried on with the adopted agent (a
		// re-checked COMPLETE decided it): nothing else will stop it.
		r.adopted = nil
		cl.Stop(time.Duration(r.e.cfg.Completion.StopGraceSeconds) * time.Second)
	}
	r.ledgerFinal(out)
	r.waitMeters()
	if out.kind == outCompleted {
		r.awaitLanding()
	}
	close(r.closed)
	r.e.post(func() { r.e.finish(r, out) })
}

// landingWait bounds how long a finished run keeps its slot for its
// task's landing (awaitLanding).
const landingWait = 5 * time.Second

// awaitLanding keeps the run's slot until its task's merge has landed,
// when nothing but the merge service's own work stands before it
// (merge.Service.Landing): the next agent's start (a worktree, its
// processes, the task store) would compete with the landing for the
// machine, and it starts from a target that holds this task's work.
func (r *agentRun) awaitLanding() {
	if r.e.merge == nil {
		return
	}
	ch := r.e.merge.Landing(r.taskID)
	if ch == nil {
		return // a check or an approval first: that takes its own time
	}
	t := time.NewTimer(landingWait)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	case <-r.ctx.Done():
	}
}

// update applies fn to the loop's state from the supervisor, waiting for
// it so that what the supervisor does next is ordered after the record.
func (r *agentRun) update(fn func(s *State, a *AgentState)) {
	_ = r.e.do(context.Background(), func() {
		fn(r.e.st, r.e.st.Agents[r.id])
	})
}

func (r *agentRun) event(kind EventKind, text string, fields map[string]any) {
	fn := func() {
		r.e.emit(Event{Kind: kind, Agent: r.id, Task: r.taskID, Text: text, Fields: fields})
		r.e.dirty = false // an event only: nothing to persist
	}
	select {
	case r.e.msgs <- fn:
	case <-r.closed:
	}
}

// send hands an event to the supervisor unless it has returned.
func (r *agentRun) send(ev turnEvent) {
	select {
	case r.events <- ev:
	case <-r.closed:
	}
}

// detect runs fn on the detector under its lock.
func (r *agentRun) detect(fn func()) {
	r.detMu.Lock()
	defer r.detMu.Unlock()
	fn()
}

func (r *agentRun) work(taskPicksAgent bool) outcome {
	e := r.e
	ctx := r.ctx
	t, err := e.opt.Store.Get(ctx, r.taskID)
	if err != nil {
		return outcome{kind: "error", reason: err.Error()}
	}
	if taskPicksAgent {
		if name, p, err := e.profileFor(t, ""); err == nil && name != r.profileName {
			// The task asks for a specific agent; the run keeps its id but
			// starts that CLI.
			r.profileName, r.profile = name, p
		} else if err != nil {
			return outcome{kind: "error", reason: err.Error()}
		}
	}
	// Nothing is claimed for an agent that cannot start.
	if why := missingCommand(r.profile, r.chorusPath()); why != "" {
		return outcome{kind: outUnstartable, reason: why}
	}
	if a := r.hook(hooks.PreTaskClaim, t, worktree.Worktree{}, 0, nil); a.Result == hooks.Block {
		return outcome{kind: outHookBlocked, reason: hookReason(hooks.PreTaskClaim, a)}
	}
	// The claim (task store) and the worktree (git) do not depend on each
	// other: do both at once. A lost claim removes a worktree made for
	// nothing; it holds no work yet.
	claimed := make(chan error, 1)
	go func() {
		if r.adopted != nil {
			claimed <- nil // the task is still this agent's, from before
			return
		}
		_, err := e.opt.Store.Claim(ctx, t.ID, e.actorFor(r.id))
		claimed <- err
	}()
	wt, wtErr := e.wt.Ensure(ctx, r.profileName, t.ID, worktree.Options{
		Scratchpad: config.ScratchpadTemplate(), Copy: e.cfg.Worktree.Copy, Setup: e.cfg.Worktree.Setup,
	})
	if err := <-claimed; err != nil {
		if wt.Created {
			_ = e.wt.Remove(context.Background(), wt, e.opt.Target)
		}
		if errors.Is(err, beads.ErrClaimed) || errors.Is(err, beads.ErrNotOpen) || errors.Is(err, beads.ErrNotReady) {
			return outcome{kind: "claim-lost", reason: err.Error()}
		}
		return outcome{kind: "error", reason: "claim: " + err.Error()}
	}
	if wtErr != nil {
		var se *worktree.SetupError
		if !errors.As(wtErr, &se) || DiskFull(se.Output) {
			// A setup that ran out of space leaves a worktree the agent
			// cannot use: the start fails, and the run pauses for it.
			e.opt.Store.Release(context.Background(), t.ID)
			return outcome{kind: "error", reason: "worktree: " + wtErr.Error()}
		}
		r.event(EvAlert, "worktree setup failed: "+wtErr.Error(), nil)
	}
	if r.adopted == nil && !wt.Created && wt.Dir != "" {
		// No agent runs here (none was adopted): a git lock in it is a
		// killed git's (an agent stopped, or Chorus killed, mid-command,
		// its worktree not yet in the state), and would fail every git
		// command there, the agent's commits first.
		if removed, err := e.wt.ClearStaleLocks(wt); err == nil && len(removed) > 0 {
			r.event(EvAlert, "removed a stale git lock from the worktree: "+strings.Join(removed, ", "), nil)
		}
		// What a stopped run left uncommitted was saved as WIP commits;
		// this run starts with it uncommitted again (see ReopenWIP).
		if n, err := e.wt.ReopenWIP(ctx, wt, t.ID); err != nil {
			r.event(EvError, "undoing the last run's WIP commits: "+err.Error(), nil)
		} else if n > 0 {
			wt.Head, _ = e.wt.HeadCommit(ctx, wt)
			r.event(EvAlert, fmt.Sprintf("the last run's uncommitted work is uncommitted again (%d WIP commit(s) undone, kept under refs/chorus/kept/)", n), nil)
		}
	}
	r.hook(hooks.PostTaskClaim, t, wt, 0, nil)
	d := dirs{root: e.opt.Dir.Root, prompts: e.opt.Dir.Prompts(), patterns: e.opt.Dir.Patterns(), learnings: e.opt.Dir.Learnings(), chorus: e.opt.ChorusExe}
	prompt, err := buildPrompt(d, e.cfg, r.profile, r.profileName, t, wt.Branch)
	if err != nil {
		e.opt.Store.Release(context.Background(), t.ID)
		return outcome{kind: "error", reason: err.Error()}
	}
	if err := e.mergeBaseline(ctx); err != nil {
		e.opt.Store.Release(context.Background(), t.ID)
		return outcome{kind: "error", reason: err.Error()}
	}
	return r.loop(t, wt, d, prompt)
}

// mergeBaseline waits until the merge queue has read the target's tip it
// judges moves against: an agent that moves the target before that would
// have its move taken for the baseline, its work for nothing of its own.
func (e *Engine) mergeBaseline(ctx context.Context) error {
	if e.merge == nil {
		return nil
	}
	select {
	case <-e.merge.Baseline():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loop runs iterations until the task ends one way or another.
func (r *agentRun) loop(t beads.Task, wt worktree.Worktree, d dirs, prompt string) outcome {
	e, cfg := r.e, r.e.cfg
	var run TaskRun
	_ = e.do(context.Background(), func() {
		run = *e.st.run(t.ID)
		e.dirty = false // a read: the first iteration's record writes it
	})
	r.led.mu.Lock()
	r.led.failKey, r.led.failCount, r.led.failText = run.FailKey, run.FailStreak, run.FailText
	r.led.mu.Unlock()
	retire, err := r.publishKey()
	if err != nil {
		e.opt.Store.Release(context.Background(), t.ID)
		return outcome{kind: "error", reason: err.Error()}
	}
	defer retire()
	det := signal.NewDetector(signal.DetectorOptions{Prompts: []string{prompt}})
	var gen int
	var p agentProc
	pending := "" // failure text for the next respawn
	changes := ""
	recorded := run.IterationBase // the tip Chorus last recorded
	// resumed: the task ran before (a stop or a crash gave its iteration
	// back): the agent starts from the handover, not the bare prompt.
	resumed := run.IterationBase != ""
	if run.CompleteSignalled {
		// A previous run signalled COMPLETE and was interrupted (a crash)
		// during its check: check again, without spending an iteration.
		done, failure := r.recheck(t, wt)
		if done != nil {
			return *done
		}
		pending = failure
	}
	lim := limitsFrom(cfg.Completion)
	for {
		if p == nil {
			if h := r.held(); h != "" {
				// The run holds (since this run was assigned, or since its
				// last turn): no agent is started until it clears.
				return r.park(t, wt, nil, "autopilot holds: "+h)
			}
		}
		adopting := r.adopted != nil && gen == 0
		if d, ok := Admit(run.counters(), lim); !ok && !adopting {
			return r.fail(t, wt, p, d.Reason)
		}
		it := run.Iterations + 1
		if adopting {
			// The same process, in the same iteration and turn; the
			// counters are those from before it, as for any turn.
			it = max(run.Iterations, 1)
			run.Iterations = it - 1
		}
		if !adopting {
			if a := r.hook(hooks.PreIteration, t, wt, it, nil); a.Result == hooks.Block {
				return r.hookBlocked(hooks.PreIteration, a, t, wt, p)
			}
		}
		base := wt.Head // known from Ensure on the first iteration
		if it > 1 || base == "" {
			base, _ = e.wt.HeadCommit(context.Background(), wt)
		}
		if base != "" {
			r.keepRewound(recorded, base)
			recorded = base
		}
		first := gen == 0 // this run's first spawn records where it works
		record := func(s *State, a *AgentState) {
			if first {
				a.Title, a.Worktree, a.Branch, a.Type = t.Title, wt.Dir, wt.Branch, r.profileName
			}
			tr := s.run(t.ID)
			// Open until the policy judges the turn: an iteration the
			// engine's death interrupts is given back at recovery.
			tr.Iterations, tr.IterationBase, tr.Open = it, base, true
			a.Iteration, a.Status = it, AgentRunning
			s.Stats.Iterations++
			fields := map[string]any{"iteration": it}
			if it > 1 && pending != "" {
				fields[FieldRetryAfter] = pending // why this iteration runs, for the morning report
			}
			r.e.emit(Event{Kind: EvIteration, Agent: r.id, Task: r.taskID, Fields: fields})
		}
		r.detect(det.Reset)
		if !adopting {
			r.ledgerStart(t, it)
		}
		if adopting {
			gen++
			p = r.adopt(t, wt, it, gen, det)
		} else if p != nil {
			r.update(record)
		} else {
			text := prompt
			if it > 1 || pending != "" || resumed {
				text = handover(prompt, it, changes, pending, ledgerDigest(LedgerPath(e.opt.Dir.Path, t.ID)))
				r.detect(func() { det.AddPrompt(text) })
			}
			if a := r.hook(hooks.PreAgentStart, t, wt, it, nil); a.Result == hooks.Block {
				return r.hookBlocked(hooks.PreAgentStart, a, t, wt, nil)
			}
			var err error
			gen++
			p, err = r.spawn(t, wt, text, it, gen, det, record)
			var held heldError
			if errors.As(err, &held) {
				r.ledgerEnd(t, wt, base, string(outReleased)+" autopilot holds: "+string(held))
				return r.park(t, wt, nil, "autopilot holds: "+string(held))
			}
			if err != nil {
				e.opt.Store.Release(context.Background(), t.ID)
				return outcome{kind: outStartFailed, reason: err.Error()}
			}
			r.hook(hooks.PostAgentStart, t, wt, it, nil)
		}
		res := r.turn(t, wt, &p, det, gen)
		if r.hostRunner != nil {
			r.update(func(s *State, a *AgentState) { a.Signal = nil }) // judged
		}
		if done := r.postIteration(t, wt, &p, it, gen, &res); done != nil {
			return *done
		}
		if res.done != nil {
			if res.done.kind == outReleased {
				// Chorus stopped it: the iteration is not the agent's to pay.
				r.update(func(s *State, a *AgentState) {
					if tr := s.run(t.ID); tr.Open && !tr.CompleteSignalled {
						tr.Iterations, tr.Open = it-1, false
					}
				})
			}
			if res.done.kind == outCompleted {
				r.worked()
			}
			r.ledgerEnd(t, wt, base, string(res.done.kind)+" "+res.done.reason)
			return *res.done
		}
		r.ledgerEnd(t, wt, base, res.failure)
		if res.edited {
			if nt, err := e.opt.Store.Get(context.Background(), t.ID); err == nil {
				if np, err := buildPrompt(d, cfg, r.profile, r.profileName, nt, wt.Branch); err == nil {
					t, prompt = nt, np
					r.detect(func() { det.AddPrompt(np) })
					r.update(func(s *State, a *AgentState) { a.Title = nt.Title })
				}
			}
		}
		// The iteration ended without the task finishing: the policy says
		// what follows.
		head, _ := e.wt.HeadCommit(context.Background(), wt)
		r.led.mu.Lock()
		c := run.counters()
		c.FailStreak = r.led.failCount
		r.led.mu.Unlock()
		dec := Decide(c, lim, Turn{End: res.end, Alive: alive(p), Interactive: r.interactive(),
			Committed: head != base, Continued: r.continued.Swap(false), Failure: res.failure})
		if res.end == EndCrashed {
			if h := r.outageCheck(res.failure); h != nil {
				// Not this task's failure: its turn is given back, and it
				// waits for the run's hold to clear.
				r.update(func(s *State, a *AgentState) {
					tr := s.run(t.ID)
					tr.Iterations, tr.Open = c.Iterations, false
				})
				return r.park(t, wt, p, "autopilot holds: "+h.Cause)
			}
		} else if res.end != EndRedo && res.end != EndUsageLimit && res.end != EndHostLost {
			r.worked()
		}
		run.apply(dec.Next)
		pending = res.failure
		changes = r.diffStat(wt, base)
		next, fail := run.counters(), res.failure
		r.update(func(s *State, a *AgentState) {
			tr := s.run(t.ID)
			tr.apply(next)
			tr.Open, tr.LastFailure = false, fail
		})
		if dec.Alert != "" {
			r.update(func(s *State, a *AgentState) { a.Alert = dec.Alert })
			r.event(EvAlert, dec.Alert, map[string]any{"stuck": next.NoCommitStreak})
		}
		switch dec.Action {
		case ActFail:
			return r.fail(t, wt, p, dec.Reason)
		case ActNeedsPerson:
			return r.handToPerson(t, wt, p, dec.Reason)
		case ActRelease:
			return r.park(t, wt, p, dec.Reason)
		case ActPark:
			// The account's limit: the run holds until it resets; this
			// task goes back to open, not blocked, its turn given back.
			r.usageLimited(res.limit)
			return r.park(t, wt, p, "usage limit: "+dec.Reason)
		case ActNudge:
			pending = orText(res.failure, confirmText)
			channel := "handover"
			if p != nil && alive(p) && r.interactive() {
				channel = "typed"
			}
			r.nudged(t, next.Nudges, pending, channel)
		}
		if p != nil && !alive(p) {
			p = nil // it exited right after signalling; respawn with the handover
		}
		if p != nil && !r.interactive() {
			// A headless agent takes no typed feedback: let it end (its
			// last events carry its usage) and respawn it with the
			// handover. Kept, its exit would reach the next turn and
			// replace this failure with "exited without signalling".
			r.settle(p, gen)
			p = nil
		}
		if p != nil && dec.Action == ActRespawn && res.end == EndCrashed {
			r.stopProc(p)
			p = nil
		}
		if p != nil && res.typed == "" && (dec.Action == ActFeedback || dec.Action == ActNudge) {
			// A live interactive agent gets the failure typed in.
			text := feedback(pending)
			if dec.Action == ActNudge {
				text = oneLine(pending, 1500) // a question, not a failure
			}
			// The next turn starts as the text goes in, not when typing
			// returns: a quick agent may answer, and signal again, before
			// the input is confirmed.
			r.detect(func() { det.AddPrompt(text); det.Reset() })
			r.turnFrom.Store(time.Now().UnixNano())
			if err := r.typeInto(p, text); err != nil {
				r.event(EvAlert, "could not deliver feedback, restarting the agent: "+err.Error(), nil)
				r.stopProc(p)
				p = nil
			}
		}
	}
}

// confirmText asks an agent whose turn ended without a signal that counts
// to say for sure whether it is done.
const confirmText = "Your turn ended without a completion signal Chorus could count. If the task is done, run `chorus signal COMPLETE`; otherwise keep working."

// alive reports whether the agent process still runs.
func alive(p agentProc) bool {
	if p == nil {
		return false
	}
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// park ends the run without judging the task: the agent stopped, its work
// kept, the task back to open.
func (r *agentRun) park(t beads.Task, wt worktree.Worktree, p agentProc, reason string) outcome {
	r.stopProc(p)
	r.commitWIP(wt, "paused")
	if err := r.e.opt.Store.Release(context.Background(), t.ID); err != nil {
		r.event(EvError, "releasing the task: "+err.Error(), nil)
	}
	return outcome{kind: outReleased, reason: reason}
}
