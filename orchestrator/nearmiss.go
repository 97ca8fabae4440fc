package orchestrator

import "github.com/chorus-dev/chorus/agent/signal"

// EvNearMiss records a turn that ended on a <chorus> tag that did not
// count (signal.Verdict.NearMiss): what the agent wrote and why it was not
// taken as a signal.
const EvNearMiss EventKind = "signal_near_miss"

// nearMiss reports a near miss read from the agent's structured output
// (source "events" or "transcript").
func (r *agentRun) nearMiss(v signal.Verdict, source string) {
	r.event(EvNearMiss, "tag not counted: "+v.Missed.Raw+" ("+v.Reason+")",
		map[string]any{"tag": v.Missed.Raw, "reason": v.Reason, "source": source})
}
