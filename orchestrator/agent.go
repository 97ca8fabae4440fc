package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/agent/transcript"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator/worktree"
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
	proc   atomic.Pointer[ptyproc.Proc]
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
	errors bool // consecutive agent errors reached the limit
}

// replyWriter forwards the emulator's replies (DA1, CPR…) to whichever
// process is current.
type replyWriter struct{ r *agentRun }

func (w replyWriter) Write(p []byte) (int, error) {
	if pr := w.r.proc.Load(); pr != nil {
		return pr.Write(p)
	}
	return len(p), nil
}

// Screen returns an agent's terminal emulator (nil for unknown agents), for
// front ends to draw. It outlives respawns within the run.
func (e *Engine) Screen(agentID string) *term.Emulator {
	var s *term.Emulator
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			s = r.screen
		}
	})
	return s
}

// Input returns a writer to an agent's terminal, for a front end passing
// keys through; writes go to whichever process the agent currently runs
// and are dropped between processes.
func (e *Engine) Input(agentID string) io.Writer {
	var w io.Writer = io.Discard
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			w = replyWriter{r}
		}
	})
	return w
}

// Resize sets an agent's terminal size: emulator first, then the PTY.
func (e *Engine) Resize(agentID string, cols, rows int) {
	_ = e.do(context.Background(), func() {
		if r := e.runs[agentID]; r != nil {
			r.resize(cols, rows)
		}
	})
}

func (r *agentRun) resize(cols, rows int) {
	if cols < 2 || rows < 2 {
		return
	}
	r.size.Store(uint64(cols)<<32 | uint64(rows))
	r.screen.Resize(cols, rows)
	if p := r.proc.Load(); p != nil {
		_ = p.Resize(uint16(cols), uint16(rows))
	}
}

func (r *agentRun) dims() (int, int) {
	v := r.size.Load()
	return int(v >> 32), int(v & 0xffffffff)
}

// startTask creates the run for a task and its supervisor. Loop only.
func (e *Engine) startTask(taskID, profile string) {
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
	if _, busy := e.runs[r.id]; busy {
		return
	}
	if r.key, err = signal.NewKey(); err != nil {
		e.emit(Event{Kind: EvError, Task: taskID, Text: "making the agent's signal key: " + err.Error()})
		return
	}
	r.ctx, r.cancel = context.WithCancelCause(context.Background())
	cols, rows := e.opt.Cols, e.opt.Rows
	r.size.Store(uint64(cols)<<32 | uint64(rows))
	r.screen = term.New(cols, rows, term.WithScrollback(5000), term.WithReplies(replyWriter{r}))
	e.runs[r.id] = r
	e.st.Agents[r.id] = &AgentState{ID: r.id, Type: name, TaskID: taskID, Status: AgentStarting, StartedAt: time.Now().UTC()}
	e.emit(Event{Kind: EvAssigned, Agent: r.id, Task: taskID, Fields: map[string]any{"profile": name}})
	e.wg.Add(1)
	go r.main(profile == "")
}

