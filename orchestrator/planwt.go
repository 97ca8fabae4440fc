package orchestrator

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/worktree"
)

// gitTimeout bounds each step on the checkout.
const gitTimeout = 2 * time.Minute

// planSetupFiles are what the Plan Agent's prompt tells it to read; a
// first plan runs before they are committed, so its checkout gets the
// repository root's copies.
var planSetupFiles = []string{".chorus/task-rules.md", ".chorus/PATTERNS.md", ".agent/learnings.md"}

// planCheckout gives the Plan Agent a checkout of its own (detached at
// HEAD, under .worktrees/): in the repository root it saw the engine
// rewrite .chorus/state.json and planning-state.json, and an agent that
// reports every change to a file it read filled its screen with them.
// done removes the checkout, keeping under refs/chorus/kept/ anything the
// agent left there. Without a commit to check out it runs in the root.
func (r *agentRun) planCheckout() (dir string, done func()) {
	root := r.e.opt.Dir.Root
	noop := func() {}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if _, err := gitx.Git(ctx, root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err != nil {
		return root, noop
	}
	dir = filepath.Join(root, worktree.Dir, worktree.Slug(r.id))
	remove := func(ctx context.Context) error {
		return r.e.wt.RemoveKeeping(ctx, "plan", dir, "the Plan Agent's checkout")
	}
	// One left by an earlier run (a crash) may be behind HEAD.
	if err := remove(ctx); err != nil {
		return root, noop
	}
	if err := r.e.wt.AddDetached(ctx, dir, "HEAD", ""); err != nil {
		return root, noop
	}
	var copied []string
	for _, rel := range planSetupFiles {
		src, dst := filepath.Join(root, rel), filepath.Join(dir, rel)
		data, err := os.ReadFile(src)
		if _, statErr := os.Stat(dst); err != nil || statErr == nil {
			continue // none to copy, or committed: the checkout has it
		}
		if os.MkdirAll(filepath.Dir(dst), 0o755) == nil && os.WriteFile(dst, data, 0o644) == nil {
			copied = append(copied, rel)
		}
	}
	return dir, func() {
		// The copies are Chorus's, not the agent's work, unless it edited them.
		for _, rel := range copied {
			src, _ := os.ReadFile(filepath.Join(root, rel))
			if got, err := os.ReadFile(filepath.Join(dir, rel)); err == nil && bytes.Equal(got, src) {
				os.Remove(filepath.Join(dir, rel))
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
		defer cancel()
		if err := remove(ctx); err != nil {
			r.event(EvAlert, "removing the Plan Agent's checkout "+dir+": "+err.Error(), nil)
		}
	}
}
