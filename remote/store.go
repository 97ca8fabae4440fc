package remote

import (
	"context"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Store is a task store whose writes go through a running engine (the one
// writer while it runs: it stops the agent of a task closed under it and
// tells every front end), and whose reads come from the store itself.
type Store struct {
	beads.Store
	C *Client
}

func (s Store) op(ctx context.Context, op orchestrator.TaskOp) error {
	_, err := s.C.ChangeTask(ctx, op)
	return err
}

// Create creates a task through the engine.
func (s Store) Create(ctx context.Context, title string, opt beads.CreateOptions) (beads.Task, error) {
	return s.C.ChangeTask(ctx, orchestrator.TaskOp{Op: orchestrator.TaskCreate, Title: title, Create: &opt})
}

// Update changes a task through the engine.
func (s Store) Update(ctx context.Context, id string, u beads.Update) (beads.Task, error) {
	return s.C.ChangeTask(ctx, orchestrator.TaskOp{Op: orchestrator.TaskUpdate, ID: id, Update: &u})
}

// Close closes a task through the engine, stopping its agent first.
func (s Store) Close(ctx context.Context, id, reason string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskClose, ID: id, Reason: reason})
}

// Reopen opens a task again through the engine.
func (s Store) Reopen(ctx context.Context, id string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskReopen, ID: id})
}

// Block blocks a task through the engine, stopping its agent first.
func (s Store) Block(ctx context.Context, id, reason string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskBlock, ID: id, Reason: reason})
}

// AddLabel labels a task through the engine.
func (s Store) AddLabel(ctx context.Context, id, label string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskAddLabel, ID: id, Label: label})
}

// RemoveLabel drops a task's label through the engine.
func (s Store) RemoveLabel(ctx context.Context, id, label string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskRemoveLabel, ID: id, Label: label})
}

// AddDependency adds a dependency through the engine.
func (s Store) AddDependency(ctx context.Context, id, dependsOn string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskAddDep, ID: id, Dep: dependsOn})
}

// RemoveDependency drops a dependency through the engine.
func (s Store) RemoveDependency(ctx context.Context, id, dependsOn string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskRemoveDep, ID: id, Dep: dependsOn})
}

// Delete deletes a task through the engine, stopping its agent first.
func (s Store) Delete(ctx context.Context, id string) error {
	return s.op(ctx, orchestrator.TaskOp{Op: orchestrator.TaskDelete, ID: id})
}
