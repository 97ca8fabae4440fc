// Package merge is Chorus's background merge service: a persistent queue of
// finished branches, integration without touching any working tree
// (merge-tree + commit-tree), a quality gate on the exact candidate commit in
// a Chorus-owned worktree, landing by compare-and-swap or fast-forward,
// agent-first conflict resolution, checkpoints and rollback.
//
// Only the landing step changes shared state, and it is a single ref update
// recorded as "landing" before and "landed" after; after a crash git ancestry
// decides what happened. The package never imports orchestrator or ui: the
// engine feeds it Requests, persists its queue through Persist and runs
// agents for it through Resolver.
//
// Beyond the engine contract the package offers: Drain and Waiting (headless
// exit), Resume (after a pause), Checkpoints and Dependents (for the
// rollback UI), UserRequest (for
// `chorus merge-user`), and driver.Main (for `chorus merge-driver`, which
// git runs for the registered merge drivers). Rollback methods return the
// task ids they took off the target.
package merge

import (
	"context"
	"errors"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge/queue"
	"github.com/chorus-dev/chorus/worktree"
)

// The queue's own types live in merge/queue, whose policies (order,
// dependencies, retries, what a person may do, which status may follow
// which) are pure and tested without git.
type (
	// Request asks for a branch to be merged into the target.
	Request = queue.Request
	// Status of a queue item.
	Status = queue.Status
	// Item is one queue entry (see queue.Item).
	Item = queue.Item
)

// Item statuses (see queue.Status).
const (
	StatusPending         = queue.StatusPending
	StatusMerging         = queue.StatusMerging
	StatusTesting         = queue.StatusTesting
	StatusConflict        = queue.StatusConflict
	StatusResolving       = queue.StatusResolving
	StatusWaitingHuman    = queue.StatusWaitingHuman
	StatusWaitingApproval = queue.StatusWaitingApproval
	StatusHeld            = queue.StatusHeld
	StatusLanding         = queue.StatusLanding
	StatusLanded          = queue.StatusLanded
	StatusFailed          = queue.StatusFailed
	StatusReverted        = queue.StatusReverted
)

// Stats is the queue-wide state persisted with the items.
type Stats struct {
	MergesAuto   int `json:"mergesAuto"`
	MergesManual int `json:"mergesManual"`
	Conflicts    int `json:"conflicts"`
	Resolved     int `json:"resolved"`   // conflicts an agent resolved
	Recoveries   int `json:"recoveries"` // rebuilds because the target moved
	Rollbacks    int `json:"rollbacks"`
	// TargetTip is the target commit the service last saw or produced; any
	// other value means someone else moved the target.
	TargetTip   string   `json:"targetTip,omitempty"`
	Paused      bool     `json:"paused,omitempty"`
	PauseReason string   `json:"pauseReason,omitempty"`
	Lost        []string `json:"lost,omitempty"` // landed tasks no longer reachable from the target
	NextSeq     uint64   `json:"nextSeq"`
	// SinceCheckpoint counts landings since the last periodic checkpoint.
	SinceCheckpoint int `json:"sinceCheckpoint"`
	// Reverted lists tasks rolled back this session: re-landing one of them
	// first re-applies the reverted changes (revert of the revert).
	Reverted []string `json:"reverted,omitempty"`
	// Moved is set while the queue is held because the target moved outside
	// the merge service: from TargetTip to Moved.To. AcceptTarget (or
	// restoring the old tip) releases the hold.
	Moved *TargetMove `json:"moved,omitempty"`
}

// TargetMove describes a move of the target branch nobody verified.
type TargetMove struct {
	From    string    `json:"from"`
	To      string    `json:"to"`
	Rewrite bool      `json:"rewrite,omitempty"` // not a fast-forward
	Seen    time.Time `json:"seen"`
	Restore string    `json:"restore"` // command that puts the target back
	Accept  string    `json:"accept"`  // command that accepts the new tip
}

// Snapshot is a copy of the queue for front ends.
type Snapshot struct {
	Items   []Item `json:"items"` // queue order first, then history
	Stats   Stats  `json:"stats"`
	Current string `json:"current,omitempty"` // task being worked on
	Idle    bool   `json:"idle"`
}

