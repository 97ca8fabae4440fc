package merge

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/merge/queue"
)

// What callers ask of the queue: restore, enqueue, snapshots, and the
// commands a person gives (approve, retry, drop, accept the target).

// Restore loads the queue persisted by a previous run. What happened to an
// item caught in "landing" is decided by git ancestry when Run starts.
func (s *Service) Restore(items []Item, stats Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = nil
	for i := range items {
		it := items[i]
		s.items = append(s.items, &it)
		if it.Seq >= stats.NextSeq {
			stats.NextSeq = it.Seq + 1
		}
	}
	s.stats = stats
	s.reconcile = true
	s.publishLocked()
	s.poke()
}

// Enqueue adds a finished branch to the queue. A task that already landed,
// was reverted or failed may be queued again; one still in the queue may not.
func (s *Service) Enqueue(r Request) error {
	if err := validTaskID(r.TaskID); err != nil {
		return err
	}
	if r.Branch == "" || strings.HasPrefix(r.Branch, "-") {
		return fmt.Errorf("merge: task %s: invalid branch %q", r.TaskID, r.Branch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Now()
	if old := s.findLocked(r.TaskID); old != nil {
		if !queue.Requeueable(old.Status) {
			return fmt.Errorf("merge: task %s is already queued (%s)", r.TaskID, old.Status)
		}
		s.removeLocked(r.TaskID)
	}
	it := &Item{Request: r, Status: StatusPending, EnqueuedAt: now, UpdatedAt: now, Seq: s.stats.NextSeq}
	it.DependsOn = append([]string(nil), r.DependsOn...)
	s.stats.NextSeq++
	s.items = append(s.items, it)
	s.checkedLocked(r.TaskID, now)
	if err := s.saveLocked(); err != nil {
		s.removeLocked(r.TaskID)
		s.stats.NextSeq--
		s.publishLocked()
		return err
	}
	s.emit(Event{Kind: EventEnqueued, TaskID: r.TaskID, Message: r.Branch})
	s.poke()
	s.restartForJoinersLocked()
	return nil
}

// Snapshot returns a copy of the queue; it never blocks on the integrator.
func (s *Service) Snapshot() Snapshot {
	p := s.snap.Load()
	if p == nil {
		return Snapshot{}
	}
	c := *p
	c.Items = append([]Item(nil), p.Items...)
	return c
}

// Changed fires (coalesced) after every change to the queue.
func (s *Service) Changed() <-chan struct{} { return s.changed }

// Events delivers notifications; when nobody reads, the oldest are dropped.
func (s *Service) Events() <-chan Event { return s.events }

// Delivered reports that a reader that has handled read events has seen
// every event emitted so far (or dropped unread). The snapshot's Idle can
// be published before the event that led to it is read: a reader deciding
// that all is done needs both.
func (s *Service) Delivered(read uint64) bool {
	dropped := s.dropped.Load() // first: emitted only grows, so this errs toward "in transit"
	return read+dropped >= s.emitted.Load()
}

// Idle reports that nothing can run: the queue is empty, paused, or holds
// only items that wait for a person (or for such an item, as a dependency).
func (s *Service) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleLocked()
}

func (s *Service) idleLocked() bool {
	if s.current != "" || s.reconcile || s.res.working() {
		return false
	}
	if s.stats.Paused {
		return true
	}
	if len(s.runnableLocked()) > 0 {
		return false
	}
	for _, it := range s.items {
		if it.Status == StatusLanded && !it.Cleaned {
			return false
		}
	}
	return true
}

// Drain tells Run that no more requests will come: it returns once the
// queue is idle — nil when everything landed, a *WaitingError listing the
// items that wait for a person otherwise (they stay queued for the next run).
// Headless runs use it to end instead of waiting for a human.
func (s *Service) Drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.poke()
}

// Waiting lists the items that wait for a person, with what to do.
func (s *Service) Waiting() []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitingLocked()
}

