package merge

import (
	"context"
)

// Recovery after a crash.

// reconcileAll settles the items a crash left mid-way, using git ancestry
// as the truth: a "landing" item whose candidate is on the target landed.
func (in *integrator) reconcileAll(ctx context.Context) error {
	tip, err := git(ctx, in.q.opt.RepoDir, "rev-parse", "--verify", "refs/heads/"+in.q.opt.Target)
	if err != nil {
		return err
	}
	in.q.mu.Lock()
	var landing []Item
	for _, it := range in.q.items {
		switch it.Status {
		case StatusLanding:
			landing = append(landing, *it)
		case StatusMerging, StatusTesting, StatusResolving, StatusConflict:
			in.q.moveLocked(it, StatusPending)
		}
	}
	in.q.mu.Unlock()
	landing = chainOrder(landing)
	for _, it := range landing {
		landed := false
		if it.Candidate != "" {
			landed, err = in.ancestor(ctx, it.Candidate, tip)
			if err != nil {
				return err
			}
		}
		if landed {
			in.q.mu.Lock()
			if tip != it.Candidate && in.q.stats.TargetTip == it.Base {
				in.q.stats.TargetTip = it.Candidate
			}
			in.q.mu.Unlock()
			in.finishLanded(ctx, it.TaskID, it.Candidate, false)
			continue
		}
		// Not landed: retry (a still-valid candidate lands without rebuild).
		in.q.move(it.TaskID, StatusPending, nil)
	}
	in.q.mu.Lock()
	in.q.reconcile = false
	err = in.q.saveLocked()
	in.q.mu.Unlock()
	in.q.clearIntegration(ctx)
	return err
}
