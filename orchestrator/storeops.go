package orchestrator

import (
	"context"
	"errors"
	"fmt"

	"github.com/chorus-dev/chorus/beads"
)

// While an engine runs it is the one writer of the task store: the task
// commands of every front end (the CLI in another shell included) reach
// it as a TaskOp. Changes that touch a running task take effect at once:
// closing, blocking or deleting it stops its agent first (its work
// committed and its worktree kept, as a stop from the TUI does), so the
// agent cannot go on and land work on a task a person took back.

// Task operations, TaskOp.Op.
const (
	TaskCreate      = "create"       // Title, Create
	TaskUpdate      = "update"       // ID, Update
	TaskClose       = "close"        // ID, Reason
	TaskReopen      = "reopen"       // ID
	TaskBlock       = "block"        // ID, Reason
	TaskAddLabel    = "add-label"    // ID, Label
	TaskRemoveLabel = "remove-label" // ID, Label
	TaskAddDep      = "add-dep"      // ID, Dep
	TaskRemoveDep   = "remove-dep"   // ID, Dep
	TaskDelete      = "delete"       // ID
)

// TaskOp is one write to the task store, sent to the engine.
type TaskOp struct {
	Op     string               `json:"op"`
	ID     string               `json:"id,omitempty"`
	Title  string               `json:"title,omitempty"`
	Reason string               `json:"reason,omitempty"`
	Label  string               `json:"label,omitempty"`
	Dep    string               `json:"dep,omitempty"`
	Create *beads.CreateOptions `json:"create,omitempty"`
	Update *beads.Update        `json:"update,omitempty"`
}

// ChangeTask applies op to the task store and tells every front end the
// tasks changed. It returns the task as it is afterwards (nothing for a
// delete).
func (e *Engine) ChangeTask(ctx context.Context, op TaskOp) (beads.Task, error) {
	s := e.opt.Store
	var t beads.Task
	var err error
	switch op.Op {
	case TaskCreate:
		opt := beads.CreateOptions{}
		if op.Create != nil {
			opt = *op.Create
		}
		t, err = s.Create(ctx, op.Title, opt)
	case TaskUpdate:
		u := beads.Update{}
		if op.Update != nil {
			u = *op.Update
		}
		t, err = s.Update(ctx, op.ID, u)
	case TaskClose, TaskBlock, TaskDelete:
		// The agent first: its supervisor commits its work and releases
		// the task; the store change comes after, so nothing reopens it.
		if err = e.stopTaskAgent(ctx, op.ID, errTakenBack); err != nil {
			return t, err
		}
		switch op.Op {
		case TaskClose:
			err = s.Close(ctx, op.ID, op.Reason)
		case TaskBlock:
			err = s.Block(ctx, op.ID, op.Reason)
		default:
			err = s.Delete(ctx, op.ID)
		}
	case TaskReopen:
		err = s.Reopen(ctx, op.ID)
	case TaskAddLabel:
		err = s.AddLabel(ctx, op.ID, op.Label)
	case TaskRemoveLabel:
		err = s.RemoveLabel(ctx, op.ID, op.Label)
	case TaskAddDep:
		err = s.AddDependency(ctx, op.ID, op.Dep)
	case TaskRemoveDep:
		err = s.RemoveDependency(ctx, op.ID, op.Dep)
	default:
		return t, fmt.Errorf("unknown task operation %q (a newer chorus?)", op.Op)
	}
	if err != nil {
		return t, err
	}
	if op.Op != TaskCreate && op.Op != TaskUpdate && op.Op != TaskDelete {
		if t, err = s.Get(ctx, op.ID); err != nil && !errors.Is(err, beads.ErrNotFound) {
			return t, err
		}
	}
	e.tasksChanged(ctx)
	return t, nil
}

// errTakenBack stops an agent whose task a person closed, blocked or
// deleted.
var errTakenBack = errors.New("its task was closed, blocked or deleted by a person")

// tasksChanged bumps the snapshot's task generation, so every front end
// reloads its task list, and lets autopilot look for ready work again.
func (e *Engine) tasksChanged(ctx context.Context) {
	_ = e.do(ctx, e.bumpTasks)
}