func (s *Service) waitingLocked() []Item {
	var out []Item
	for _, it := range s.items {
		switch it.Status {
		case StatusWaitingHuman, StatusWaitingApproval, StatusHeld, StatusFailed:
			out = append(out, *it)
		case StatusPending:
			if s.stats.Paused || s.blockedLocked(it) != "" {
				c := *it
				if s.stats.Paused {
					c.Action = "the queue is paused: " + s.stats.PauseReason + " — resume it when ready"
				} else {
					c.Action = "waits for " + s.blockedLocked(it)
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// Approve lets an item that waits for approval land (queue.Approve).
func (s *Service) Approve(taskID string) error { return s.human(taskID, queue.Approve) }

// Retry puts an item that waits for a person (or failed) back in the queue
// with a fresh attempt count (queue.Retry).
func (s *Service) Retry(taskID string) error { return s.human(taskID, queue.Retry) }

func (s *Service) human(taskID string, f func(*Item) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(taskID)
	if it == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTask, taskID)
	}
	if s.current == taskID || s.inBatchLocked(taskID) {
		return ErrBusy
	}
	old := *it
	if err := f(it); err != nil {
		return err
	}
	if err := queue.Check(old.Status, it.Status); err != nil {
		*it = old
		s.refusedLocked(taskID, err)
		return err
	}
	it.Human = true
	it.UpdatedAt = s.opt.Now()
	if err := s.saveLocked(); err != nil {
		*it = old
		s.publishLocked()
		return err
	}
	s.poke()
	return nil
}

// Drop removes an item from the queue. Its branch and worktree stay.
func (s *Service) Drop(taskID string) error {
	s.mu.Lock()
	it := s.findLocked(taskID)
	if it == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownTask, taskID)
	}
	if s.current == taskID || s.inBatchLocked(taskID) || !queue.Droppable(it) || s.res.job(taskID) != nil {
		s.mu.Unlock()
		return ErrBusy
	}
	old := append([]*Item(nil), s.items...)
	s.removeLocked(taskID)
	if err := s.saveLocked(); err != nil {
		s.items = old
		s.publishLocked()
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	_ = s.in.refTxn(ctx, "delete "+candidateRef(taskID))
	return nil
}

// Resume restarts a paused queue, taking the target's current tip as the new
// baseline (see AcceptTarget).
func (s *Service) Resume() error { return s.AcceptTarget("") }

// AcceptTarget releases a hold: the target's current tip becomes the
// verified baseline the queue lands on. A person calls it after checking a
// tip that moved outside the service; when tip is given and the target has
// moved on from it since, nothing changes and the error says so.
func (s *Service) AcceptTarget(tip string) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	cur, err := s.readTarget()
	if err != nil {
		return err
	}
	if tip != "" && !strings.HasPrefix(cur, tip) {
		return fmt.Errorf("%s moved again, to %s: look at it, then accept that tip", s.opt.Target, short(cur))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.stats
	s.stats.Paused, s.stats.PauseReason, s.stats.TargetTip, s.stats.Moved = false, "", cur, nil
	s.stats.Lost = nil
	// When the tip changed, branches that wait because of the old one (a
	// conflict for a person, a held candidate) are queued again against
	// the new one, from the medium tier on.
	saved := map[*Item]Item{}
	var requeued []string
	for _, it := range s.items {
		before := *it
		it.Recoveries = 0
		if old.TargetTip != cur && queue.Requeue(it) {
			it.Seq = s.stats.NextSeq
			s.stats.NextSeq++
			requeued = append(requeued, it.TaskID)
		}
		saved[it] = before
	}
	if err := s.saveLocked(); err != nil {
		s.stats = old
		for it, before := range saved {
			*it = before
		}
		s.publishLocked()
		return err
	}
	msg := s.opt.Target + " accepted at " + short(cur) + "; the queue runs again"
	if len(requeued) > 0 {
		msg += "; queued again against it: " + strings.Join(requeued, ", ")
	}
	s.emit(Event{Kind: EventResumed, Commit: cur, Message: msg, Files: requeued})
	s.poke()
	return nil
}

// Objects shares the service's object store with another user of the
// repository (one cat-file for both), who closes it when done.
func (s *Service) Objects() *gitx.ObjectStore { return s.in.objs.Share() }
