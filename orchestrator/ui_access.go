package orchestrator

import (
	"context"
	"errors"

	"github.com/chorus-dev/chorus/merge"
)

// errNoMerge is returned by the rollback helpers when merging is off.
var errNoMerge = errors.New("merging is off in this session")

// Checkpoints lists the merge service's checkpoints, newest first, for the
// rollback menu. It runs git, so front ends call it off their UI thread.
func (e *Engine) Checkpoints(ctx context.Context) ([]merge.Checkpoint, error) {
	if e.merge == nil {
		return nil, errNoMerge
	}
	return e.merge.Checkpoints(ctx)
}

// Dependents lists the landed tasks a level-3 rollback of taskID would
// revert with it, newest first. It runs git.
func (e *Engine) Dependents(ctx context.Context, taskID string) ([]string, error) {
	if e.merge == nil {
		return nil, errNoMerge
	}
	return e.merge.Dependents(ctx, taskID)
}
