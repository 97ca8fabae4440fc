package merge

import "time"

// Gathering: when the runnable items could start a batch with room left
// and agents whose checks are running will queue soon (agents finishing
// together), the integrator waits for them, so the batch check runs once
// for all of them rather than once for the first ones and again for the
// rest.

// defaultGatherWindow is the least a lone candidate waits for tasks in
// their checks: long enough for checks that started together to finish
// together; longer when checks are long (gatherWait).
const defaultGatherWindow = 1500 * time.Millisecond

// gatherState is what the gathering policy decides on.
type gatherState struct {
	batching bool // batching applies to every runnable item
	runnable int
	// waited is how long a batch could have started already: since the
	// oldest runnable item was queued or the integrator was last free,
	// whichever is later (items queued behind a running batch have not
	// been gathering).
	waited time.Duration
	// inChecks is how long each task that may join has been in its checks.
	inChecks []time.Duration
	// check is how long a passing check took in a worktree, last time
	// (0: not measured yet).
	check  time.Duration
	window time.Duration // the least wait; <= 0: gathering off
}

// gatherWait is how much longer the integrator waits before taking what is
// runnable. None unless batching applies, the batch has room and a task in
// its checks is expected to queue within the limit: the window, or a
// check's length when that is longer. A task that misses the batch waits
// for its check and then runs one of its own; waiting for it costs the
// items queued less than that, and they all land together. A task slower
// than the last check (a loaded machine) is still expected until the
// limit. With no check measured yet, every task in its checks is expected
// within the window.
func gatherWait(g gatherState) time.Duration {
	if !g.batching || g.runnable == 0 || g.runnable >= maxBatch || len(g.inChecks) == 0 || g.window <= 0 {
		return 0
	}
	limit := max(g.window, g.check)
	if g.waited >= limit {
		return 0
	}
	for _, in := range g.inChecks {
		if g.check == 0 || g.waited+max(g.check-in, 0) <= limit {
			return limit - g.waited
		}
	}
	return 0
}

// Checking tells the service that the task's checks are running in its
// worktree (on) or are over (off): a lone candidate may wait for it. Enqueue
// clears it too, measuring the check's length.
func (s *Service) Checking(taskID string, on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if on {
		if s.checking == nil {
			s.checking = map[string]time.Time{}
		}
		s.checking[taskID] = s.opt.Now()
		return
	}
	if _, ok := s.checking[taskID]; ok {
		delete(s.checking, taskID)
		s.poke() // the integrator, if waiting for this task, stops waiting
	}
}

// checkedLocked ends the task's mark as it queues: its check passed, and
// its length is the next estimate.
func (s *Service) checkedLocked(taskID string, now time.Time) {
	if start, ok := s.checking[taskID]; ok {
		s.checkLen = now.Sub(start)
		delete(s.checking, taskID)
	}
}

// gatherLocked is how long the integrator waits before taking r.
func (s *Service) gatherLocked(r []*Item) time.Duration {
	if len(r) == 0 || len(r) >= maxBatch || len(s.checking) == 0 {
		return 0
	}
	now := s.opt.Now()
	g := gatherState{batching: s.batchingLocked(), runnable: len(r), check: s.checkLen, window: s.opt.GatherWindow}
	in := map[string]bool{}
	since := r[0].EnqueuedAt
	for _, it := range r {
		g.batching = g.batching && s.batchableLocked(it)
		in[it.TaskID] = true
		if it.EnqueuedAt.Before(since) {
			since = it.EnqueuedAt
		}
	}
	if s.freeAt.After(since) {
		since = s.freeAt
	}
	g.waited = now.Sub(since)
	for id, start := range s.checking {
		if !in[id] {
			g.inChecks = append(g.inChecks, now.Sub(start))
		}
	}
	return gatherWait(g)
}
