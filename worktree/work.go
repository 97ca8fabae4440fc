package worktree

import (
	"context"
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// CommitWIP commits every uncommitted change in the worktree, untracked
// files included, on the agent branch, so that stopping an agent never
// loses its work. Hooks are skipped: this is a save, not a submission. It
// reports whether a commit was made. The scratchpad alone is not work: a
// worktree holding nothing else uncommitted needs no commit.
func (m *Manager) CommitWIP(ctx context.Context, wt Worktree, msg string) (bool, error) {
	if gitx.SurelyClean(wt.Dir, IsScratchpad) {
		return false, nil // the usual case once an agent has committed
	}
	st, err := m.git(ctx, wt.Dir, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return false, err
	}
	if st == "" {
		return false, nil
	}
	if _, err := m.git(ctx, wt.Dir, "add", "-A"); err != nil {
		return false, err
	}
	args := append(m.identity(ctx, wt.Dir), "commit", "--no-verify", "-q", "-m", msg)
	if _, err := m.git(ctx, wt.Dir, args...); err != nil {
		return false, err
	}
	return true, nil
}

// ScratchpadPath is the agent's note file in its worktree (relative,
// slash-separated): Chorus writes it, so on its own it is not work.
const ScratchpadPath = ".agent/scratchpad.md"

// IsScratchpad says whether rel (slash-separated, relative to a worktree)
// is the scratchpad; a gitx.SurelyClean notWork.
func IsScratchpad(rel string) bool { return rel == ScratchpadPath }

// Work is what a worktree holds of its own, the scratchpad aside: what
// its branch adds to the target, and what is not committed.
type Work struct {
	// Committed: the branch changes something relative to its merge base
	// with the target (git diff target...HEAD). A branch that only moved
	// along the target (fast-forwarded, rebased with nothing of its own)
	// has none, whatever moved since its worktree was made.
	Committed bool
	// Uncommitted lists the files changed or untracked and not committed,
	// slash-separated, relative to the worktree.
	Uncommitted []string
}

// Empty reports whether there is nothing of the worktree's own at all.
func (w Work) Empty() bool { return !w.Committed && len(w.Uncommitted) == 0 }

// OwnWork reads what the worktree holds of its own (see Work). verified,
// when known, is the target tip the merge queue vouches for (it landed or
// accepted it): a branch the target contains though that tip does not was
// put on the target behind the queue's back (an agent moved the target
// onto it), and its work is what it gained since its worktree was made,
// still to be verified by the queue.
func (m *Manager) OwnWork(ctx context.Context, wt Worktree, verified string) (Work, error) {
	var w Work
	var err error
	if w.Committed, err = m.committedWork(ctx, wt); err != nil {
		return w, err
	}
	if !w.Committed && verified != "" {
		if w.Committed, err = m.movedOnto(ctx, wt, verified); err != nil {
			return w, err
		}
	}
	w.Uncommitted, err = m.uncommitted(ctx, wt)
	return w, err
}

// movedOnto reports a branch that moved since its worktree was made, that
// the target contains and the verified tip does not, with a change since
// wt.Head: the target was moved onto it outside the merge queue. A branch
// that only fast-forwarded along the queue's landings is in the verified
// tip, and has nothing of its own.
func (m *Manager) movedOnto(ctx context.Context, wt Worktree, verified string) (bool, error) {
	head, err := m.HeadCommit(ctx, wt)
	if err != nil || wt.Head == "" || head == wt.Head {
		return false, err
	}
	for _, c := range []struct {
		anc  string
		want int
	}{{m.Target, 0}, {verified, 1}} {
		code, err := m.gitCode(ctx, wt.Dir, "merge-base", "--is-ancestor", head, c.anc)
		if err != nil {
			return false, err
		}
		if code > 1 {
			return false, fmt.Errorf("git merge-base --is-ancestor %s %s: exit %d", head, c.anc, code)
		}
		if code != c.want {
			return false, nil
		}
	}
	code, err := m.gitCode(ctx, wt.Dir, "diff", "--quiet", wt.Head, head, "--", ".", ":(exclude)"+ScratchpadPath)
	if err != nil {
		return false, err
	}
	if code > 1 {
		return false, fmt.Errorf("git diff %s %s: exit %d", wt.Head, head, code)
	}
	return code == 1, nil
}

// uncommitted lists the worktree's changed and untracked files (git
// status), the scratchpad aside; a surely clean worktree needs no git.
func (m *Manager) uncommitted(ctx context.Context, wt Worktree) ([]string, error) {
	if gitx.SurelyClean(wt.Dir, IsScratchpad) {
		return nil, nil
	}
	st, err := m.gitRaw(ctx, wt.Dir, "status", "--porcelain", "-z", "--untracked-files=all", "--", ".", ":(exclude)"+ScratchpadPath)
	if err != nil {
		return nil, err
	}
	return statusPaths(st), nil
}

// statusPaths reads the paths of `git status --porcelain -z`: "XY path"
// entries, a rename or copy followed by its source as an entry of its own.
func statusPaths(st string) []string {
	var out []string
	entries := strings.Split(st, "\x00")
	for i := 0; i < len(entries); i++ {
		e := entries[i]
		if len(e) < 4 {
			continue
		}
		out = append(out, e[3:])
		if e[0] == 'R' || e[0] == 'C' {
			i++ // the source path
		}
	}
	return out
}

// committedWork reports whether the worktree's branch changes something
// relative to its merge base with the target, the scratchpad aside.
func (m *Manager) committedWork(ctx context.Context, wt Worktree) (bool, error) {
	if has, err := m.committedWorkInProcess(ctx, wt); err == nil {
		return has, nil
	}
	return m.committedWorkGit(ctx, wt)
}

// committedWorkGit is committedWork asking git (diff A...B diffs from
// their merge base).
func (m *Manager) committedWorkGit(ctx context.Context, wt Worktree) (bool, error) {
	switch code, err := m.gitCode(ctx, wt.Dir, "diff", "--quiet", m.Target+"...HEAD", "--", ".", ":(exclude)"+ScratchpadPath); {
	case err != nil:
		return false, err
	case code == 1:
		return true, nil
	case code == 0:
		return false, nil
	default:
		return false, fmt.Errorf("git diff %s...HEAD: exit %d", m.Target, code)
	}
}

// committedWorkInProcess is committedWork answered from the object store;
// any error sends the caller to git.
func (m *Manager) committedWorkInProcess(ctx context.Context, wt Worktree) (bool, error) {
	objs, common, ok := m.objects(ctx)
	if !ok {
		return false, gitx.ErrUnsupported
	}
	head := gitx.WorktreeHead(wt.Dir)
	tip, exists, known := gitx.ReadRef(common, "refs/heads/"+m.Target)
	if head == "" || !exists || !known {
		return false, gitx.ErrUnsupported
	}
	base, err := objs.MergeBase(ctx, tip, head)
	if err != nil {
		return false, err
	}
	names, err := objs.DiffNames(ctx, base, head)
	if err != nil {
		return false, err
	}
	for _, n := range names {
		if n != ScratchpadPath {
			return true, nil
		}
	}
	return false, nil
}

// HeadCommit returns the commit checked out in the worktree, read from
// git's files where they are plain (every iteration asks), from git
// otherwise.
func (m *Manager) HeadCommit(ctx context.Context, wt Worktree) (string, error) {
	if h := gitx.WorktreeHead(wt.Dir); h != "" {
		return h, nil
	}
	return m.git(ctx, wt.Dir, "rev-parse", "HEAD")
}

// CommitsSince lists the commits on the worktree's HEAD that base lacks,
// oldest first.
func (m *Manager) CommitsSince(ctx context.Context, wt Worktree, base string) ([]string, error) {
	out, err := m.git(ctx, wt.Dir, "rev-list", "--reverse", base+"..HEAD", "--")
	if err != nil {
		return nil, err
	}
	if out == "" {
		return nil, nil
	}
	return strings.Split(out, "\n"), nil
}

// ChangedFiles lists the files that differ between base and the
// worktree's HEAD (git diff --name-only), for the task's ledger.
func (m *Manager) ChangedFiles(ctx context.Context, wt Worktree, base string) ([]string, error) {
	// In-process (a rename is listed as its two paths); git when the
	// store cannot answer.
	if objs, _, ok := m.objects(ctx); ok && gitx.IsHash(base) {
		if head := gitx.WorktreeHead(wt.Dir); head != "" {
			if names, err := objs.DiffNames(ctx, base, head); err == nil {
				return names, nil
			}
		}
	}
	out, err := m.git(ctx, wt.Dir, "diff", "--name-only", base, "HEAD", "--")
	if err != nil || out == "" {
		return nil, err
	}
	return strings.Split(out, "\n"), nil
}
