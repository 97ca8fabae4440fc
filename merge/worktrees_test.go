package merge

import (
	"strings"
	"testing"
)

// The service adds and removes worktrees only through the repository's
// one owner: without one it refuses to start, since an owner of its own
// would hold a lock the engine's agents do not take.
func TestNewNeedsTheWorktreeOwner(t *testing.T) {
	r := newRepo(t)
	opt := baseOptions(r.dir)
	opt.Worktrees = nil
	if _, err := New(opt, nil, nil); err == nil || !strings.Contains(err.Error(), "Options.Worktrees") {
		t.Fatalf("New without a worktree owner: %v", err)
	}
}