// main is the supervisor goroutine.
func (r *agentRun) main(taskPicksAgent bool) {
	defer r.e.wg.Done()
	out := r.work(taskPicksAgent)
	r.ledgerFinal(out)
	r.waitMeters()
	close(r.closed)
	r.e.post(func() { r.e.finish(r, out) })
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
		_, err := e.opt.Store.Claim(ctx, t.ID, actorFor(r.id))
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
		if !errors.As(wtErr, &se) {
			e.opt.Store.Release(context.Background(), t.ID)
			return outcome{kind: "error", reason: "worktree: " + wtErr.Error()}
		}
		r.event(EvAlert, "worktree setup failed: "+wtErr.Error(), nil)
	}
	r.hook(hooks.PostTaskClaim, t, wt, 0, nil)
	d := dirs{root: e.opt.Dir.Root, prompts: e.opt.Dir.Prompts(), patterns: e.opt.Dir.Patterns(), learnings: e.opt.Dir.Learnings(), chorus: e.opt.ChorusExe}
	prompt, err := buildPrompt(d, e.cfg, r.profile, r.profileName, t, wt.Branch)
	if err != nil {
		e.opt.Store.Release(context.Background(), t.ID)
		return outcome{kind: "error", reason: err.Error()}
	}
	return r.loop(t, wt, d, prompt)
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
	var p *ptyproc.Proc
	pending := "" // failure text for the next respawn
	changes := ""
	recorded := run.IterationBase // the tip Chorus last recorded
	if run.CompleteSignalled {
		// A previous run signalled COMPLETE and was interrupted (a crash)
		// during its check: check again, without spending an iteration.
		done, failure := r.recheck(t, wt)
		if done != nil {
			return *done
		}
		pending = failure
	}
	for {
		run.Iterations++
		it := run.Iterations
		if it > cfg.Completion.MaxIterations {
			return r.fail(t, wt, p, fmt.Sprintf("reached maxIterations (%d) without completing", cfg.Completion.MaxIterations))
		}
		if a := r.hook(hooks.PreIteration, t, wt, it, nil); a.Result == hooks.Block {
			return r.hookBlocked(hooks.PreIteration, a, t, wt, p)
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
			tr.Iterations, tr.IterationBase = it, base
			a.Iteration, a.Status = it, AgentRunning
			s.Stats.Iterations++
			r.e.emit(Event{Kind: EvIteration, Agent: r.id, Task: r.taskID, Fields: map[string]any{"iteration": it}})
		}
		r.detect(det.Reset)
		r.ledgerStart(t, it)
		if p != nil {
			r.update(record)
		} else {
			text := prompt
			if it > 1 {
				text = handover(prompt, it, changes, pending, ledgerDigest(LedgerPath(e.opt.Dir.Path, t.ID)))
				r.detect(func() { det.AddPrompt(text) })
			}
			if a := r.hook(hooks.PreAgentStart, t, wt, it, nil); a.Result == hooks.Block {
				return r.hookBlocked(hooks.PreAgentStart, a, t, wt, nil)
			}
			var err error
			gen++
			p, err = r.spawn(t, wt, text, it, gen, det, record)
			if err != nil {
				e.opt.Store.Release(context.Background(), t.ID)
				return outcome{kind: outStartFailed, reason: err.Error()}
			}
			r.hook(hooks.PostAgentStart, t, wt, it, nil)
		}
		res := r.turn(t, wt, &p, det, gen)
		if done := r.postIteration(t, wt, &p, it, gen, &res); done != nil {
			return *done
		}
		if res.done != nil {
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
		// The iteration ended without the task finishing.
		if res.crashed {
			run.Errors++
			if cfg.Completion.MaxAgentErrors > 0 && run.Errors >= cfg.Completion.MaxAgentErrors {
				r.stopProc(p)
				r.commitWIP(wt, "agent errors")
				e.opt.Store.Release(context.Background(), t.ID)
				r.update(func(s *State, a *AgentState) { s.run(t.ID).Errors = run.Errors })
				return outcome{kind: "released", reason: fmt.Sprintf("%d consecutive agent errors; last: %s", run.Errors, res.failure), errors: true}
			}
		} else {
			run.Errors = 0
		}
		pending = res.failure
		if r.continued.Swap(false) {
			run.NoCommitStreak = 0
		}
		head, _ := e.wt.HeadCommit(context.Background(), wt)
		if head == base {
			run.NoCommitStreak++
		} else {
			run.NoCommitStreak = 0
		}
		changes = r.diffStat(wt, base)
		streak, errs, fail := run.NoCommitStreak, run.Errors, res.failure
		r.update(func(s *State, a *AgentState) {
			tr := s.run(t.ID)
			tr.NoCommitStreak, tr.Errors, tr.LastFailure = streak, errs, fail
		})
		if n := cfg.Completion.StuckIterations; n > 0 && streak > 0 && streak%n == 0 {
			msg := fmt.Sprintf("agent may be stuck: %d iterations without a new commit", streak)
			r.update(func(s *State, a *AgentState) { a.Alert = msg })
			r.event(EvAlert, msg, map[string]any{"stuck": streak})
		}
		if o := r.needsPerson(t, wt, p, streak); o != nil {
			return *o
		}
		if p != nil {
			select {
			case <-p.Done():
				p = nil // it exited right after signalling; respawn with the handover
			default:
				if !r.interactive() {
					// A headless agent takes no typed feedback: let it end
					// (its last events carry its usage) and respawn it with
					// the handover. Kept, its exit would reach the next turn
					// and replace this failure with "exited without
					// signalling".
					r.settle(p, gen)
					p = nil
				}
			}
		}
		if p != nil && res.typed == "" && !res.crashed && r.interactive() && res.failure != "" {
			// A live interactive agent gets the failure typed in.
			text := feedback(res.failure)
			// The next turn starts as the text goes in, not when typing
			// returns: a quick agent may answer, and signal again, before
			// the input is confirmed.
			r.detect(func() { det.AddPrompt(text); det.Reset() })
			if err := r.typeInto(p, text); err != nil {
				r.event(EvAlert, "could not deliver feedback, restarting the agent: "+err.Error(), nil)
				r.stopProc(p)
				p = nil
			}
		}
	}
}

