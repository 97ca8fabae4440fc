package merge

import (
	"context"

	"github.com/chorus-dev/chorus/hooks"
)

// runHook runs the hook for ev with the item as it is now; only pre-merge
// acts on the answer.
func (in *integrator) runHook(ctx context.Context, ev hooks.Event, id string) hooks.Answer {
	if in.q.opt.Hook == nil {
		return hooks.Answer{Result: hooks.Continue}
	}
	it, ok := in.q.get(id)
	if !ok {
		return hooks.Answer{Result: hooks.Continue}
	}
	return in.q.opt.Hook(ctx, ev, it)
}

// preMergeBlocked runs the pre-merge hook before an attempt; a block holds
// the item with the hook's message until a person retries it, which asks
// the hook again.
func (in *integrator) preMergeBlocked(ctx context.Context, it Item) bool {
	a := in.runHook(ctx, hooks.PreMerge, it.TaskID)
	if a.Result != hooks.Block {
		return false
	}
	msg := a.Message
	if msg == "" {
		msg = "it gave no reason"
	}
	in.q.hold(it.TaskID, "the pre-merge hook blocked this merge: "+msg,
		"deal with what the hook reports, then retry the merge of "+it.TaskID+" (the hook is asked again)")
	return true
}
