package merge

import (
	"context"
	"fmt"

	"github.com/chorus-dev/chorus/merge/queue"
)

// Outcomes other than landing: held, failed, waiting for a person.

// hold parks a tested candidate that cannot land now, with what to do.
func (s *Service) hold(id, why, action string) {
	s.move(id, StatusHeld, func(it *Item, _ *Stats) {
		it.LastError, it.Action = why, action
	})
	s.emit(Event{Kind: EventHeld, TaskID: id, Message: why + " — " + action})
}

// fail marks an item failed (it needs a person to fix something outside
// the merge, e.g. a missing branch).
func (s *Service) fail(id, why, action string) {
	s.move(id, StatusFailed, func(it *Item, _ *Stats) {
		it.LastError, it.Action = why, action
	})
	s.emit(Event{Kind: EventFailed, TaskID: id, Message: why})
}

// waitHuman hands an item to a person: it stays queued (also across
// restarts) until Retry, Drop or a rollback.
func (s *Service) waitHuman(id, why, explanation, action string, files []string) {
	s.waitHumanWhen(id, nil, why, explanation, action, files)
}

// waitHumanWhen is waitHuman applied only while ok holds for the item.
func (s *Service) waitHumanWhen(id string, ok func(*Item) bool, why, explanation, action string, files []string) {
	if !s.apply(id, ok, StatusWaitingHuman, func(it *Item, _ *Stats) {
		it.LastError, it.Action = why, action
		if explanation != "" {
			it.Explanation = explanation
		}
		if files != nil {
			it.ConflictFiles = files
		}
	}) {
		return
	}
	s.emit(Event{Kind: EventWaitingHuman, TaskID: id, Message: why, Files: files})
}

// attemptFailed counts a failed attempt; the item goes to the back of the
// queue, or to a person after the configured number of attempts.
func (s *Service) attemptFailed(ctx context.Context, id, why string) {
	s.attemptFailedWhen(ctx, id, nil, why)
}

// attemptFailedWhen is attemptFailed applied only while ok holds.
func (s *Service) attemptFailedWhen(ctx context.Context, id string, ok func(*Item) bool, why string) {
	it, _ := s.get(id)
	if ctx.Err() != nil {
		s.apply(id, ok, StatusPending, nil)
		return
	}
	if queue.GiveUp(it.Retries, s.maxTries) {
		s.apply(id, ok, "", func(it *Item, _ *Stats) { it.Retries++ })
		s.waitHumanWhen(id, ok, why, "", s.manualAction(it), nil)
		return
	}
	if !s.apply(id, ok, StatusPending, func(it *Item, st *Stats) {
		it.Retries++
		it.LastError = why
		it.Seq = st.NextSeq
		st.NextSeq++
	}) {
		return
	}
	s.emit(Event{Kind: EventFailed, TaskID: id, Message: why})
}

func (s *Service) manualAction(it Item) string {
	where := it.Worktree
	if where == "" {
		where = "a checkout of " + it.Branch
	}
	return fmt.Sprintf("in %s run `git merge %s`, resolve, make the quality commands pass, commit, then retry %s", where, s.opt.Target, it.TaskID)
}