// exitGrace is how long an exit waits for a signal still in transit.
const exitGrace = 2 * time.Second

// turnResult is how one iteration ended.
type turnResult struct {
	done    *outcome
	failure string // why the task is not finished, for the next iteration
	crashed bool
	typed   string
	edited  bool // the task's text changed: rebuild the prompt
	// exitCode is the agent's, when the iteration ended with its exit.
	exitCode int
}

// turn waits for the agent to signal or exit and acts on it.
func (r *agentRun) turn(t beads.Task, wt worktree.Worktree, pp **ptyproc.Proc, det *signal.Detector, gen int) turnResult {
	e, ctx := r.e, r.ctx
	seen := map[signal.Type]bool{}
	// A `chorus signal` the agent ran just before exiting may still be on
	// its way through the signals directory; give it a moment before
	// deciding the agent exited without one.
	var exitEv *turnEvent
	var exitWait <-chan time.Time
	for {
		select {
		case <-exitWait:
			ev := *exitEv
			r.dropQuestion()
			*pp = nil
			r.update(func(s *State, a *AgentState) { a.PID = 0 })
			r.event(EvAgentExit, ev.reason, map[string]any{"exitCode": ev.code})
			if ev.code != 0 {
				out := r.output(ev.code)
				r.hook(hooks.OnAgentError, t, wt, 0, out)
				if ev.reason != "" {
					return turnResult{failure: fmt.Sprintf("The agent process exited with code %d: %s", ev.code, ev.reason), crashed: true, exitCode: ev.code}
				}
				return turnResult{failure: fmt.Sprintf("The agent process exited with code %d before finishing.", ev.code), crashed: true, exitCode: ev.code}
			}
			return turnResult{failure: "The agent exited without signalling COMPLETE."}
		case <-ctx.Done():
			return turnResult{done: r.cancelled(t, wt, *pp)}
		case <-r.restart:
			r.stopProc(*pp)
			r.dropQuestion()
			*pp = nil
			if base := r.resetTo.Swap(nil); base != nil {
				r.commitWIP(wt, "before rollback")
				if err := merge.ResetWorktreeTo(context.Background(), wt.Dir, *base); err != nil {
					r.event(EvError, "rolling back the iteration: "+err.Error(), nil)
				} else {
					r.event(EvRollback, "level 1: worktree reset to "+(*base)[:min(12, len(*base))], nil)
				}
				return turnResult{failure: "A human rolled back your last iteration; the worktree is back where it started. Try a different approach."}
			}
			// The task was edited: start over with the new text.
			return turnResult{failure: "The task description changed; re-read it.", edited: true}
		case ev := <-r.events:
			if ev.exited {
				if ev.gen == gen && exitEv == nil {
					exitEv = &ev
					exitWait = time.After(exitGrace)
				}
				continue
			}
			if exitEv != nil {
				*pp = nil // the process is gone; decisions below must not type into it
			}
			s := *ev.sig
			if s.Type == signal.Note {
				r.note(s.Payload) // notes are many; none ends a turn
				continue
			}
			if seen[s.Type] && s.Type != signal.Progress {
				continue // the same signal through a second channel
			}
			seen[s.Type] = true
			if n, ok := s.Percent(); ok && s.Type == signal.Progress {
				// State first, then the event: whoever sees the event finds it.
				r.update(func(st *State, a *AgentState) { a.Progress = n })
			}
			r.event(EvSignal, s.String(), map[string]any{"type": string(s.Type), "source": ev.source})
			r.ledgerLine(t, "signal "+s.String())
			switch s.Type {
			case signal.Progress:
			case signal.NeedsHelp:
				if res, ok := r.needsHelp(t, wt, pp, det, gen, s.Payload); !ok {
					return res
				}
				seen[signal.NeedsHelp] = false
			case signal.Blocked:
				r.settle(*pp, gen)
				r.commitWIP(wt, "blocked")
				reason := s.Payload
				if reason == "" {
					reason = "the agent reported BLOCKED"
				}
				if err := e.opt.Store.Block(context.Background(), t.ID, reason); err != nil {
					r.event(EvError, "marking blocked: "+err.Error(), nil)
				}
				return turnResult{done: &outcome{kind: "blocked", reason: reason}}
			case signal.Complete:
				if has, err := e.wt.HasWork(ctx, wt); err != nil {
					r.event(EvError, "looking for the agent's work: "+err.Error(), nil)
				} else if !has {
					// Nothing to merge: a task is closed without work only
					// when the agent says why it needs no change.
					if why, ok := s.NoChange(); ok {
						return turnResult{done: r.closeUnchanged(t, wt, *pp, gen, signal.NothingToChange+": "+why)}
					}
					r.event(EvAlert, "COMPLETE refused: nothing to merge", map[string]any{"nothingToMerge": true})
					return turnResult{failure: nothingToMerge(wt.Branch)}
				}
				return r.gate(t, wt, pp, gen)
			default:
				// RESOLVED / NEEDS_HUMAN belong to conflict resolution.
			}
		}
	}
}

