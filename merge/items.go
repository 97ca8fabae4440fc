package merge

import (
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/merge/queue"
)

// Queue bookkeeping: finding, ordering and changing items, publishing
// and saving the queue (the Locked functions: callers hold mu).

func (s *Service) findLocked(id string) *Item { return queue.Find(s.items, id) }

func (s *Service) removeLocked(id string) {
	out := s.items[:0:0]
	for _, it := range s.items {
		if it.TaskID != id {
			out = append(out, it)
		}
	}
	s.items = out
}

// blockedLocked names an unmerged dependency still in the queue, if any.
func (s *Service) blockedLocked(it *Item) string { return queue.Blocked(s.items, it) }

// runnableLocked returns the items the integrator may take, in its order
// (queue.Runnable); none while the queue is paused.
func (s *Service) runnableLocked() []*Item {
	if s.stats.Paused {
		return nil
	}
	return queue.Runnable(s.items)
}

// work is what the integrator takes from the queue: an item (alone or
// heading a batch), or why there is none.
type work struct {
	id       string
	batch    []string
	gather   time.Duration // a lone candidate waits this long for others (gather.go)
	idle     bool
	draining bool
	waiting  []Item // for a person, when idle
}

// take hands the integrator the next item or batch in the queue's order,
// marking it current until release.
func (s *Service) take() work {
	s.mu.Lock()
	defer s.mu.Unlock()
	var w work
	r := s.runnableLocked()
	if d := s.gatherLocked(r); d > 0 {
		w.gather = d
	} else if len(r) > 0 {
		w.id = r[0].TaskID
		s.current, s.curFence = w.id, r[0].Fence
		if w.batch = s.batchLocked(r); w.batch != nil {
			s.batch = map[string]bool{}
			for _, b := range w.batch {
				s.batch[b] = true
			}
		}
		s.publishLocked()
	}
	w.idle = w.id == "" && s.idleLocked()
	w.draining = s.draining
	w.waiting = s.waitingLocked()
	return w
}

// release ends the integrator's hold on its current item or batch.
func (s *Service) release() {
	s.mu.Lock()
	s.current, s.batch = "", nil
	s.freeAt = s.opt.Now()
	s.publishLocked()
	s.mu.Unlock()
}

// reconciling says the queue was restored and what a crash left is not
// settled yet.
func (s *Service) reconciling() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reconcile
}

// nextCleanups lists the landed items not cleaned up yet (at most a
// batch's worth), oldest first.
func (s *Service) nextCleanups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return queue.Cleanups(s.items, maxCleanupBatch)
}

// maxCleanupBatch bounds one clean-up pass, so a long backlog (after a
// restart) still reports progress as it goes.
const maxCleanupBatch = 32

// markCleaned records the clean-up of landed items in one save; only the
// landing that was cleaned up counts (the task may have been rolled back
// or queued again meanwhile).
func (s *Service) markCleaned(items []Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var marked []*Item
	for _, c := range items {
		it := s.findLocked(c.TaskID)
		if it == nil || s.fencedLocked(it) || it.Status != StatusLanded || it.Seq != c.Seq || it.Cleaned {
			continue
		}
		it.Cleaned, it.UpdatedAt = true, s.opt.Now()
		marked = append(marked, it)
	}
	if len(marked) == 0 {
		return
	}
	if err := s.saveLocked(); err != nil {
		for _, it := range marked {
			it.Cleaned = false
		}
		s.stats.Paused = true
		s.stats.PauseReason = "could not save the merge queue: " + err.Error()
		s.publishLocked()
		s.emit(Event{Kind: EventPaused, TaskID: marked[0].TaskID, Message: s.stats.PauseReason})
	}
}

// publishLocked refreshes the lock-free snapshot and signals Changed.
func (s *Service) publishLocked() {
	items := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, *it)
	}
	queue.SortForDisplay(items)
	st := s.stats
	st.Lost = append([]string(nil), st.Lost...)
	st.Reverted = append([]string(nil), st.Reverted...)
	s.snap.Store(&Snapshot{Items: items, Stats: st, Current: s.current, Idle: s.idleLocked()})
	s.wakeLandingLocked()
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

func (s *Service) publish() {
	s.mu.Lock()
	s.publishLocked()
	s.mu.Unlock()
}

// saveLocked publishes and persists the whole queue.
func (s *Service) saveLocked() error {
	s.publishLocked()
	if s.persist == nil {
		return nil
	}
	items := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, *it)
	}
	st := s.stats
	st.Lost = append([]string(nil), st.Lost...)
	st.Reverted = append([]string(nil), st.Reverted...)
	return s.persist(items, st)
}

// step applies f to an item (and the stats) and persists; f changes no
// status (move does, through the transition table). On a persist error
// the change is undone and the queue pauses: without a saved state Chorus
// must not move refs.
func (s *Service) step(id string, f func(it *Item, st *Stats)) bool {
	return s.apply(id, nil, "", f)
}

// move is step with a change of status to to, which queue.Move checks
// against the table: a refused change leaves the item as it was.
func (s *Service) move(id string, to Status, f func(it *Item, st *Stats)) bool {
	return s.apply(id, nil, to, f)
}

