package orchestrator

import (
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
)

// EvNearMiss records a turn that ended on a <chorus> tag that did not
// count (signal.Verdict.NearMiss): what the agent wrote and why it was not
// taken as a signal.
const EvNearMiss EventKind = "signal_near_miss"

// nearMiss reports a near miss read from the agent's structured output
// (source "events" or "transcript") of process generation gen, and hands
// it to the supervisor, which asks the agent to confirm.
func (r *agentRun) nearMiss(v signal.Verdict, source string, gen int) {
	r.event(EvNearMiss, "tag not counted: "+v.Missed.Raw+" ("+v.Reason+")",
		map[string]any{"tag": v.Missed.Raw, "reason": v.Reason, "source": source})
	r.send(turnEvent{miss: &v, gen: gen, source: source, at: time.Now()})
}

// EvNudge records a question Chorus asked an agent whose turn ended
// without a signal that counts: Fields "nudge" (the task's count so far),
// "why" (what Chorus saw) and "channel" (typed or handover).
const EvNudge EventKind = "nudge"

// Nudges: how long Chorus waits before asking. A near miss waits for a
// `chorus signal` still in transit (the agent may have run it as well);
// a turn that ended with nothing waits a little longer for the agent to
// go on by itself.
const (
	missGrace = 2 * time.Second
	idleGrace = 8 * time.Second
)

// missText is the question for a near miss: what Chorus saw, and how to
// finish for sure.
func missText(v signal.Verdict) string {
	return fmt.Sprintf("Your last message ended with %s, which Chorus did not count as a signal (%s). "+
		"If the task is done, run `chorus signal %s` now; if it is not, keep working.", v.Missed.Raw, v.Reason, v.Missed.Signal.Type)
}

// idleText is the question for a turn that ended with no signal.
const idleText = "Your turn ended and Chorus saw no completion signal. If the task is done, run `chorus signal COMPLETE` now; if it is not, keep working."

// nudged records a question asked of the agent in the session log and the
// task's ledger.
func (r *agentRun) nudged(t beads.Task, n int, why, channel string) {
	r.event(EvNudge, why, map[string]any{"nudge": n, "channel": channel})
	r.ledgerLine(t, fmt.Sprintf("nudge %d (%s): %s", n, channel, why))
}