// recheck runs the quality commands for a COMPLETE recorded before an
// interruption: the task completes when they pass; otherwise the failure
// is the next iteration's feedback.
func (r *agentRun) recheck(t beads.Task, wt worktree.Worktree) (*outcome, string) {
	r.event(EvAlert, "re-running the quality check for a COMPLETE signalled before an interruption", nil)
	r.update(func(st *State, a *AgentState) {
		a.Status, a.Title, a.Worktree, a.Branch = AgentChecking, t.Title, wt.Dir, wt.Branch
	})
	ok, results := runQuality(r.ctx, wt.Dir, r.e.cfg.SortedQuality(), r.env(0))
	r.qualityDone(t, ok, results)
	if r.ctx.Err() != nil {
		return r.cancelled(t, wt, nil), ""
	}
	if ok {
		return r.complete(t, wt, nil, 0)
	}
	r.update(func(st *State, a *AgentState) { a.Status = AgentRunning; st.run(t.ID).CompleteSignalled = false })
	return nil, describeFailure(results)
}

// needsHelp waits for a human answer and delivers it. ok=false means the
// run ended while waiting.
func (r *agentRun) needsHelp(t beads.Task, wt worktree.Worktree, pp **ptyproc.Proc, det *signal.Detector, gen int, q string) (turnResult, bool) {
	r.update(func(s *State, a *AgentState) { a.Status, a.Question = AgentNeedsHelp, q })
	r.event(EvNeedsHelp, q, nil)
	select {
	case <-r.ctx.Done():
		return turnResult{done: r.cancelled(t, wt, *pp)}, false
	case ans := <-r.answers:
		r.update(func(s *State, a *AgentState) { a.Status, a.Question = AgentRunning, "" })
		if *pp != nil && !r.interactive() {
			// A headless agent reads no input: the answer goes into the
			// handover of the next one.
			r.settle(*pp, gen)
			*pp = nil
		}
		if *pp != nil {
			r.detect(func() { det.AddPrompt(ans) })
			if err := r.typeInto(*pp, ans); err == nil {
				return turnResult{}, true
			}
			r.stopProc(*pp)
			*pp = nil
		}
		return turnResult{failure: "A human answered your question: " + ans}, false
	}
}

// nothingToMerge is what an agent is told when it signals COMPLETE with
// no work on its branch.
func nothingToMerge(branch string) string {
	return fmt.Sprintf("COMPLETE was not accepted: there is nothing to merge. Branch %s has no commit of its own and no uncommitted change. "+
		"Do the work and commit it, then signal COMPLETE again. If the task truly needs no change, signal COMPLETE with the reason instead: "+
		"COMPLETE: %s: <why>.", branch, signal.NothingToChange)
}

// finishGrace bounds how long a headless agent that has signalled is left
// to end by itself: it exits right after its result event, which carries
// its usage and cost.
const finishGrace = 30 * time.Second

