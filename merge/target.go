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
func (s *Service) observeTarget() {
	tip, err := s.readTarget()
	if err != nil {
		return
	}
	s.mu.Lock()
	prev := s.stats.TargetTip
	if prev == tip || s.stats.Moved != nil {
		s.mu.Unlock()
		return
	}
	s.stats.TargetTip = tip
	_ = s.saveLocked()
	s.mu.Unlock()
	if prev != "" {
		s.emit(Event{Kind: EventTargetMoved, Commit: tip,
			Message: fmt.Sprintf("%s moved while Chorus was not running: %s → %s; taken as the baseline", s.opt.Target, short(prev), short(tip))})
	}
}

// watchTarget is the idle check: a target that moved outside the service
// holds the queue; one put back where the service left it releases a hold
// it caused. Callers hold opMu.
func (s *Service) watchTarget(ctx context.Context) {
	tip, err := s.readTarget()
	if err != nil {
		return
	}
	s.mu.Lock()
	prev, moved := s.stats.TargetTip, s.stats.Moved
	s.mu.Unlock()
	switch {
	case prev == "":
	case moved != nil && tip == prev:
		s.mu.Lock()
		s.stats.Paused, s.stats.PauseReason, s.stats.Moved = false, "", nil
		_ = s.saveLocked()
		s.mu.Unlock()
		s.emit(Event{Kind: EventResumed, Commit: tip, Message: s.opt.Target + " is back at " + short(tip) + "; the queue runs again"})
		s.poke()
	case tip != prev && (moved == nil || moved.To != tip):
		s.holdTarget(ctx, "", prev, tip)
	}
}

// holdTarget holds the queue because the target moved from prev (the last
// tip the service landed or observed) to tip behind its back: nothing lands
// on an unverified tip. The event says what happened and how to restore or
// accept.
func (s *Service) holdTarget(ctx context.Context, taskID, prev, tip string) {
	ff, err := s.in.ancestor(ctx, prev, tip)
	if err != nil {
		ff = false
	}
	var lost []string
	if !ff {
		lost = s.lostTasks(ctx, tip)
	}
	ref := "refs/heads/" + s.opt.Target
	restore := fmt.Sprintf("git update-ref %s %s %s", ref, prev, tip)
	if co, err := s.targetCheckout(); err == nil && co.worktree != "" {
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
		s.opt.Target, kind, short(prev), short(tip), restore, s.opt.AcceptCommand)
	if len(lost) > 0 {
		reason += "; merged tasks no longer on " + s.opt.Target + ": " + strings.Join(lost, ", ") +
			" (their merges are kept on refs/chorus/merged/<task>)"
	}
	s.mu.Lock()
	s.stats.Paused, s.stats.PauseReason = true, reason
	s.stats.Moved = &TargetMove{From: prev, To: tip, Rewrite: !ff, Seen: s.opt.Now(), Restore: restore, Accept: s.opt.AcceptCommand}
	if lost != nil {
		s.stats.Lost = lost
	}
	_ = s.saveLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventTargetMoved, TaskID: taskID, Commit: tip, Message: reason, Files: lost})
	s.emit(Event{Kind: EventPaused, TaskID: taskID, Message: reason, Files: lost})
}
