// Package beads is Chorus's only access to tasks. One Store interface, two
// backends: the real `bd` CLI (driven as a subprocess, argv only) and a
// built-in store that keeps the same records in beads' JSONL interchange
// format for machines without `bd`.
package beads

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Status values, as beads spells them.
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusDeferred   = "deferred"
	StatusClosed     = "closed"
)

// Labels Chorus gives meaning to.
const (
	LabelDeferred = "deferred" // excluded from ready by default
	LabelFailed   = "failed"   // task hit maxIterations or its timeout
)

// Metadata keys Chorus stores in a task's metadata object.
const (
	MetaModel = "model"
	MetaAgent = "agent"
)

// Dependency is one edge as beads records it: IssueID depends on
// (is blocked by) DependsOnID when Type is "blocks".
type Dependency struct {
	IssueID     string    `json:"issue_id"`
	DependsOnID string    `json:"depends_on_id"`
	Type        string    `json:"type"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by,omitempty"`
}

// Task is one beads issue with the fields Chorus uses. Field names and JSON
// tags follow beads' own records so the built-in JSONL file imports into bd.
type Task struct {
	ID                 string         `json:"id"`
	Title              string         `json:"title"`
	Description        string         `json:"description,omitempty"`
	AcceptanceCriteria string         `json:"acceptance_criteria,omitempty"`
	Notes              string         `json:"notes,omitempty"`
	Status             string         `json:"status"`
	Priority           int            `json:"priority"`
	IssueType          string         `json:"issue_type,omitempty"`
	Assignee           string         `json:"assignee,omitempty"`
	CreatedAt          time.Time      `json:"created_at"`
	CreatedBy          string         `json:"created_by,omitempty"`
	UpdatedAt          time.Time      `json:"updated_at"`
	StartedAt          *time.Time     `json:"started_at,omitempty"`
	ClosedAt           *time.Time     `json:"closed_at,omitempty"`
	CloseReason        string         `json:"close_reason,omitempty"`
	Labels             []string       `json:"labels,omitempty"`
	Dependencies       []Dependency   `json:"dependencies,omitempty"`
	Metadata           map[string]any `json:"metadata,omitempty"`
}

// HasLabel reports whether the task carries label l.
func (t Task) HasLabel(l string) bool {
	for _, x := range t.Labels {
		if x == l {
			return true
		}
	}
	return false
}

// BlockedBy returns the ids of tasks this one depends on through blocking edges.
func (t Task) BlockedBy() []string {
	var out []string
	for _, d := range t.Dependencies {
		if d.IssueID == t.ID && (d.Type == "blocks" || d.Type == "") {
			out = append(out, d.DependsOnID)
		}
	}
	return out
}

// CreateOptions are the optional fields of a new task.
type CreateOptions struct {
	// Priority 0..4. The zero value means the default, 2, unless
	// PrioritySet is true (so P0 can be asked for explicitly).
	Priority    int
	PrioritySet bool
	ID          string // explicit id (optional); generated when empty
	Labels      []string
	Deps        []string // ids the new task is blocked by
	Description string
	Acceptance  string
	Model       string
	Agent       string
	Type        string // default "task"
}

// ReadyOptions filter the ready list.
type ReadyOptions struct {
	IncludeDeferred bool     // include tasks labelled deferred
	ExcludeLabels   []string // in addition to deferred
	IncludeLabels   []string // any-of
}

