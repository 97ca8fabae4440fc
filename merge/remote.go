package merge

import (
	"context"
	"fmt"
	"strings"
)

// The team's meeting point (merge.remote): several Chorus instances land
// on one remote's target. A candidate is built on the remote's tip and
// lands by pushing that exact commit with a compare-and-swap on the
// remote's target; a refused push means a teammate landed first: the
// candidate is built again on the new tip and checked again. So the
// remote's target only ever holds commits whose tree passed the checks.

// EventRemoteSynced: the team moved the remote's target ahead; the local
// target followed it (a fast-forward to work that passed its checks).
const EventRemoteSynced EventKind = "remote-synced"

func (s *Service) remote() string { return s.opt.Merge.Remote }

func (s *Service) remoteRef() string {
	return "refs/remotes/" + s.remote() + "/" + s.opt.Target
}

// fetchRemote reads the remote's target tip (fetched into its
// remote-tracking ref).
func (s *Service) fetchRemote(ctx context.Context) (string, error) {
	spec := "+refs/heads/" + s.opt.Target + ":" + s.remoteRef()
	if _, err := git(ctx, s.opt.RepoDir, "fetch", "-q", "--no-tags", s.remote(), spec); err != nil {
		return "", fmt.Errorf("fetching %s from %s: %w", s.opt.Target, s.remote(), err)
	}
	return git(ctx, s.opt.RepoDir, "rev-parse", "--verify", "-q", s.remoteRef()+"^{commit}")
}

// syncRemote brings the team's landings in before a candidate is built:
// when the remote's target is ahead of the local one, the local target is
// fast-forwarded to it and taken as the baseline. Local commits the remote
// lacks stay (the next push carries them). Callers hold opMu. It returns
// why it could not, for the caller to hold on.
func (s *Service) syncRemote(ctx context.Context) string {
	if s.remote() == "" {
		return ""
	}
	rtip, err := s.fetchRemote(ctx)
	if err != nil {
		return err.Error()
	}
	tip, err := s.readTarget()
	if err != nil || tip == rtip {
		return ""
	}
	if ahead, _ := s.in.ancestor(ctx, rtip, tip); ahead {
		return "" // local work the remote lacks; a push brings it there
	}
	if ff, _ := s.in.ancestor(ctx, tip, rtip); !ff {
		return fmt.Sprintf("%s and %s/%s have diverged (%s, %s): merge or rebase one onto the other by hand", s.opt.Target, s.remote(), s.opt.Target, short(tip), short(rtip))
	}
	co, err := s.targetCheckout()
	if err != nil {
		return err.Error()
	}
	switch {
	case co.busy != "":
		return co.busy
	case co.worktree == "":
		if _, err := git(ctx, s.opt.RepoDir, "update-ref", "-m", "chorus: the team's "+s.remote()+"/"+s.opt.Target, "refs/heads/"+s.opt.Target, rtip, tip); err != nil {
			return err.Error()
		}
	default:
		if _, err := git(ctx, co.worktree, "merge", "--ff-only", "-q", rtip); err != nil {
			if now, _ := s.readTarget(); now != rtip {
				return fmt.Sprintf("%s is checked out in %s and the fast-forward to %s/%s was refused: %v", s.opt.Target, co.worktree, s.remote(), s.opt.Target, err)
			}
		}
	}
	s.mu.Lock()
	s.stats.TargetTip = rtip
	_ = s.saveLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventRemoteSynced, Commit: rtip,
		Message: fmt.Sprintf("%s follows %s/%s: %s → %s (landed by the team)", s.opt.Target, s.remote(), s.opt.Target, short(tip), short(rtip))})
	return ""
}

// pushRemote lands cand on the remote's target if that is still base (a
// compare-and-swap through --force-with-lease). false: refused, with git's
// reason; the caller builds again on the new tip.
func (s *Service) pushRemote(ctx context.Context, base, cand string) (bool, string) {
	if s.remote() == "" {
		return true, ""
	}
	ref := "refs/heads/" + s.opt.Target
	r, err := run(ctx, s.opt.RepoDir, "", "push", "--porcelain", "-q", "--no-verify",
		"--force-with-lease="+ref+":"+base, s.remote(), cand+":"+ref)
	if err != nil {
		return false, err.Error()
	}
	if r.rc != 0 {
		return false, firstLines(strings.TrimSpace(r.err+"\n"+r.out), 4)
	}
	// The tracking ref follows, so the next sync sees what was pushed.
	_, _ = git(ctx, s.opt.RepoDir, "update-ref", s.remoteRef(), cand)
	return true, ""
}

// remoteRefused handles a refused push of ids (built on base): when the
// remote's target moved, a teammate landed first: the items go back to
// the queue with no candidate, and the next pass syncs and builds on the
// new tip. When it did not move, the refusal is something else (access, a
// hook on the remote): the items are held with git's words.
func (s *Service) remoteRefused(ctx context.Context, ids []string, base, why string) {
	rtip, err := s.fetchRemote(ctx)
	moved := err == nil && rtip != base
	for _, id := range ids {
		if moved {
			s.move(id, StatusPending, func(it *Item, _ *Stats) {
				it.Candidate, it.Base, it.Head, it.Tested = "", "", "", false
			})
			continue
		}
		s.move(id, StatusPending, nil)
		s.hold(id, fmt.Sprintf("pushing to %s/%s was refused: %s", s.remote(), s.opt.Target, why),
			fmt.Sprintf("fix access to %s, then retry %s", s.remote(), id))
	}
	if moved {
		s.emit(Event{Kind: EventTargetMoved, TaskID: ids[0], Commit: rtip,
			Message: fmt.Sprintf("%s/%s moved to %s before the push: building again on it", s.remote(), s.opt.Target, short(rtip))})
		s.poke()
	}
}