// apply is step (to == "") or move applied only while ok holds for the
// item (nil: always).
func (s *Service) apply(id string, ok func(*Item) bool, to Status, f func(it *Item, st *Stats)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(id)
	if it == nil || s.fencedLocked(it) || (ok != nil && !ok(it)) {
		return false
	}
	old, oldStats := *it, s.stats
	if f != nil {
		f(it, &s.stats)
	}
	err := queue.Check(old.Status, it.Status) // f may change it only through queue's policies
	if err == nil && to != "" {
		err = queue.Move(it, to)
	}
	if err != nil {
		*it, s.stats = old, oldStats
		s.refusedLocked(id, err)
		return false
	}
	it.UpdatedAt = s.opt.Now()
	if err := s.saveLocked(); err != nil {
		*it, s.stats = old, oldStats
		s.stats.Paused = true
		s.stats.PauseReason = "could not save the merge queue: " + err.Error()
		s.publishLocked()
		s.emit(Event{Kind: EventPaused, TaskID: id, Message: s.stats.PauseReason})
		return false
	}
	return true
}

// moveAll is move for several items with one save: each change is
// checked as move checks it (a refused one leaves its item as it was and
// is false in the result); when the save fails, all are undone and the
// queue pauses. A batch's items move together, one fsync for them all.
func (s *Service) moveAll(ids []string, to Status, f func(it *Item, st *Stats)) []bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	moved := make([]bool, len(ids))
	type undo struct {
		it  *Item
		old Item
	}
	var undos []undo
	before := s.stats
	for i, id := range ids {
		it := s.findLocked(id)
		if it == nil || s.fencedLocked(it) {
			continue
		}
		old, oldStats := *it, s.stats
		if f != nil {
			f(it, &s.stats)
		}
		err := queue.Check(old.Status, it.Status)
		if err == nil {
			err = queue.Move(it, to)
		}
		if err != nil {
			*it, s.stats = old, oldStats
			s.refusedLocked(id, err)
			continue
		}
		it.UpdatedAt = s.opt.Now()
		undos, moved[i] = append(undos, undo{it, old}), true
	}
	if len(undos) == 0 {
		return moved
	}
	if err := s.saveLocked(); err != nil {
		for _, u := range undos {
			*u.it = u.old
		}
		s.stats = before
		s.stats.Paused = true
		s.stats.PauseReason = "could not save the merge queue: " + err.Error()
		s.publishLocked()
		s.emit(Event{Kind: EventPaused, TaskID: undos[0].it.TaskID, Message: s.stats.PauseReason})
		return make([]bool, len(ids))
	}
	return moved
}

// mark changes a transient status of the integrator (merging, testing, resolving)
// and publishes it without persisting: a restart turns those back into
// pending anyway, and every persist costs the engine an fsync.
func (s *Service) mark(id string, st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.findLocked(id); it != nil && !s.fencedLocked(it) && s.moveLocked(it, st) {
		it.UpdatedAt = s.opt.Now()
		s.publishLocked()
	}
}

// markWith is mark after f, which sets what goes with the status (no
// status itself): published, not persisted; the move that follows saves
// it all. A refused change leaves the item as it was.
func (s *Service) markWith(id string, to Status, f func(it *Item)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(id)
	if it == nil || s.fencedLocked(it) {
		return false
	}
	old := *it
	f(it)
	if it.Status != old.Status || !s.moveLocked(it, to) {
		*it = old
		return false
	}
	it.UpdatedAt = s.opt.Now()
	s.publishLocked()
	return true
}

// moveLocked changes it's status when the transition table allows it.
func (s *Service) moveLocked(it *Item, to Status) bool {
	if err := queue.Move(it, to); err != nil {
		s.refusedLocked(it.TaskID, err)
		return false
	}
	return true
}

// refusedTransitions counts status changes the table refused: each is a
// fault in the service (the merge tests fail on any).
var refusedTransitions atomic.Int64

// refusedLocked reports a status change the table refused; the item keeps
// its status.
func (s *Service) refusedLocked(id string, err error) {
	refusedTransitions.Add(1)
	s.emit(Event{Kind: EventFailed, TaskID: id, Message: err.Error()})
}

// fencedLocked reports that the integrator's item was fenced off (its resolver
// stopped) after the integrator took it: the integrator must not change it any more.
func (s *Service) fencedLocked(it *Item) bool {
	return it.TaskID == s.current && it.Fence != s.curFence
}

// fenceIs is apply's condition for work started under fence: nothing
// changes once the item's fence moved on (its resolver was stopped).
func fenceIs(fence uint64) func(*Item) bool { return func(it *Item) bool { return it.Fence == fence } }

func (s *Service) get(id string) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.findLocked(id); it != nil {
		return *it, true
	}
	return Item{}, false
}

func (s *Service) statsCopy() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Service) phase(p string) {
	if s.hook != nil {
		s.hook(p)
	}
}

// pause stops the queue until Resume, with a reason shown to the user.
func (s *Service) pause(reason string, lost []string) {
	s.mu.Lock()
	s.stats.Paused = true
	s.stats.PauseReason = reason
	if lost != nil {
		s.stats.Lost = lost
	}
	_ = s.saveLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventPaused, Message: reason, Files: lost})
}
