package merge

import (
	"context"
)

// Recovery after a crash.

// reconcileAll settles the items a crash left mid-way, using git ancestry
// as the truth: a "landing" item whose candidate is on the target landed.
func (s *Service) reconcileAll(ctx context.Context) error {
	tip, err := git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+s.opt.Target)
	if err != nil {
		return err
	}
	s.mu.Lock()
	var landing []Item
	for _, it := range s.items {
		switch it.Status {
		case StatusLanding:
			landing = append(landing, *it)
		case StatusMerging, StatusTesting, StatusResolving, StatusConflict:
			s.moveLocked(it, StatusPending)
		}
	}
	s.mu.Unlock()
	landing = chainOrder(landing)
	for _, it := range landing {
		in := false
		if it.Candidate != "" {
			in, err = s.in.ancestor(ctx, it.Candidate, tip)
			if err != nil {
				return err
			}
		}
		if in {
			s.mu.Lock()
			if tip != it.Candidate && s.stats.TargetTip == it.Base {
				s.stats.TargetTip = it.Candidate
			}
			s.mu.Unlock()
			s.finishLanded(ctx, it.TaskID, it.Candidate, false)
			continue
		}
		// Not landed: retry (a still-valid candidate lands without rebuild).
		s.move(it.TaskID, StatusPending, nil)
	}
	s.mu.Lock()
	s.reconcile = false
	err = s.saveLocked()
	s.mu.Unlock()
	s.clearIntegration(ctx)
	return err
}