// settle ends an agent that has signalled. A headless one is first left to
// finish on its own (up to finishGrace); then the process is stopped and
// its output read to the end, so whatever usage it reported is booked
// before the run goes on.
func (r *agentRun) settle(p *ptyproc.Proc, gen int) {
	if p == nil {
		return
	}
	if !r.interactive() {
		t := time.NewTimer(finishGrace)
		select {
		case <-p.Done():
		case <-t.C:
			r.event(EvAlert, "the agent did not end after signalling; stopping it", nil)
		case <-r.ctx.Done():
		}
		t.Stop()
	}
	r.stopProc(p)
	r.awaitExit(gen)
}

// awaitExit waits for the output pump of process generation gen to report
// the exit: it sends that only after reading (and booking) everything the
// process wrote. Other events still queued are from the ending process
// and are dropped.
func (r *agentRun) awaitExit(gen int) {
	t := time.NewTimer(10 * time.Second) // a pump outlives its process only if a grandchild holds the PTY
	defer t.Stop()
	for {
		select {
		case ev := <-r.events:
			if ev.exited && ev.gen == gen {
				return
			}
		case <-t.C:
			return
		case <-r.ctx.Done():
			return
		}
	}
}

// closeUnchanged closes a task whose agent found that it needs no change
// and left nothing to merge: no merge is queued; the reason is the task's
// close reason.
func (r *agentRun) closeUnchanged(t beads.Task, wt worktree.Worktree, p *ptyproc.Proc, gen int, reason string) *outcome {
	e := r.e
	r.settle(p, gen)
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Completed = true })
	if err := closeOnce(e.opt.Store, t.ID, reason); err != nil {
		r.event(EvError, "closing the task: "+err.Error(), nil)
	}
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Closed = true })
	// Nothing of the agent's is in it; Remove keeps it if anything could
	// be lost after all.
	_ = e.wt.Remove(context.Background(), wt, e.opt.Target)
	return &outcome{kind: "completed", reason: reason}
}

// complete records a finished task: it closes it and queues the merge.
func (r *agentRun) complete(t beads.Task, wt worktree.Worktree, p *ptyproc.Proc, gen int) (*outcome, string) {
	e := r.e
	r.settle(p, gen)
	// Work the agent left uncommitted is part of the result; if it cannot
	// be committed, the task is not done (merging would lose it).
	if err := r.commitWIP(wt, "final changes"); err != nil {
		return nil, "Your work could not be committed: " + err.Error()
	}
	if a := r.hook(hooks.PreTaskComplete, t, wt, 0, nil); a.Result == hooks.Block {
		return nil, "The task is not complete yet: " + hookReason(hooks.PreTaskComplete, a) + "."
	}
	req := merge.Request{TaskID: t.ID, Title: t.Title, Branch: wt.Branch, Agent: r.profileName,
		Worktree: wt.Dir, Priority: t.Priority, DependsOn: t.BlockedBy()}
	r.update(func(s *State, a *AgentState) {
		tr := s.run(t.ID)
		tr.Completed = true
		if e.merge != nil {
			tr.Merge = &req
		}
	})
	if e.merge != nil {
		if err := e.merge.Enqueue(req); err != nil {
			r.event(EvError, "queueing the merge: "+err.Error(), nil)
		} else {
			r.event(EvMergeQueued, wt.Branch, nil)
		}
	}
	if err := closeOnce(e.opt.Store, t.ID, "completed by "+r.id); err != nil {
		r.event(EvError, "closing the task: "+err.Error(), nil)
	}
	r.update(func(s *State, a *AgentState) { s.run(t.ID).Closed = true })
	r.hook(hooks.PostTaskComplete, t, wt, 0, nil)
	return &outcome{kind: "completed"}, ""
}

// closeOnce closes a task unless it is closed already, so recovery can
// repeat it safely.
func closeOnce(s beads.Store, id, reason string) error {
	t, err := s.Get(context.Background(), id)
	if err != nil {
		return err
	}
	if t.Status == beads.StatusClosed {
		return nil
	}
	return s.Close(context.Background(), id, reason)
}

