package beads

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// patch applies one of our writes to a ready list. exact is false when the
// write can make tasks ready that the patch cannot know about (closing a
// blocker), so a refresh is still needed.
type patch struct {
	apply func([]Task) []Task
	exact bool
}

// maxStale bounds how long a failing bd keeps being papered over by the cache.
const maxStale = 60 * time.Second

func (s *bdStore) fetchReady(ctx context.Context) ([]Task, error) {
	res, err := s.run(ctx, "", "ready", "--json", "--limit=0")
	if err != nil {
		return nil, err
	}
	list, err := parseIssues(res.Stdout)
	if err != nil {
		return nil, err
	}
	ts := toTasks(list)
	sortReady(ts)
	return ts, nil
}

// Ready serves the cached list, refreshing it in the background when it is
// older than the TTL or our writes made it inexact. Only the very first
// call waits for bd.
func (s *bdStore) Ready(ctx context.Context, opt ReadyOptions) ([]Task, error) {
	s.mu.Lock()
	if !s.have {
		ch := s.refreshLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		s.mu.Lock()
		if !s.have {
			err := s.lastErr
			s.mu.Unlock()
			return nil, err
		}
	} else if s.stale || time.Since(s.fetchedAt) > s.ttl {
		s.refreshLocked()
		if s.lastErr != nil && time.Since(s.fetchedAt) > maxStale {
			err := s.lastErr
			s.mu.Unlock()
			return nil, fmt.Errorf("beads: ready list is %s old and refreshing it fails: %w", time.Since(s.fetchedAt).Round(time.Second), err)
		}
	}
	out := make([]Task, 0, len(s.ready))
	for i := range s.ready {
		if labelsPass(s.ready[i].Labels, opt) {
			out = append(out, cloneTask(&s.ready[i]))
		}
	}
	s.mu.Unlock()
	return out, nil
}

// Refresh fetches the ready list now and waits for it.
func (s *bdStore) Refresh(ctx context.Context) error {
	for {
		s.mu.Lock()
		ch := s.refreshLocked()
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		s.mu.Lock()
		stale, err := s.stale, s.lastErr
		s.mu.Unlock()
		// A refresh already running when we asked may predate our writes.
		if err != nil || !stale {
			return err
		}
	}
}

func (s *bdStore) refreshLocked() chan struct{} {
	if s.refreshing != nil {
		return s.refreshing
	}
	ch := make(chan struct{})
	s.refreshing = ch
	s.patches = nil
	go func() {
		ts, err := s.fetchReady(context.Background())
		s.mu.Lock()
		if err != nil {
			s.lastErr = err
		} else {
			stale := false
			for _, p := range s.patches {
				ts = p.apply(ts)
				stale = stale || !p.exact
			}
			s.ready, s.have, s.fetchedAt, s.stale, s.lastErr = ts, true, time.Now(), stale, nil
		}
		s.refreshing, s.patches = nil, nil
		s.mu.Unlock()
		close(ch)
	}()
	return ch
}

// applyPatch records one of our writes in the cache (and in the refresh
// that may be running, whose data may predate the write).
func (s *bdStore) applyPatch(p patch) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.have {
		s.ready = p.apply(s.ready)
		if !p.exact {
			s.stale = true
		}
	}
	if s.refreshing != nil {
		s.patches = append(s.patches, p)
	}
}

func without(id string) func([]Task) []Task {
	return func(ts []Task) []Task {
		return slices.DeleteFunc(ts, func(t Task) bool { return t.ID == id })
	}
}
