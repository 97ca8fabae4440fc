package merge

import (
	"context"
	"time"
)

// Joining a running batch: agents that do not finish together (a loaded
// machine starts them seconds apart) queue while a batch is being built or
// checked. Left out, each would wait for that check and then run one of
// its own, a whole check later. Instead they join the batch: merged onto
// its chain, which is checked again from its new end, for as long as
// restarting costs the batch less than half a check.

// joinRunning reports whether newcomers (batchable ones) join a batch
// whose check first started since ago (0: not started, nothing to
// restart): they fit and the batch has not been checked for longer than
// the window, or half a check's length (as last measured in a worktree)
// when that is longer.
func joinRunning(inBatch, newcomers int, since, check, window time.Duration) bool {
	if newcomers == 0 || inBatch >= maxBatch || window <= 0 {
		return false
	}
	return since < max(window, check/2)
}

// batchCheck records the running batch check, which joining newcomers
// restart (cancel), and when the batch's first check started.
type batchCheck struct {
	cancel context.CancelFunc
	first  time.Time
}

// joinersLocked is the runnable items that join the batch the integrator
// holds now, in the queue's order, as many as it has room for: none when
// batching does not apply or the batch has been checked for too long.
func (s *Service) joinersLocked() []string {
	if s.batch == nil || !s.batchingLocked() {
		return nil
	}
	var ids []string
	for _, it := range s.runnableLocked() {
		if len(s.batch)+len(ids) >= maxBatch {
			break
		}
		if !s.batch[it.TaskID] && s.batchableLocked(it) {
			ids = append(ids, it.TaskID)
		}
	}
	if !joinRunning(len(s.batch), len(ids), s.sinceFirstLocked(), s.checkLen, s.opt.GatherWindow) {
		return nil
	}
	return ids
}

// sinceFirstLocked is how long ago the held batch's check first started.
func (s *Service) sinceFirstLocked() time.Duration {
	if s.checkRun.first.IsZero() {
		return 0
	}
	return s.opt.Now().Sub(s.checkRun.first)
}

// join takes the items that join the held batch now, marking them part of
// it: none once the batch has been checked for too long.
func (s *Service) join() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.joinersLocked()
	for _, id := range ids {
		s.batch[id] = true
	}
	return ids
}

// batchChecking records the batch check starting (cancel) or over (nil).
// Items queued while the chain was made stop it at once.
func (s *Service) batchChecking(cancel context.CancelFunc) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.checkRun.cancel = cancel
	if cancel != nil && s.checkRun.first.IsZero() {
		s.checkRun.first = s.opt.Now()
	}
	s.restartForJoinersLocked()
}

// batchOver forgets the batch's check.
func (s *Service) batchOver() {
	s.mu.Lock()
	s.checkRun = batchCheck{}
	s.mu.Unlock()
}

// restartForJoinersLocked stops the running batch check when items queued
// since may join the batch: the integrator merges them on and checks again.
func (s *Service) restartForJoinersLocked() {
	if s.checkRun.cancel == nil {
		return
	}
	if len(s.joinersLocked()) > 0 {
		s.checkRun.cancel()
		s.checkRun.cancel = nil
	}
}
