package queue

import (
	"errors"
	"fmt"
	"sort"
)

// Boost is the priority boost of the ordering rules: P0/P1 +100, P2 +50
// (Beads priorities, 0 is the most urgent).
func Boost(p int) int {
	switch {
	case p <= 1:
		return 100
	case p == 2:
		return 50
	}
	return 0
}

// Find returns the item of task id, or nil.
func Find(items []*Item, id string) *Item {
	for _, it := range items {
		if it.TaskID == id {
			return it
		}
	}
	return nil
}

// Blocked names an unmerged dependency of it still in the queue, if any.
// Dependencies not in the queue are taken as merged earlier.
func Blocked(items []*Item, it *Item) string {
	for _, d := range it.DependsOn {
		if dep := Find(items, d); dep != nil && dep.Status != StatusLanded {
			return d
		}
	}
	return ""
}

// Runnable returns the pending items whose dependencies have landed, in
// the order the worker takes them: priority boost, then FIFO (Seq).
func Runnable(items []*Item) []*Item {
	var r []*Item
	for _, it := range items {
		if it.Status == StatusPending && Blocked(items, it) == "" {
			r = append(r, it)
		}
	}
	sort.SliceStable(r, func(i, j int) bool {
		if bi, bj := Boost(r[i].Priority), Boost(r[j].Priority); bi != bj {
			return bi > bj
		}
		return r[i].Seq < r[j].Seq
	})
	return r
}

// rank groups statuses for display: work in progress, then the queue,
// then what waits for a person, failures, and history.
// A switch, not a map: a map literal is built at package init.
func rank(s Status) int {
	switch s {
	case StatusPending:
		return 1
	case StatusWaitingApproval, StatusHeld, StatusWaitingHuman:
		return 2
	case StatusFailed:
		return 3
	case StatusLanded, StatusReverted:
		return 4
	}
	return 0 // landing, merging, testing, resolving, conflict (and unknown, as the map gave)
}

// SortForDisplay orders a copy of the queue for front ends: work in
// progress first, then pending items in the worker's order, items waiting
// for a person, failures, and the history by landing time.
func SortForDisplay(items []Item) {
	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := rank(items[i].Status), rank(items[j].Status)
		if ri != rj {
			return ri < rj
		}
		if ri == 4 {
			return items[i].LandedAt.Before(items[j].LandedAt)
		}
		if bi, bj := Boost(items[i].Priority), Boost(items[j].Priority); bi != bj && ri == 1 {
			return bi > bj
		}
		return items[i].Seq < items[j].Seq
	})
}

// Cleanups lists the landed items not cleaned up yet, at most max, in
// queue order.
func Cleanups(items []*Item, max int) []string {
	var ids []string
	for _, it := range items {
		if it.Status == StatusLanded && !it.Cleaned {
			ids = append(ids, it.TaskID)
			if len(ids) == max {
				break
			}
		}
	}
	return ids
}

// Requeueable says whether a task whose item has status st may be queued
// again (a new item replacing it): only once it is finished.
func Requeueable(st Status) bool {
	return st == StatusLanded || st == StatusReverted || st == StatusFailed
}

// GiveUp says whether a failed attempt, after retries earlier ones, is the
// last one allowed (max attempts): the item then waits for a person
// instead of going to the back of the queue.
func GiveUp(retries, max int) bool { return retries+1 >= max }

// ErrBadState is returned for a command the item's status does not allow.
var ErrBadState = errors.New("task is not in a state that allows this")

// Approve lets an item that waits for approval land.
func Approve(it *Item) error {
	if it.Status != StatusWaitingApproval {
		return fmt.Errorf("%w: %s is %s", ErrBadState, it.TaskID, it.Status)
	}
	if err := Move(it, StatusPending); err != nil {
		return err
	}
	it.Approved = true
	it.Action = ""
	return nil
}

// Retry puts an item that waits for a person (or failed) back in the
// queue with a fresh attempt count; a held item keeps its tested
// candidate, any other forgets its candidate and a resolver's branch (the
// person fixed the task branch).
func Retry(it *Item) error {
	switch it.Status {
	case StatusWaitingHuman, StatusHeld, StatusFailed, StatusConflict, StatusWaitingApproval:
	default:
		return fmt.Errorf("%w: %s is %s", ErrBadState, it.TaskID, it.Status)
	}
	held := it.Status == StatusHeld
	if err := Move(it, StatusPending); err != nil {
		return err
	}
	if !held {
		it.MergeRef, it.ResolvedFrom = "", ""
		it.Candidate, it.Tested = "", false
	}
	it.Retries = 0
	it.Recoveries = 0
	it.Deferrals, it.ConflictTip = 0, ""
	it.Action = ""
	return nil
}

// Droppable says whether an item may leave the queue by a person's
// command, as far as its status goes: not while it lands.
func Droppable(it *Item) bool { return it.Status != StatusLanding }