// fail ends a task as FAILED: blocked with the failed label and the reason.
func (r *agentRun) fail(t beads.Task, wt worktree.Worktree, p *ptyproc.Proc, reason string) outcome {
	r.stopProc(p)
	r.commitWIP(wt, "failed")
	s := r.e.opt.Store
	if err := s.Block(context.Background(), t.ID, "FAILED: "+reason); err != nil {
		r.event(EvError, err.Error(), nil)
	}
	if err := s.AddLabel(context.Background(), t.ID, beads.LabelFailed); err != nil {
		r.event(EvError, err.Error(), nil)
	}
	return outcome{kind: "failed", reason: reason}
}

// cancelled handles a run ended from outside: stop, keep the work, and
// put the task where the cause says.
func (r *agentRun) cancelled(t beads.Task, wt worktree.Worktree, p *ptyproc.Proc) *outcome {
	cause := context.Cause(r.ctx)
	if errors.Is(cause, errTimeout) {
		r.hook(hooks.OnAgentTimeout, t, wt, 0, &hooks.Output{ExitCode: -1})
		o := r.fail(t, wt, p, fmt.Sprintf("task timeout (%d minutes) reached", r.e.cfg.Completion.TaskTimeout))
		return &o
	}
	r.stopProc(p)
	r.commitWIP(wt, cause.Error())
	if errors.Is(cause, errBudget) {
		reason := cause.Error()
		_ = r.e.opt.Store.Block(context.Background(), t.ID, reason)
		return &outcome{kind: "blocked", reason: reason}
	}
	if err := r.e.opt.Store.Release(context.Background(), t.ID); err != nil {
		r.event(EvError, "releasing the task: "+err.Error(), nil)
	}
	return &outcome{kind: "released", reason: cause.Error()}
}

// commitWIP commits whatever the stopped agent left uncommitted, so no
// work is lost. The agent is gone: any git lock it left behind is stale.
func (r *agentRun) commitWIP(wt worktree.Worktree, why string) error {
	if wt.Dir == "" {
		return nil
	}
	if removed, err := r.e.wt.ClearStaleLocks(wt); err == nil && len(removed) > 0 {
		r.event(EvAlert, "removed a stale git lock the agent left: "+strings.Join(removed, ", "), nil)
	}
	ok, err := r.e.wt.CommitWIP(context.Background(), wt, fmt.Sprintf("wip(%s): %s [%s]", r.taskID, why, r.taskID))
	if err != nil {
		r.event(EvError, "committing work in progress: "+err.Error(), nil)
		return err
	}
	if ok {
		r.event(EvAlert, "uncommitted work saved as a WIP commit on "+wt.Branch, nil)
	}
	return nil
}

func (r *agentRun) diffStat(wt worktree.Worktree, base string) string {
	commits, err := r.e.wt.CommitsSince(context.Background(), wt, base)
	if err != nil || len(commits) == 0 {
		return ""
	}
	return fmt.Sprintf("%d new commit(s) on %s in the last iteration.", len(commits), wt.Branch)
}

func (r *agentRun) interactive() bool {
	return r.profile.Format == config.FormatTerminal
}

