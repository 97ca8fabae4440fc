package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge/driver"
)

// LearningsPath and IssuesPath are the shared files every task appends to.
const (
	LearningsPath = ".agent/learnings.md"
	IssuesPath    = ".beads/issues.jsonl"
)

// LockFiles are regenerated with merge.lockfileCommand instead of merged.
var LockFiles = []string{"package-lock.json", "yarn.lock", "pnpm-lock.yaml", "Cargo.lock", "go.sum",
	"poetry.lock", "Gemfile.lock", "composer.lock", "uv.lock"}

const attrBegin, attrEnd = "# >>> chorus merge drivers", "# <<< chorus merge drivers"

// registerDrivers defines the drivers in the repository config and maps
// paths to them in $GIT_DIR/info/attributes: in git 2.39 merge-tree reads
// attributes only from there and from the working tree it runs in, never
// from the commits being merged.
func (s *Service) registerDrivers(ctx context.Context) error {
	cmd := s.opt.DriverCommand
	if cmd == "" {
		exe, err := os.Executable()
		if err != nil {
			return err
		}
		cmd = shellQuote(exe) + " merge-driver"
	}
	// One read of what is set; a write only for what differs (the usual
	// session writes nothing).
	have := map[string]string{}
	if out, err := git(ctx, s.opt.RepoDir, "config", "--local", "-z", "--get-regexp", `^merge\.chorus-`); err == nil {
		for _, kv := range strings.Split(out, "\x00") {
			if k, v, ok := strings.Cut(kv, "\n"); ok {
				have[k] = v
			}
		}
	}
	set := func(k, v string) error {
		if got, ok := have[k]; ok && got == v {
			return nil
		}
		_, err := git(ctx, s.opt.RepoDir, "config", "--local", k, v)
		return err
	}
	kinds := []string{driver.Learnings, driver.JSONL}
	if s.opt.Merge.LockfileCommand != "" {
		kinds = append(kinds, driver.Lock)
	}
	for _, k := range kinds {
		if err := set("merge.chorus-"+k+".name", "Chorus "+k+" merge"); err != nil {
			return err
		}
		if err := set("merge.chorus-"+k+".driver", cmd+" "+k+" %O %A %B %P"); err != nil {
			return err
		}
	}
	block := []string{attrBegin, LearningsPath + " merge=chorus-learnings", IssuesPath + " merge=chorus-jsonl"}
	if s.opt.Merge.LockfileCommand != "" {
		for _, l := range LockFiles {
			block = append(block, l+" merge=chorus-lock")
		}
	}
	block = append(block, attrEnd)
	p := filepath.Join(s.commonDir, "info", "attributes")
	b, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	old := string(b)
	keep := old
	if i := strings.Index(old, attrBegin); i >= 0 {
		if j := strings.Index(old[i:], attrEnd); j >= 0 {
			keep = old[:i] + strings.TrimPrefix(old[i+j+len(attrEnd):], "\n")
		}
	}
	if keep != "" && !strings.HasSuffix(keep, "\n") {
		keep += "\n"
	}
	next := keep + strings.Join(block, "\n") + "\n"
	if next == old {
		return nil
	}
	// Replaced whole: the user's own lines in it must survive a stop
	// while it is written.
	return chorusdir.WriteAtomic(p, []byte(next), 0o644)
}

// shellQuote makes s one word for sh (git runs drivers through the shell).
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// ensureIntegration creates (once) the detached, locked worktree where
// merge-tree runs (so driver temp files land there, not in the user's
// checkout) and where candidates are tested. It is reused for every merge.
func (s *Service) ensureIntegration(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(s.in.integ, ".git")); err == nil {
		s.clearIntegration(ctx)
		return nil
	}
	// Without its .git it is no worktree any more: what is left of it is
	// Chorus's own (a candidate's build), and goes.
	s.opt.Worktrees.RemoveScratch(ctx, s.in.integ)
	if err := s.opt.Worktrees.AddDetached(ctx, s.in.integ, "refs/heads/"+s.opt.Target, "chorus integration worktree"); err != nil {
		return fmt.Errorf("merge: create integration worktree: %w", err)
	}
	return nil
}

// integGitDir is the integration worktree's private git dir.
func (s *Service) integGitDir() string {
	b, err := os.ReadFile(filepath.Join(s.in.integ, ".git"))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(string(b)), "gitdir:"))
}

// clearIntegration removes what a killed Chorus may have left in its own
// worktree: an unfinished revert or cherry-pick, and stale lock files. Only
// Chorus uses this worktree, and only one Chorus runs per repository.
func (s *Service) clearIntegration(ctx context.Context) {
	gd := s.integGitDir()
	if gd == "" {
		return
	}
	clearLocks(ctx, gd, false)
	if opInProgress(gd) != "" || dirExists(filepath.Join(gd, "sequencer")) {
		for _, op := range []string{"revert", "cherry-pick"} {
			_, _ = run(ctx, s.in.integ, "", op, "--quit")
		}
		_, _ = run(ctx, s.in.integ, "", "merge", "--quit")
		for _, f := range []string{"MERGE_HEAD", "MERGE_MSG", "MERGE_MODE", "CHERRY_PICK_HEAD", "REVERT_HEAD"} {
			_ = os.Remove(filepath.Join(gd, f))
		}
		_, _ = run(ctx, s.in.integ, "", "reset", "-q", "--hard")
	}
}

func dirExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

// checkoutInteg puts commit c into the integration worktree, discarding
// whatever the previous candidate's tests left (ignored files, such as
// build caches, are kept).
func (s *Service) checkoutInteg(ctx context.Context, c string) error {
	if _, err := git(ctx, s.in.integ, "checkout", "-q", "--detach", "-f", c); err != nil {
		// A lock a killed git left (HEAD.lock, index.lock) fails every
		// checkout here until it goes.
		if gd := s.integGitDir(); gd == "" || !clearLocks(ctx, gd, true) {
			return err
		}
		if _, err := git(ctx, s.in.integ, "checkout", "-q", "--detach", "-f", c); err != nil {
			return err
		}
	}
	_, err := git(ctx, s.in.integ, "clean", "-q", "-f", "-d")
	return err
}

// staleLockAge: a lock file in the integration worktree's git dir left
// unchanged this long is a killed git's. Only the integrator runs git
// there, one command at a time, so a lock it finds is a git of a Chorus
// that was killed: still running (it will finish within this), or killed
// too, when it leaves its locks behind for good.
var staleLockAge = 10 * time.Second

// clearLocks removes the lock files in the integration worktree's git dir
// gd that are older than staleLockAge; with wait, a younger one is waited
// for until it goes or ages. It reports whether it found any, all gone
// now unless it did not wait.
func clearLocks(ctx context.Context, gd string, wait bool) bool {
	locks, _ := filepath.Glob(filepath.Join(gd, "*.lock"))
	for _, l := range locks {
		for {
			st, err := os.Stat(l)
			if err != nil {
				break
			}
			left := staleLockAge - time.Since(st.ModTime())
			if left <= 0 {
				_ = os.Remove(l)
				break
			}
			if !wait {
				break
			}
			t := time.NewTimer(left)
			select {
			case <-ctx.Done():
				t.Stop()
				return false
			case <-t.C:
			}
		}
	}
	return len(locks) > 0
}
