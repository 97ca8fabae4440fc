package merge

import (
	"context"

	"github.com/chorus-dev/chorus/hooks"
)

// runHook runs the hook for ev with the item as it is now; only pre-merge
// acts on the answer.
func (s *Service) runHook(ctx context.Context, ev hooks.Event, id string) hooks.Answer {
	if s.opt.Hook == nil {
		return hooks.Answer{Result: hooks.Continue}
	}
	it, ok := s.get(id)
	if !ok {
		return hooks.Answer{Result: hooks.Continue}
	}
	return s.opt.Hook(ctx, ev, it)
}

// preMergeBlocked runs the pre-merge hook before an attempt; a block holds
// the item with the hook's message until a person retries it, which asks
// the hook again.
func (s *Service) preMergeBlocked(ctx context.Context, it Item) bool {
	a := s.runHook(ctx, hooks.PreMerge, it.TaskID)
	if a.Result != hooks.Block {
		return false
	}
	msg := a.Message
	if msg == "" {
		msg = "it gave no reason"
	}
	s.hold(it.TaskID, "the pre-merge hook blocked this merge: "+msg,
		"deal with what the hook reports, then retry the merge of "+it.TaskID+" (the hook is asked again)")
	return true
}
