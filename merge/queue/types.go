package queue

import "time"

// Request asks for a branch to be merged into the target.
type Request struct {
	TaskID    string   `json:"taskId"`
	Branch    string   `json:"branch"`
	Title     string   `json:"title,omitempty"`
	Agent     string   `json:"agent,omitempty"`
	Worktree  string   `json:"worktree,omitempty"` // the agent's worktree (absolute), if any
	Priority  int      `json:"priority"`           // Beads scale: 0 critical … 4 backlog
	DependsOn []string `json:"dependsOn,omitempty"`
	User      bool     `json:"user,omitempty"` // added by `chorus merge-user`: the branch is the user's own
}

// Status of a queue item.
type Status string

// Item statuses. pending/merging/testing/resolving/landing are the worker's
// path; waiting-human, waiting-approval and held wait for a person; landed,
// reverted, and failed are final until someone acts.
const (
	StatusPending         Status = "pending"
	StatusMerging         Status = "merging"
	StatusTesting         Status = "testing"
	StatusConflict        Status = "conflict"
	StatusResolving       Status = "resolving"
	StatusWaitingHuman    Status = "waiting-human"
	StatusWaitingApproval Status = "waiting-approval"
	StatusHeld            Status = "held"
	StatusLanding         Status = "landing"
	StatusLanded          Status = "landed"
	StatusFailed          Status = "failed"
	StatusReverted        Status = "reverted" // landed, then rolled back
)

// Item is one queue entry, including finished ones (landed, reverted) kept
// as the session's merge history.
type Item struct {
	Request
	Status        Status    `json:"status"`
	Retries       int       `json:"retries"` // failed attempts (unresolved conflicts, failing candidates)
	LastError     string    `json:"lastError,omitempty"`
	ConflictFiles []string  `json:"conflictFiles,omitempty"`
	Explanation   string    `json:"explanation,omitempty"` // the resolver agent's words
	Action        string    `json:"action,omitempty"`      // what a person should do, when waiting
	EnqueuedAt    time.Time `json:"enqueuedAt"`
	UpdatedAt     time.Time `json:"updatedAt"`

	// Candidate is the merge commit built for the target (kept on
	// refs/chorus/candidates/<task>), Base the target tip it was built on
	// and the CAS's expected old value, Head the merged branch tip.
	Candidate string `json:"candidate,omitempty"`
	Base      string `json:"base,omitempty"`
	Head      string `json:"head,omitempty"`
	Tested    bool   `json:"tested,omitempty"` // Candidate passed the quality commands
	// MergeRef is what gets merged: the task branch, or a resolver's
	// throwaway branch that already contains the resolution.
	MergeRef string `json:"mergeRef,omitempty"`

	Seq         uint64    `json:"seq"` // FIFO position; a deferred item gets a new one
	Approved    bool      `json:"approved,omitempty"`
	Human       bool      `json:"human,omitempty"`      // a person stepped in: counts as a manual merge
	Recoveries  int       `json:"recoveries,omitempty"` // target moved under this item, in a row
	MergeCommit string    `json:"mergeCommit,omitempty"`
	LandedAt    time.Time `json:"landedAt,omitempty"`
	Cleaned     bool      `json:"cleaned,omitempty"` // worktree and branch removed after landing

	// Fence changes when a person stops the item's resolver: work the
	// service started under an older fence (a resolution, a candidate, a
	// landing) is discarded, never landed. Landing checks it under the
	// lock that moves the target.
	Fence uint64 `json:"fence,omitempty"`
	// ResolvedFrom is the merged ref's tip before a resolver agent's work,
	// while that work is queued: a stopped resolver is undone back to it.
	ResolvedFrom string `json:"resolvedFrom,omitempty"`

	// Deferrals counts conflicts met by the medium tier (rebase onto the
	// target and retry) in a row; ConflictTip is the target tip of the last
	// one. See Medium.
	Deferrals   int    `json:"deferrals,omitempty"`
	ConflictTip string `json:"conflictTip,omitempty"`
}