// Store is the one interface every part of Chorus uses for tasks.
// Implementations are safe for concurrent use.
type Store interface {
	// Backend names the implementation ("bd" or "builtin").
	Backend() string
	Create(ctx context.Context, title string, opt CreateOptions) (Task, error)
	Get(ctx context.Context, id string) (Task, error)
	// List returns every task, closed ones included.
	List(ctx context.Context) ([]Task, error)
	// Ready returns open tasks whose blockers are all closed, ordered by
	// priority then age (oldest first), deferred excluded unless asked.
	Ready(ctx context.Context, opt ReadyOptions) ([]Task, error)
	// Claim atomically moves an open task to in_progress assigned to actor.
	// Exactly one of several concurrent claimers wins; the others get ErrClaimed.
	Claim(ctx context.Context, id, actor string) (Task, error)
	// Release returns a task to open and clears its assignee.
	Release(ctx context.Context, id string) error
	Close(ctx context.Context, id, reason string) error
	Reopen(ctx context.Context, id string) error
	// Block sets status blocked and appends reason to the notes.
	Block(ctx context.Context, id, reason string) error
	AddLabel(ctx context.Context, id, label string) error
	RemoveLabel(ctx context.Context, id, label string) error
	// Update replaces title/description/acceptance when the pointer is non-nil.
	Update(ctx context.Context, id string, u Update) (Task, error)
	AddDependency(ctx context.Context, id, dependsOn string) error
	// RemoveDependency drops id's blocking edge on dependsOn (ErrNotFound
	// when there is none).
	RemoveDependency(ctx context.Context, id, dependsOn string) error
	// Delete removes a task and every dependency on it.
	Delete(ctx context.Context, id string) error
}

// Update holds optional field changes for Store.Update.
type Update struct {
	Title       *string
	Description *string
	Acceptance  *string
	Priority    *int
	Notes       *string // appended
	Metadata    map[string]any
}

// Errors callers branch on.
var (
	ErrNotFound = errors.New("task not found")
	ErrClaimed  = errors.New("task already claimed")
	ErrNotOpen  = errors.New("task is not open")
	ErrCycle    = errors.New("dependency would create a cycle")
	// ErrNotReady: the task is open but still blocked by an active dependency.
	ErrNotReady = errors.New("task is blocked by open dependencies")
	// ErrMalformed: the built-in store's file has a line it cannot read;
	// writes are refused until it is fixed so nothing gets lost.
	ErrMalformed = errors.New("malformed task file")
	// ErrDependency: a task was created but bd could not add a dependency.
	ErrDependency = errors.New("dependency not added")
	// ErrConflict: a shared Dolt server refused a write because another
	// writer's transaction committed first (Error 1213, serialization
	// failure). The bd backend retries it; a claim that keeps meeting it
	// counts as lost (ErrClaimed as well).
	ErrConflict = errors.New("write conflicted with another writer (serialization failure)")
	// ErrBdMissing: the repo has a bd database but no bd binary is available.
	ErrBdMissing = errors.New("bd not found")
	// ErrCorrupt: bd cannot open its database, or says it is corrupted.
	// The tasks' JSONL export is the source to rebuild it from; `chorus
	// doctor` says how (CorruptHint).
	ErrCorrupt = errors.New("bd database corrupted")
)

// CorruptHint is what every ErrCorrupt says to do.
const CorruptHint = "the bd database looks corrupted: run `chorus doctor` for how to rebuild it from .beads/issues.jsonl, losing nothing"

// Refresher is implemented by stores that cache the ready list; Refresh
// brings the cache up to date before returning.
type Refresher interface {
	Refresh(ctx context.Context) error
}

// priority resolves CreateOptions' priority rule.
func (o CreateOptions) priority() int {
	if o.Priority == 0 && !o.PrioritySet {
		return 2
	}
	return o.Priority
}

// ClaimNext claims the first ready task (epics skipped) for actor, moving
// past tasks another claimer wins meanwhile. It returns ErrNotFound when
// nothing is ready.
func ClaimNext(ctx context.Context, s Store, actor string, opt ReadyOptions) (Task, error) {
	ready, err := s.Ready(ctx, opt)
	if err != nil {
		return Task{}, err
	}
	for _, t := range ready {
		if t.IssueType == "epic" || (t.Assignee != "" && t.Assignee != actor) {
			continue
		}
		got, err := s.Claim(ctx, t.ID, actor)
		if err == nil {
			return got, nil
		}
		if errors.Is(err, ErrClaimed) || errors.Is(err, ErrNotOpen) || errors.Is(err, ErrNotReady) || errors.Is(err, ErrNotFound) {
			continue
		}
		return Task{}, err
	}
	return Task{}, fmt.Errorf("no ready task: %w", ErrNotFound)
}
