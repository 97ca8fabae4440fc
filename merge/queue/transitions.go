package queue

import (
	"fmt"
	"sync"
)

// transitions is every status change an item may make: the worker's path
// (pending → merging → testing → landing → landed, with conflict and
// resolving on the way), the ways back to pending (a failed attempt, a
// target that moved, a crash, a person's retry), the waits for a person,
// and rollback (landed → reverted). A person stopping a resolver whose
// work is queued turns any item not landed back to resolving while the
// resolution is undone. Staying in a status is always allowed.
// Queueing a finished task again makes a new item and is no transition.
// Built on first use, not at package init, which every command runs.
var transitions = sync.OnceValue(func() map[Status][]Status {
	return map[Status][]Status{
		StatusPending: {StatusMerging, StatusResolving, StatusWaitingHuman, StatusHeld, StatusFailed},
		// A tested candidate from an earlier attempt goes from merging
		// straight to approval or landing.
		StatusMerging: {StatusPending, StatusTesting, StatusConflict, StatusResolving, StatusLanding,
			StatusLanded, StatusWaitingApproval, StatusWaitingHuman, StatusHeld, StatusFailed},
		StatusTesting: {StatusPending, StatusResolving, StatusLanding, StatusWaitingApproval,
			StatusWaitingHuman, StatusHeld, StatusFailed},
		// The medium tier's rebase clears a conflict: merging again.
		StatusConflict:        {StatusPending, StatusMerging, StatusResolving, StatusWaitingHuman, StatusFailed},
		StatusResolving:       {StatusPending, StatusConflict, StatusWaitingHuman, StatusFailed},
		StatusLanding:         {StatusPending, StatusResolving, StatusLanded, StatusHeld, StatusWaitingHuman, StatusFailed},
		StatusWaitingApproval: {StatusPending, StatusResolving},
		StatusWaitingHuman:    {StatusPending, StatusResolving},
		StatusHeld:            {StatusPending, StatusResolving},
		StatusFailed:          {StatusPending, StatusResolving},
		StatusLanded:          {StatusReverted},
		StatusReverted:        {},
	}
})

// Check says whether an item may go from one status to another; the error
// names both, for a change no rule allows.
func Check(from, to Status) error {
	if from == to {
		return nil
	}
	for _, s := range transitions()[from] {
		if s == to {
			return nil
		}
	}
	return fmt.Errorf("merge queue: an item may not go from %q to %q", from, to)
}

// Move changes it's status when the table allows it, else leaves the item
// as it is and says why. Every status change goes through it.
func Move(it *Item, to Status) error {
	if err := Check(it.Status, to); err != nil {
		return err
	}
	it.Status = to
	return nil
}

// Statuses lists every status, in the worker's order.
func Statuses() []Status {
	return []Status{StatusPending, StatusMerging, StatusTesting, StatusConflict, StatusResolving,
		StatusWaitingHuman, StatusWaitingApproval, StatusHeld, StatusLanding, StatusLanded,
		StatusFailed, StatusReverted}
}