// Options configure a Service.
type Options struct {
	RepoDir     string // the repository's main worktree
	Target      string // target branch, e.g. main
	ChorusDir   string // .chorus directory (informational; state is written by Persist)
	Quality     []config.QualityCommand
	Merge       config.Merge
	Checkpoints config.Checkpoints
	// Headless is informational: a headless engine calls Drain once no
	// agent can enqueue anything more, and Run then ends instead of waiting
	// for a person (see WaitingError).
	Headless bool

	// WorktreesDir holds Chorus's own worktrees (default RepoDir/.worktrees).
	WorktreesDir string
	// Worktrees adds and removes every worktree and keeps what removal
	// would lose (required): the engine's own, so one registry lock covers
	// the agents' worktrees and the service's.
	Worktrees *worktree.Manager
	// DriverCommand is the shell prefix git runs for the merge drivers, with
	// "<kind> %O %A %B %P" appended (default: this executable + " merge-driver",
	// which `chorus merge-driver` must route to driver.Main).
	DriverCommand string
	// MaxDiff caps each diff put into a resolver prompt (default 64 KiB).
	MaxDiff int
	// NoFsync leaves git's own fsync default (no fsync of loose objects or
	// refs) for merge commits and landings; by default they are fsynced so a
	// power loss cannot lose a landed merge.
	NoFsync bool
	// PackRefsEvery: after this many landings the refs are packed (each
	// task leaves a merged ref and a checkpoint; loose, they cost every
	// ref lookup a file). 0 means 64.
	PackRefsEvery int
	// ResolverTimeout bounds one resolver agent (default
	// Merge.ResolverTimeoutMinutes, else 10 minutes).
	ResolverTimeout time.Duration
	// WatchInterval is how often an idle service checks that nobody else
	// moved the target (default 2 s).
	WatchInterval time.Duration
	// GatherWindow is the least a batch with room waits for tasks whose
	// checks are running (Checking) to join it, and how long after its
	// check started items may still join it; longer with longer checks
	// (gather.go, join.go). Default 1.5 s; negative: never wait or join.
	GatherWindow time.Duration
	// AcceptCommand is what a person runs to accept a target moved outside
	// the service (named in the hold's message).
	AcceptCommand string
	// Now is the clock (tests); default time.Now.
	Now func() time.Time
	// Hook runs the user's hook for a merge event (pre-merge, post-merge,
	// on-conflict) on the integrator's goroutine; nil runs none. A pre-merge
	// block holds the item with the hook's message.
	Hook func(ctx context.Context, ev hooks.Event, it Item) hooks.Answer
}

// Persist is called synchronously with the whole queue whenever it changes
// and before every ref update that lands work ("landing"); an error aborts
// the step. The integrator's transient statuses (merging, testing, resolving) are only
// published to Snapshot: a restart turns them back into pending anyway. It
// must not call back into the Service (Snapshot excepted).
type Persist func(items []Item, stats Stats) error

// Resolver runs an agent (the task's own or a resolver agent) in the given
// worktree with the given prompt and returns when it says RESOLVED or
// NEEDS_HUMAN, or fails.
type Resolver interface {
	Resolve(ctx context.Context, r ResolveRequest) (ResolveResult, error)
}

// ResolveRequest is one resolution attempt. The worktree is on Branch with a
// merge of the target already started (conflict markers in ConflictFiles);
// the agent resolves, commits, and answers.
type ResolveRequest struct {
	TaskID, Agent, Worktree, Branch, Prompt string
	ConflictFiles                           []string
	OwnAgent                                bool // the task's own agent in its own worktree
	// Unfinished says what still stands between the worktree and a
	// concluded, clean merge ("" when nothing does), so an agent that
	// answers with another word than RESOLVED can be judged by its work.
	Unfinished func(context.Context) string
}

// ResolveResult is the agent's answer.
type ResolveResult struct {
	Resolved    bool
	Explanation string
}

// EventKind names what happened to an item.
type EventKind string

// Event kinds.
const (
	EventEnqueued        EventKind = "enqueued"
	EventLanded          EventKind = "landed"
	EventConflict        EventKind = "conflict"
	EventRebased         EventKind = "rebased"  // the medium tier's rebase cleared a conflict
	EventDeferred        EventKind = "deferred" // the medium tier sent a conflict to the back of the queue
	EventResolving       EventKind = "resolving"
	EventResolved        EventKind = "resolved"
	EventWaitingHuman    EventKind = "waiting-human"
	EventWaitingApproval EventKind = "waiting-approval"
	EventHeld            EventKind = "held"
	EventFailed          EventKind = "failed"
	EventQualityFailed   EventKind = "quality-failed"
	EventTargetMoved     EventKind = "target-moved"
	EventPaused          EventKind = "paused"
	EventResumed         EventKind = "resumed"
	EventCheckpoint      EventKind = "checkpoint"
	EventRollback        EventKind = "rollback"
)

// Event is a plain, serialisable notification.
type Event struct {
	Kind    EventKind `json:"kind"`
	TaskID  string    `json:"taskId,omitempty"`
	Message string    `json:"message,omitempty"`
	Files   []string  `json:"files,omitempty"`
	Commit  string    `json:"commit,omitempty"`
	Time    time.Time `json:"time"`
}

// Errors callers can test for.
var (
	ErrUnknownTask = errors.New("no such task in the merge queue")
	ErrBusy        = errors.New("the merge service is working on this task")
	ErrBadState    = queue.ErrBadState
	ErrNotMerged   = errors.New("task has no merge on the target branch")
	ErrNoResolver  = errors.New("no resolver agent is working on this task")
	// ErrNothingToRollBack: the checkpoint is where the target is already.
	ErrNothingToRollBack = errors.New("rolling back would change nothing")
)

// Causes a resolver's context ends with.
var (
	errResolverStopped = errors.New("the resolver was stopped by a person")
	errResolverTimeout = errors.New("the resolver did not answer in time")
)

// WaitingError is returned by Run after Drain when the queue is idle but
// items wait for a person; it lists them with what to do.
type WaitingError struct{ Items []Item }

func (e *WaitingError) Error() string {
	s := "merge queue: items wait for a person:"
	for _, it := range e.Items {
		s += "\n  " + it.TaskID + " (" + string(it.Status) + "): " + it.Action
	}
	return s
}
