package orchestrator

import (
	"context"

	"github.com/chorus-dev/chorus/worktree"
)

// keepRewound keeps the tip Chorus last recorded for the task when the
// branch no longer descends from it (the agent reset or rebased it), so
// the commits it dropped stay reachable under refs/chorus/kept/.
func (r *agentRun) keepRewound(recorded, now string) {
	k, ok, err := worktree.KeepRewound(context.Background(), r.e.opt.Dir.Root, r.taskID, recorded, now)
	switch {
	case err != nil:
		r.event(EvError, "keeping the commits the branch was moved away from: "+err.Error(), nil)
	case ok:
		r.event(EvAlert, "the branch was moved away from "+shortID(recorded)+"; its old commits are kept at "+k.Ref, nil)
	}
}

func shortID(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
