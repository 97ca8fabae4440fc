package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
)

// EvSignalRejected reports a `chorus signal` envelope the engine refused:
// from a process outside every agent's process tree, from another agent's
// processes than the one it names, or for a task its agent does not work
// on.
const EvSignalRejected EventKind = "signal_rejected"

// maxSeenSignals bounds the envelope ids a run remembers against replays.
const maxSeenSignals = 1024

// RouteSignals takes the envelopes `chorus signal` sends to the engine's
// signal socket until ctx ends (signal.Serve); each is judged by Deliver
// and the sender told the outcome.
func (e *Engine) RouteSignals(ctx context.Context) error {
	ln, err := signal.Listen(signal.SocketPath(e.opt.Dir.Path))
	if err != nil {
		return fmt.Errorf("the signal socket: %w", err)
	}
	go signal.Serve(ctx, ln, e.Deliver)
	return nil
}

// Deliver hands one `chorus signal` envelope to the agent its sender
// (peer, as the kernel names it) belongs to: the agent's own process, one
// of its descendants, or a process still in the agent's session (a
// background command whose shell has exited). That is what authenticates
// a signal: an agent can read a sibling's key from /proc, it cannot place
// a process in the sibling's tree or session. A process that left with
// setsid belongs to no agent. The envelope must name that agent and
// its task; anything else is refused with an EvSignalRejected event and
// the returned error, which the sender is shown. A person's shell is in
// no agent's tree: a person moves tasks with the TUI or `chorus task`.
func (e *Engine) Deliver(ctx context.Context, env signal.Envelope, peer signal.Peer) error {
	// The sender's ancestry is read outside the loop: /proc reads.
	chain := ptyproc.Ancestry(peer.PID)
	if sid, err := ptyproc.SessionOf(peer.PID); err == nil && sid > 0 {
		chain = append(chain, sid) // agents lead their sessions
	}
	var refusal error
	var wait []chan struct{}
	deliver := func(last bool) func() {
		return func() {
			refusal, wait = nil, nil
			r := e.runOfProcess(chain)
			if r == nil && !last {
				// An agent that has just started can signal before its
				// supervisor knows its pid: judge again once it does.
				for _, run := range e.runs {
					if ch, ok := spawning.Load(run); ok {
						wait = append(wait, ch.(chan struct{}))
					}
				}
				if len(wait) > 0 {
					return
				}
			}
			refusal = e.deliverTo(r, env, peer)
		}
	}
	if err := e.do(ctx, deliver(false)); err != nil {
		return err
	}
	if len(wait) == 0 {
		return refusal
	}
	for _, ch := range wait {
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Second):
		}
	}
	if err := e.do(ctx, deliver(true)); err != nil {
		return err
	}
	return refusal
}

// spawning holds, for each run starting a process, a channel closed once
// the process is known (agentRun.starting).
var spawning sync.Map // *agentRun → chan struct{}

// starting marks the run as starting a process until the returned func
// (idempotent) is called, once its pid is stored.
func (r *agentRun) starting() func() {
	ch := make(chan struct{})
	spawning.Store(r, ch)
	var once sync.Once
	return func() {
		once.Do(func() {
			spawning.CompareAndDelete(r, ch)
			close(ch)
		})
	}
}

// deliverTo judges an envelope from a process of r (nil: of no agent) and
// applies it, returning why it was refused. Loop only.
func (e *Engine) deliverTo(r *agentRun, env signal.Envelope, peer signal.Peer) error {
	var refusal error
	reject := func(why string) {
		refusal = errors.New(why)
		e.emit(Event{Kind: EvSignalRejected, Agent: env.AgentID, Task: env.TaskID, Text: why,
			Fields: map[string]any{"signal": env.Signal.String(), "senderPid": peer.PID, "senderDir": env.Dir}})
	}
	switch {
	case r == nil:
		reject(fmt.Sprintf("process %d is not one of a running agent's processes: only an agent (or a command it runs) can signal for its task; a person moves tasks with the TUI or `chorus task`", peer.PID))
		return refusal
	case env.AgentID != r.id:
		reject(fmt.Sprintf("sent by a process of agent %s, not of agent %s: an agent can only signal for itself", r.id, env.AgentID))
		return refusal
	case env.TaskID != r.taskID:
		reject(fmt.Sprintf("agent %s works on %s, not %s", r.id, r.taskID, env.TaskID))
		return refusal
	case r.seenSignals[env.ID]:
		return nil // the same envelope again: already applied
	}
	s, err := signal.Parse(env.Signal.String())
	if err != nil {
		e.emit(Event{Kind: EvError, Agent: r.id, Task: r.taskID, Text: "ignored signal: " + err.Error()})
		return err
	}
	if r.seenSignals == nil || len(r.seenSignals) >= maxSeenSignals {
		r.seenSignals = map[string]bool{}
	}
	r.seenSignals[env.ID] = true
	if q := env.Question; q != nil && s.Type == signal.NeedsHelp {
		// `chorus ask` waits for its answer itself: record the
		// question, and leave the agent's turn alone.
		if err := e.recordQuestion(r, s.Payload, q.ID, q.Options); err != nil {
			e.emit(Event{Kind: EvError, Agent: r.id, Task: r.taskID, Text: "recording a question: " + err.Error()})
		}
		return nil
	}
	e.dirty = false // nothing in State changed
	if a := e.st.Agents[r.id]; a != nil && r.hostRunner != nil {
		// Durable before the agent hears "taken": a hosted agent carries
		// on without resending it if this engine dies now.
		a.Signal = &s
		if err := e.saveState(); err != nil {
			e.emit(Event{Kind: EvError, Agent: r.id, Task: r.taskID, Text: "writing state.json: " + err.Error()})
		}
	}
	// Never block the loop on a busy supervisor.
	go r.send(turnEvent{sig: &s, gen: -1, source: "signal"})
	return nil
}

// runOfProcess is the running agent whose own process is in chain (a
// process, its ancestors nearest first, and its session's leader),
// checked against the process's start time so a reused pid is no one's.
// Loop only.
func (e *Engine) runOfProcess(chain []int) *agentRun {
	for _, pid := range chain {
		for _, r := range e.runs {
			if p := r.proc.Load(); p != nil && p.Pid() == pid && ptyproc.Alive(pid, p.StartTime()) {
				return r
			}
		}
	}
	return nil
}

// publishKey makes the run's key known to `chorus signal` (as a hash) for
// as long as the run lasts; the returned func retires it.
func (r *agentRun) publishKey() (func(), error) {
	dir := r.e.opt.Dir.Path
	if err := signal.PublishKey(dir, r.id, r.key); err != nil {
		return func() {}, fmt.Errorf("publishing the agent's signal key: %w", err)
	}
	return func() { _ = signal.RetireKey(dir, r.id) }, nil
}
