package merge

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// readTarget returns the target's tip (integrator.readTarget).
func (s *Service) readTarget() (string, error) { return s.in.readTarget() }

func isHash(h string) bool { return gitx.IsHash(h) }

// packedRef looks name up in a packed-refs file ("<hash> <name>" lines).
func packedRef(path, name string) (string, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", false
	}
	return gitx.PackedRef(b, name)
}

// observeTarget takes the tip found at session start as the baseline (a
// person may commit on the target while Chorus is not running). Callers
// hold opMu.
func (in *integrator) observeTarget() {
	tip, err := in.readTarget()
	if err != nil {
		return
	}
	in.q.mu.Lock()
	prev := in.q.stats.TargetTip
	if prev == tip || in.q.stats.Moved != nil {
		in.q.mu.Unlock()
		return
	}
	in.q.stats.TargetTip = tip
	_ = in.q.saveLocked()
	in.q.mu.Unlock()
	if prev != "" {
		in.q.emit(Event{Kind: EventTargetMoved, Commit: tip,
			Message: fmt.Sprintf("%s moved while Chorus was not running: %s → %s; taken as the baseline", in.q.opt.Target, short(prev), short(tip))})
	}
}

// watchTarget is the idle check: a target that moved outside the service
// holds the queue; one put back where the service left it releases a hold
// it caused. Callers hold opMu.
func (in *integrator) watchTarget(ctx context.Context) {
	tip, err := in.readTarget()
	if err != nil {
		return
	}
	in.q.mu.Lock()
	prev, moved := in.q.stats.TargetTip, in.q.stats.Moved
	in.q.mu.Unlock()
	switch {
	case prev == "":
	case moved != nil && tip == prev:
		in.q.mu.Lock()
		in.q.stats.Paused, in.q.stats.PauseReason, in.q.stats.Moved = false, "", nil
		_ = in.q.saveLocked()
		in.q.mu.Unlock()
		in.q.emit(Event{Kind: EventResumed, Commit: tip, Message: in.q.opt.Target + " is back at " + short(tip) + "; the queue runs again"})
		in.q.poke()
	case tip != prev && (moved == nil || moved.To != tip):
		in.holdTarget(ctx, "", prev, tip)
	}
}

// holdTarget holds the queue because the target moved from prev (the last
// tip the service landed or observed) to tip behind its back: nothing lands
// on an unverified tip. The event says what happened and how to restore or
// accept.
func (in *integrator) holdTarget(ctx context.Context, taskID, prev, tip string) {
	ff, err := in.ancestor(ctx, prev, tip)
	if err != nil {
		ff = false
	}
	var lost []string
	if !ff {
		lost = in.q.lostTasks(ctx, tip)
	}
	ref := "refs/heads/" + in.q.opt.Target
	restore := fmt.Sprintf("git update-ref %s %s %s", ref, prev, tip)
	if co, err := in.q.targetCheckout(); err == nil && co.worktree != "" {
		// A plain ref move (git update-ref) left the checkout's files at the
		// old tip; a commit made there moved them too.
		restore += fmt.Sprintf(" (if the files in %s follow the new tip: git -C %s reset --keep %s)", co.worktree, co.worktree, prev)
	}
	kind := "moved"
	if !ff {
		kind = "was rewritten (not a fast-forward)"
	}
	reason := fmt.Sprintf("%s %s outside Chorus: %s → %s. Nothing lands on a tip that was not verified. "+
		"To restore it: %s (the queue resumes by itself). To keep the new tip: %s (or A in the merge view)",
		in.q.opt.Target, kind, short(prev), short(tip), restore, in.q.opt.AcceptCommand)
	if len(lost) > 0 {
		reason += "; merged tasks no longer on " + in.q.opt.Target + ": " + strings.Join(lost, ", ") +
			" (their merges are kept on refs/chorus/merged/<task>)"
	}
	in.q.mu.Lock()
	in.q.stats.Paused, in.q.stats.PauseReason = true, reason
	in.q.stats.Moved = &TargetMove{From: prev, To: tip, Rewrite: !ff, Seen: in.q.opt.Now(), Restore: restore, Accept: in.q.opt.AcceptCommand}
	if lost != nil {
		in.q.stats.Lost = lost
	}
	_ = in.q.saveLocked()
	in.q.mu.Unlock()
	in.q.emit(Event{Kind: EventTargetMoved, TaskID: taskID, Commit: tip, Message: reason, Files: lost})
	in.q.emit(Event{Kind: EventPaused, TaskID: taskID, Message: reason, Files: lost})
}
