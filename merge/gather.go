package merge

import "time"

// Gathering: when the runnable items could start a batch with room left
// and agents whose checks are running will queue soon (agents finishing
// together), the integrator waits a short window for them, so the batch check
// runs once for all of them rather than once for the first ones and again
// for the rest.

// defaultGatherWindow bounds the wait before a lone candidate: long enough
// for checks that started together to finish together, short next to a
// quality check worth batching.
const defaultGatherWindow = 1500 * time.Millisecond

// gatherWait is how much longer the integrator waits before taking what is
// runnable: none unless batching applies to every runnable item, the batch
// has room, and another task is in its checks; then what is left of the
// window since the oldest runnable item was queued.
func gatherWait(batching bool, runnable, expected int, waited, window time.Duration) time.Duration {
	if !batching || runnable == 0 || runnable >= maxBatch || expected == 0 || window <= 0 || waited >= window {
		return 0
	}
	return window - waited
}

// Checking tells the service that the task's checks are running in its
// worktree (on) or are over (off): a lone candidate may wait for it. Enqueue
// clears it too.
func (s *Service) Checking(taskID string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		if s.checking == nil {
			s.checking = map[string]bool{}
		}
		s.checking[taskID] = true
		return
	}
	if s.checking[taskID] {
		delete(s.checking, taskID)
		s.poke() // the integrator, if waiting for this task, stops waiting
	}
}

// gatherLocked is how long the integrator waits before taking r.
func (s *Service) gatherLocked(r []*Item) time.Duration {
	if len(r) == 0 || len(r) >= maxBatch || len(s.checking) == 0 {
		return 0
	}
	batching := s.batchingLocked()
	in := map[string]bool{}
	oldest := r[0].EnqueuedAt
	for _, it := range r {
		batching = batching && s.batchableLocked(it)
		in[it.TaskID] = true
		if it.EnqueuedAt.Before(oldest) {
			oldest = it.EnqueuedAt
		}
	}
	expected := 0
	for id := range s.checking {
		if !in[id] {
			expected++
		}
	}
	return gatherWait(batching, len(r), expected, s.opt.Now().Sub(oldest), s.opt.GatherWindow)
}
