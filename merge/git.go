package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/proc"
	"github.com/chorus-dev/chorus/taskid"
)

const gitTimeout = 2 * time.Minute

// gitEnv keeps git non-interactive and its messages parseable.
var gitEnv = []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C", "GIT_MERGE_AUTOEDIT=no", "GIT_EDITOR=true"}

type gitRes struct {
	out, err string
	rc       int
}

// run executes git and reports its exit status; err is only for "could not
// run" (missing binary, timeout, cancellation).
func run(ctx context.Context, dir, stdin string, args ...string) (gitRes, error) {
	spec := proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Env: gitEnv, Timeout: gitTimeout}
	if stdin != "" {
		spec.Stdin = strings.NewReader(stdin)
	}
	r, err := proc.Run(ctx, spec)
	res := gitRes{out: string(r.Stdout), err: string(r.Stderr), rc: r.ExitCode}
	if err != nil {
		return res, fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return res, nil
}

// git runs git and turns a non-zero exit into an error with git's message.
func git(ctx context.Context, dir string, args ...string) (string, error) {
	return gitIn(ctx, dir, "", args...)
}

func gitIn(ctx context.Context, dir, stdin string, args ...string) (string, error) {
	r, err := run(ctx, dir, stdin, args...)
	if err != nil {
		return "", err
	}
	if r.rc != 0 {
		return "", &GitError{Args: args, Code: r.rc, Msg: strings.TrimSpace(r.err + "\n" + r.out)}
	}
	return strings.TrimRight(r.out, "\n"), nil
}

// GitError is a git command that exited non-zero.
type GitError struct {
	Args []string
	Code int
	Msg  string
}

func (e *GitError) Error() string {
	return fmt.Sprintf("git %s: exit %d: %s", strings.Join(e.Args, " "), e.Code, firstLines(e.Msg, 6))
}

func firstLines(s string, n int) string {
	s = strings.TrimSpace(s)
	ls := strings.Split(s, "\n")
	if len(ls) > n {
		ls = append(ls[:n], "…")
	}
	return strings.Join(ls, "\n")
}

// isAncestor reports whether a is an ancestor of (or equal to) b.
func isAncestor(ctx context.Context, dir, a, b string) (bool, error) {
	r, err := run(ctx, dir, "", "merge-base", "--is-ancestor", a, b)
	if err != nil {
		return false, err
	}
	switch r.rc {
	case 0:
		return true, nil
	case 1:
		return false, nil
	}
	return false, fmt.Errorf("git merge-base --is-ancestor %s %s: %s", short(a), short(b), strings.TrimSpace(r.err))
}

func short(h string) string {
	if len(h) > 10 {
		return h[:10]
	}
	return h
}

// validTaskID keeps ids usable as ref and directory name components (the
// one rule every package uses).
func validTaskID(id string) error { return taskid.Check(id) }

// Ref names Chorus keeps.
func candidateRef(task string) string { return "refs/chorus/candidates/" + task }
func mergedRef(task string) string    { return "refs/chorus/merged/" + task }

// CheckpointPrefix is where checkpoints live: kept by gc, hidden from
// `git tag`, not copied by clone.
const CheckpointPrefix = "refs/chorus/checkpoints/"

// checkout describes where the target branch is checked out.
type checkout struct {
	worktree string // the worktree that has the target checked out, "" if none
	busy     string // why landing must wait (an operation in progress), "" if none
	branches map[string]bool
}

// gitDirInfo is what landing needs from one worktree's git dir.
type gitDirInfo struct {
	worktree string   // its working tree
	head     string   // HEAD as written ("ref: refs/heads/x" or a hash)
	rebasing []string // branches a rebase there is rewriting (head-name)
	ops      []string // operation marker files present (MERGE_HEAD, …)
}

// gitDirEntry caches one git dir's info under the directory's identity:
// git replaces HEAD and creates or removes the operation markers by
// renaming or unlinking entries of that directory, which changes its
// mtime. An mtime too close to the moment it was read may hide a later
// change in the same clock tick, so such an entry is read again.
type gitDirEntry struct {
	mtime time.Time
	info  gitDirInfo
	ok    bool // settled: safe to reuse while the mtime holds
}

// racyWindow: an mtime this close to the read is not trusted.
const racyWindow = 2 * time.Second

var opMarkers = []struct{ file, what string }{{"MERGE_HEAD", "a merge"}, {"CHERRY_PICK_HEAD", "a cherry-pick"},
	{"REVERT_HEAD", "a revert"}, {"BISECT_START", "a bisect"}, {"rebase-merge", "a rebase"}, {"rebase-apply", "a rebase or am"}}

