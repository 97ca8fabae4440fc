package merge

// Waiting for a landing: the engine holds a finished agent's slot until
// its task's merge has landed, when nothing but the integrator stands
// before it, so the next agent's start (a worktree, processes, the task
// store) does not compete with the landing for a busy machine.

// Landing returns a channel closed once task id's item is no longer on
// its way to the target without waiting: it landed, it stopped short (a
// conflict, a hold, a failure, a dependency not landed, a pause), it left
// the queue, or the service stopped. It is nil when a check or an
// approval stands before every landing: those take their own time, and
// nobody should hold a slot for them.
func (s *Service) Landing(id string) <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.required) > 0 || s.opt.Merge.LockfileCommand != "" || s.opt.Merge.RequireApproval {
		return nil
	}
	ch := make(chan struct{})
	if !s.landingLocked(id) {
		close(ch)
		return ch
	}
	if s.landWait == nil {
		s.landWait = map[string][]chan struct{}{}
	}
	s.landWait[id] = append(s.landWait[id], ch)
	return ch
}

// landingLocked reports that the item is queued with only the integrator
// between it and the target.
func (s *Service) landingLocked(id string) bool {
	it := s.findLocked(id)
	if it == nil || s.stopped || s.stats.Paused {
		return false
	}
	switch it.Status {
	case StatusMerging, StatusTesting, StatusLanding:
		return true
	case StatusPending:
		return s.blockedLocked(it) == ""
	}
	return false
}

// wakeLandingLocked closes the channels of items whose landing is over;
// publishLocked calls it on every change of the queue.
func (s *Service) wakeLandingLocked() {
	for id, chs := range s.landWait {
		if !s.landingLocked(id) {
			for _, ch := range chs {
				close(ch)
			}
			delete(s.landWait, id)
		}
	}
}

// stop tells every waiter that no landing is coming (Run returned).
func (s *Service) stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopped = true
	s.wakeLandingLocked()
}
