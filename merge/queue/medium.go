package queue

// The medium conflict tier: a conflicted branch is first rebased onto the
// target's tip (the result, when every commit applies, becomes the
// candidate's tree); when that fails too, the item goes to the back of the
// queue and is retried against the tip the target has then, up to
// MaxDeferrals times, before a resolver agent or a person.

// MaxDeferrals is how many conflicts in a row the medium tier takes before
// the conflict goes to an agent or a person (the spec's "after 3 retries
// without resolution: escalate").
const MaxDeferrals = 3

// MediumAction is what to do with a conflict.
type MediumAction int

// Medium actions.
const (
	// MediumRebase: rebase the branch onto the tip and retry with the
	// result; if it does not apply, Defer.
	MediumRebase MediumAction = iota
	// MediumEscalate: the medium tier is spent; an agent or a person
	// resolves.
	MediumEscalate
)

func (a MediumAction) String() string {
	if a == MediumEscalate {
		return "escalate"
	}
	return "rebase"
}

// Medium decides what a conflict of it against the target's tip gets:
// escalation once MaxDeferrals conflicts were met, or when the target has
// not moved since the last one (a retry would meet the same conflict);
// otherwise a rebase and retry.
func Medium(it *Item, tip string) MediumAction {
	if it.Deferrals >= MaxDeferrals || (it.Deferrals > 0 && it.ConflictTip == tip) {
		return MediumEscalate
	}
	return MediumRebase
}

// Defer sends a conflicted item to the back of the queue (seq is the next
// FIFO position), remembering the tip it conflicted with. An item whose
// status may not go back to pending is left as it is.
func Defer(it *Item, tip string, seq uint64) error {
	if err := Move(it, StatusPending); err != nil {
		return err
	}
	it.Deferrals++
	it.ConflictTip = tip
	it.Seq = seq
	return nil
}

// Requeue puts an item that waits because of the old target (a conflict
// for a person, a held candidate) back in the queue after a person
// accepted a new target tip: it is merged, rebased and retried against
// the new tip from the start. It says whether it changed the item.
func Requeue(it *Item) bool {
	conflicted := (it.Status == StatusWaitingHuman || it.Status == StatusConflict) && len(it.ConflictFiles) > 0
	if it.Status != StatusHeld && !conflicted || Move(it, StatusPending) != nil {
		return false
	}
	if conflicted {
		it.MergeRef, it.ResolvedFrom = "", ""
	}
	it.Candidate, it.Tested = "", false
	it.Retries, it.Recoveries, it.Deferrals, it.ConflictTip = 0, 0, 0, ""
	it.Action = ""
	return true
}
