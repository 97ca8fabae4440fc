package orchestrator

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/agent/signal"
)

// EvSignalRejected reports a `chorus signal` envelope the engine refused:
// unsigned, signed with another agent's key, for a task the agent does not
// work on, or from an agent that is not running.
const EvSignalRejected EventKind = "signal_rejected"

// maxSeenSignals bounds the envelope ids a run remembers against replays.
const maxSeenSignals = 1024

// RouteSignals delivers the envelopes `chorus signal` writes to
// .chorus/signals/ until ctx ends, acknowledging each once the engine has
// taken or refused it. Envelopes left from an earlier session were signed
// with keys that died with it: they are refused, never applied.
func (e *Engine) RouteSignals(ctx context.Context) error {
	ch, err := signal.Watch(ctx, e.opt.Dir.Path)
	if err != nil {
		return err
	}
	go func() {
		for env := range ch {
			if err := e.Deliver(ctx, env); err != nil && ctx.Err() != nil {
				return // not looked at: it is delivered again next time
			}
			_ = env.Ack()
		}
	}()
	return nil
}

// Deliver hands one `chorus signal` envelope to the agent it names, once
// its MAC verifies with that agent's key; anything else is refused with an
// EvSignalRejected event. The error is non-nil only when the engine could
// not look at it (ctx ended, engine stopped).
func (e *Engine) Deliver(ctx context.Context, env signal.Envelope) error {
	return e.do(ctx, func() {
		reject := func(why string) {
			e.emit(Event{Kind: EvSignalRejected, Agent: env.AgentID, Task: env.TaskID, Text: why,
				Fields: map[string]any{"signal": env.Signal.String(), "senderPid": env.PID, "senderDir": env.Dir}})
		}
		if env.Err != nil {
			reject(env.Err.Error())
			return
		}
		r := e.runs[env.AgentID]
		switch {
		case r == nil:
			reject(fmt.Sprintf("no running agent %s (signal left from an earlier run or session)", env.AgentID))
			return
		case env.MAC == "":
			reject("unsigned: only `chorus signal` run in the agent's own environment can signal")
			return
		case !env.Verify(r.key):
			reject(fmt.Sprintf("forged or stale: not signed with the key of agent %s", env.AgentID))
			return
		case env.TaskID != r.taskID:
			reject(fmt.Sprintf("agent %s works on %s, not %s", env.AgentID, r.taskID, env.TaskID))
			return
		case r.seenSignals[env.ID]:
			return // the same file delivered again: already applied
		}
		s, err := signal.Parse(env.Signal.String())
		if err != nil {
			e.emit(Event{Kind: EvError, Agent: env.AgentID, Task: env.TaskID, Text: "ignored signal: " + err.Error()})
			return
		}
		if r.seenSignals == nil || len(r.seenSignals) >= maxSeenSignals {
			r.seenSignals = map[string]bool{}
		}
		r.seenSignals[env.ID] = true
		if q := env.Question; q != nil && s.Type == signal.NeedsHelp {
			// `chorus ask` waits for its answer itself: record the
			// question, and leave the agent's turn alone.
			if err := e.recordQuestion(r, s.Payload, q.ID, q.Options); err != nil {
				e.emit(Event{Kind: EvError, Agent: env.AgentID, Task: env.TaskID, Text: "recording a question: " + err.Error()})
			}
			return
		}
		e.dirty = false // nothing in State changed
		// Never block the loop on a busy supervisor.
		go r.send(turnEvent{sig: &s, gen: -1, source: "signal"})
	})
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