func readGitDir(wt, gd string) (gitDirInfo, error) {
	info := gitDirInfo{worktree: wt}
	head, err := os.ReadFile(filepath.Join(gd, "HEAD"))
	if err != nil {
		return info, err
	}
	info.head = strings.TrimSpace(string(head))
	for _, f := range []string{"rebase-merge/head-name", "rebase-apply/head-name"} {
		if b, err := os.ReadFile(filepath.Join(gd, f)); err == nil {
			info.rebasing = append(info.rebasing, strings.TrimSpace(string(b)))
		}
	}
	for _, m := range opMarkers {
		if _, err := os.Lstat(filepath.Join(gd, m.file)); err == nil {
			info.ops = append(info.ops, m.file)
		}
	}
	return info, nil
}

// gitDirs returns every worktree's git dir info — the main one first —
// read from the files git keeps, without spawning git: this runs before
// every landing. Only git dirs whose directory changed are read again, so
// a landing costs one stat per live worktree, not a read of its files.
func (s *Service) gitDirs() ([]gitDirInfo, error) {
	s.wtMu.Lock()
	defer s.wtMu.Unlock()
	if s.wtCache == nil {
		s.wtCache = map[string]gitDirEntry{}
	}
	now := time.Now()
	seen := map[string]bool{}
	var out []gitDirInfo
	look := func(gd string, wtOf func() (string, error)) {
		seen[gd] = true
		st, err := os.Stat(gd)
		if err != nil {
			return
		}
		if e, hit := s.wtCache[gd]; hit && e.ok && e.mtime.Equal(st.ModTime()) {
			out = append(out, e.info)
			return
		}
		wt, err := wtOf()
		if err != nil {
			return
		}
		info, err := readGitDir(wt, gd)
		if err != nil {
			delete(s.wtCache, gd)
			return
		}
		s.wtCache[gd] = gitDirEntry{mtime: st.ModTime(), info: info, ok: now.Sub(st.ModTime()) > racyWindow}
		out = append(out, info)
	}
	common := s.commonDir
	look(common, func() (string, error) { return s.opt.RepoDir, nil })
	ents, err := os.ReadDir(filepath.Join(common, "worktrees"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range ents {
		gd := filepath.Join(common, "worktrees", e.Name())
		look(gd, func() (string, error) {
			b, err := os.ReadFile(filepath.Join(gd, "gitdir"))
			if err != nil {
				return "", err
			}
			return filepath.Dir(strings.TrimSpace(string(b))), nil
		})
	}
	for gd := range s.wtCache {
		if !seen[gd] {
			delete(s.wtCache, gd)
		}
	}
	return out, nil
}

// targetCheckout finds where the target is checked out and whether an
// operation there (or a rebase of the target anywhere) forbids landing now.
func (s *Service) targetCheckout() (checkout, error) {
	c := checkout{branches: map[string]bool{}}
	dirs, err := s.gitDirs()
	if err != nil {
		return c, err
	}
	want := "refs/heads/" + s.opt.Target
	for _, d := range dirs {
		ref := ""
		if strings.HasPrefix(d.head, "ref:") {
			ref = strings.TrimSpace(strings.TrimPrefix(d.head, "ref:"))
			c.branches[ref] = true
		}
		for _, name := range d.rebasing {
			c.branches[name] = true
			if name == want {
				c.busy = fmt.Sprintf("a rebase of %s is in progress in %s", s.opt.Target, d.worktree)
			}
		}
		if ref != want {
			continue
		}
		c.worktree = d.worktree
		for _, m := range opMarkers {
			for _, f := range d.ops {
				if f == m.file {
					c.busy = fmt.Sprintf("%s is in progress in %s", m.what, d.worktree)
				}
			}
		}
	}
	return c, nil
}

// opInProgress reports an unfinished merge/rebase/… in a worktree.
func opInProgress(gitDir string) string {
	for _, f := range []string{"MERGE_HEAD", "CHERRY_PICK_HEAD", "REVERT_HEAD", "rebase-merge", "rebase-apply"} {
		if _, err := os.Stat(filepath.Join(gitDir, f)); err == nil {
			return f
		}
	}
	return ""
}

func fsyncConfig(off bool) []string {
	if off {
		return nil
	}
	return []string{"-c", "core.fsync=loose-object,reference", "-c", "core.fsyncMethod=batch"}
}