// env is the agent's environment.
func (r *agentRun) env(iteration int) []string {
	e := r.e
	env := []string{
		signal.EnvTaskID + "=" + r.taskID,
		signal.EnvAgentID + "=" + r.id,
		signal.EnvKey + "=" + r.key,
		signal.EnvDir + "=" + e.opt.Dir.Path,
		"BEADS_ACTOR=" + actorFor(r.id),
		"BEADS_DIR=" + filepath.Join(e.opt.Dir.Root, ".beads"),
	}
	if iteration > 0 {
		env = append(env, "CHORUS_ITERATION="+strconv.Itoa(iteration))
	}
	if dir := r.chorusPath(); dir != "" {
		env = append(env, "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	}
	return append(env, r.profile.Env...)
}

// chorusPath is the folder of the chorus executable agents run, or "".
func (r *agentRun) chorusPath() string {
	if r.e.opt.ChorusExe == "" {
		return ""
	}
	return filepath.Dir(r.e.opt.ChorusExe)
}

// argv builds the command line: profile args, extra options, model
// override, prompt.
func (r *agentRun) argv(t beads.Task, prompt string, extra ...string) []string {
	argv := append([]string{r.profile.Command}, r.profile.Args...)
	argv = append(argv, extra...)
	if m, ok := t.Metadata[beads.MetaModel].(string); ok && m != "" && r.profile.AllowModelOverride && r.profile.ModelFlag != "" {
		argv = append(argv, r.profile.ModelFlag, m)
	}
	if r.profile.Prompt == "" || r.profile.Prompt == config.PromptArg {
		argv = append(argv, prompt)
	}
	return argv
}

// spawn starts the agent process and its output pump. record (the
// iteration's state) is applied in the same engine message as the pid:
// one state write on the start path instead of one per fact.
func (r *agentRun) spawn(t beads.Task, wt worktree.Worktree, prompt string, it, gen int, det *signal.Detector, record func(*State, *AgentState)) (*ptyproc.Proc, error) {
	e := r.e
	cols, rows := r.dims()
	if err := os.MkdirAll(e.opt.Dir.Logs(), 0o755); err != nil {
		return nil, err
	}
	spawned := time.Now()
	// A NUL cannot be passed in argv (exec fails with EINVAL) nor typed.
	prompt = strings.ReplaceAll(prompt, "\x00", "")
	arg, err := promptArg(prompt, filepath.Join(e.opt.Dir.Logs(), worktree.Slug(r.id)+".prompt.md"))
	if err != nil {
		return nil, fmt.Errorf("writing the prompt file: %w", err)
	}
	r.trustWorktree(wt.Dir, r.env(it))
	p, err := ptyproc.Start(ptyproc.Spec{
		Argv: r.argv(t, arg, r.codexTrustArgs(wt.Dir)...), Dir: wt.Dir, Env: r.env(it), Unset: []string{"CLAUDECODE"},
		Cols: uint16(cols), Rows: uint16(rows),
		LogPath: filepath.Join(e.opt.Dir.Logs(), worktree.Slug(r.id)+".log"),
	})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", r.profile.Command, err)
	}
	r.proc.Store(p)
	pid, pstart := p.Pid(), p.StartTime()
	cmd := strings.Join(r.argv(t, "…")[:1], " ")
	r.update(func(s *State, a *AgentState) {
		record(s, a)
		r.e.started(r.taskID)
		a.PID, a.PStart, a.Status = pid, pstart, AgentRunning
		r.e.emit(Event{Kind: EvStarted, Agent: r.id, Task: r.taskID, Text: cmd, Fields: map[string]any{"pid": pid, "iteration": it}})
	})
	// An interactive Claude Code or Codex records the assistant's messages
	// and usage in its session files: signals come from there (source
	// "transcript"), not from its screen. The pump reports the exit only
	// once the last of them is read.
	followed := make(chan struct{})
	if kind := r.profile.TranscriptKind(); kind != "" {
		rd, err := transcript.New(transcript.Options{Kind: kind, Env: r.env(it), Dir: wt.Dir, Since: spawned})
		if err != nil {
			close(followed)
			r.event(EvError, "reading the agent's transcript: "+err.Error(), nil)
		} else {
			r.meters.Add(1)
			go func() {
				defer r.meters.Done()
				defer close(followed)
				transcript.Follow(rd, p.Done(), func(u transcript.Update) {
					r.stuck.noteActivity(time.Now()) // the record moved: the agent works
					// Usage first: a completion must find its cost booked.
					r.reportUsage(fromTokens(u.Usage))
					for _, s := range u.Signals {
						r.send(turnEvent{sig: &s, gen: gen, source: "transcript"})
					}
				})
			}()
		}
	} else {
		close(followed)
	}
	go r.pump(p, gen, det, followed)
	go r.watchStuck(p)
	if r.profile.Prompt == config.PromptType {
		if err := r.typeInto(p, arg); err != nil {
			r.event(EvAlert, "typing the prompt: "+err.Error(), nil)
		}
	}
	return p, nil
}

// pump feeds output to the screen and the detectors, then reports the exit.
// Signals found in the output, and in the transcript (followed is closed
// once it is read to the end), reach the supervisor before the exit does.
// Screen text is a signal channel only for agents without a transcript or
// structured events: a structured record tells the assistant's words from
// the tool output and documents it displays, the screen does not.
func (r *agentRun) pump(p *ptyproc.Proc, gen int, det *signal.Detector, followed <-chan struct{}) {
	var from uint64
	screenSignals := r.profile.TranscriptKind() == "" && r.profile.Format == config.FormatTerminal
	scan := func() {
		text, next := r.screen.TextSince(from)
		from = next
		if !r.sawBusy.Load() && busyShown(text) {
			r.sawBusy.Store(true)
		}
		// The screen is read for a stuck agent whatever carries its signals.
		r.stuck.poke()
		if !screenSignals {
			return
		}
		var found []signal.Found
		r.detect(func() { found = det.Snapshot(text) })
		for _, f := range found {
			if f.Err != nil {
				r.event(EvError, "ignored signal "+f.Raw+": "+f.Err.Error(), nil)
				continue
			}
			s := f.Signal
			r.send(turnEvent{sig: &s, gen: gen, source: "output"})
		}
	}
	events := newEventParser(r.profile.Format)
	deliver := func(sigs []signal.Signal) {
		// Usage first: a completion read from the same event must find
		// its cost booked.
		r.reportUsage(events.usageDelta())
		for _, why := range events.failures() {
			r.event(EvAlert, r.profile.Command+" reported: "+why, map[string]any{"agentError": why})
		}
		for _, s := range sigs {
			r.send(turnEvent{sig: &s, gen: gen, source: "events"})
		}
	}
	write := func(b []byte) {
		_, _ = r.screen.Write(b)
		deliver(events.feed(b))
	}
	for chunk := range p.Output() {
		write(chunk)
		// Drain what is already waiting so a burst is scanned once.
	drain:
		for {
			select {
			case more, ok := <-p.Output():
				if !ok {
					break drain
				}
				write(more)
			default:
				break drain
			}
		}
		scan()
	}
	deliver(events.flush())
	scan()
	code, _ := p.Wait()
	select {
	case <-followed:
	case <-time.After(10 * time.Second): // a transcript reader stuck on a slow disk must not hold the exit
	}
	r.send(turnEvent{exited: true, code: code, gen: gen, reason: events.failure})
}

// typeInto delivers text to a live agent and verifies it arrived.
func (r *agentRun) typeInto(p *ptyproc.Proc, text string) error {
	retry := func(attempt int) {
		r.event(EvAlert, fmt.Sprintf("input not confirmed; pressing Enter again (attempt %d)", attempt), map[string]any{"inputRetry": attempt})
	}
	opts := ptyproc.TypeOptions{Paste: r.screen.InputModes().BracketedPaste, OnRetry: retry}
	if r.sawBusy.Load() {
		// Claude Code shows text submitted while a turn runs as sent, yet
		// drops it when the turn ends just then: type only into an idle
		// agent, and count it delivered once a turn starts.
		if err := r.waitIdle(p); err != nil {
			return err
		}
		opts.Marker = busyWord
	}
	ctx, cancel := context.WithTimeout(r.ctx, 30*time.Second)
	defer cancel()
	return p.Type(ctx, text, opts)
}

// busyShown reports the busy marker near the bottom of a screen, where
// the CLIs keep their status line, so that the words in a prompt or in the
// agent's output do not count.
func busyShown(screen string) bool {
	lines := strings.Split(strings.TrimRight(screen, " \n"), "\n")
	n := 0
	for i := len(lines) - 1; i >= 0 && n < 6; i-- {
		if strings.TrimSpace(lines[i]) == "" {
			continue
		}
		n++
		if strings.Contains(lines[i], busyMarker) {
			return true
		}
	}
	return false
}

// waitIdle waits until the agent's screen no longer shows it busy. A turn
// may run for as long as the agent works, so only the run's end or the
// process's bounds the wait.
func (r *agentRun) waitIdle(p *ptyproc.Proc) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for busyShown(r.screen.Text()) {
		select {
		case <-tick.C:
		case <-p.Done():
			return errors.New("the agent exited before it was ready for input")
		case <-r.ctx.Done():
			return context.Cause(r.ctx)
		}
	}
	return nil
}

// stopProc ends the agent: the profile's exit input first when it has one,
// then SIGTERM to the group and SIGKILL after the grace period.
func (r *agentRun) stopProc(p *ptyproc.Proc) {
	if p == nil {
		return
	}
	grace := time.Duration(r.e.cfg.Completion.StopGraceSeconds) * time.Second
	if r.profile.ExitInput != "" {
		_, _ = p.Write([]byte(r.profile.ExitInput))
		_, _ = p.Write([]byte("\r"))
		select {
		case <-p.Done():
			return
		case <-time.After(min(grace, 3*time.Second)):
		}
	}
	p.Stop(grace)
}
