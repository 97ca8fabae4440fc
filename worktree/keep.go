package worktree

// Keeping work under refs/chorus/kept/ before anything goes: the one
// naming (<task>/<time>-<kind>) that `chorus status` dates and `chorus
// prune --kept --older-than` prunes.

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/proc"
)

// KeptPrefix holds work Chorus would otherwise have made unreachable: a
// branch tip or uncommitted files from before a worktree or branch was
// removed, or a tip an agent rewound. Refs there are kept by gc, hidden from
// `git branch`, and stay until the user prunes them (`chorus prune --kept`).
const KeptPrefix = "refs/chorus/kept/"

// Kinds of kept refs: the last part of the ref name after the stamp.
const (
	KeptTip      = "tip"      // a branch tip the target does not contain
	KeptWIP      = "wip"      // a worktree's uncommitted state, as a commit on its HEAD
	KeptRewound  = "rewound"  // a tip a branch was moved away from (by its agent, or a rollback)
	KeptResolver = "resolver" // a conflict resolver's work that was stopped, timed out or undone
	KeptRollback = "rollback" // the target's tip a rollback left (named after the target, not a task)
)

// stampLayout names kept refs by time, UTC, sortable; no ':' (refs forbid it).
const stampLayout = "20060102T150405.000000000Z"

// keepTimeout bounds each git process of a keep.
const keepTimeout = 2 * time.Minute

// Kept is one kept ref.
type Kept struct {
	Ref    string    `json:"ref"`
	Commit string    `json:"commit"`
	Task   string    `json:"task"`
	Kind   string    `json:"kind"`
	Time   time.Time `json:"time"`
}

// KeepOptions says what is about to be removed.
type KeepOptions struct {
	Repo string // the repository (any worktree of it)
	Task string // names the refs
	// Branch (short name or full ref) is about to be deleted or moved;
	// its tip is kept unless Target contains it. "" keeps no tip.
	Branch string
	// Worktree is about to be removed; its uncommitted state is kept when
	// there is any. "" or a missing directory keeps nothing.
	Worktree string
	// Target is the branch whose history counts as safe ("" none).
	Target string
	// Why goes into the snapshot commit's message.
	Why string
}

// Keep saves, under KeptPrefix, whatever removing opts.Worktree and
// opts.Branch would lose, and returns what it kept. An error means nothing
// may be removed: the caller must leave the worktree and branch alone.
func Keep(ctx context.Context, o KeepOptions) ([]Kept, error) {
	now := time.Now()
	var out []Kept
	if o.Worktree != "" {
		if st, err := os.Stat(o.Worktree); err == nil && st.IsDir() {
			wip, err := SnapshotWIP(ctx, o.Worktree, "chorus: kept uncommitted work of "+o.Task+" before "+o.Why)
			if err != nil {
				return out, fmt.Errorf("saving the uncommitted work in %s: %w", o.Worktree, err)
			}
			if wip != "" {
				k, err := keepRef(ctx, o.Repo, o.Task, KeptWIP, wip, now)
				if err != nil {
					return out, err
				}
				out = append(out, k)
			}
		}
	}
	if o.Branch != "" {
		ref := o.Branch
		if !strings.HasPrefix(ref, "refs/") {
			ref = "refs/heads/" + ref
		}
		tip, err := gitx.Git(ctx, o.Repo, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
		if err != nil || tip == "" {
			return out, nil // no such branch: nothing to lose
		}
		if o.Target != "" && isAncestor(ctx, o.Repo, tip, o.Target) {
			return out, nil
		}
		k, err := keepRef(ctx, o.Repo, o.Task, KeptTip, tip, now)
		if err != nil {
			return out, err
		}
		out = append(out, k)
	}
	return out, nil
}

// KeepRewound keeps oldTip when newTip does not descend from it: the branch
// was reset or rebased and oldTip's commits could become unreachable. It
// reports whether it kept anything.
func KeepRewound(ctx context.Context, repo, task, oldTip, newTip string) (Kept, bool, error) {
	if oldTip == "" || newTip == "" || oldTip == newTip {
		return Kept{}, false, nil
	}
	if _, err := gitx.Git(ctx, repo, "cat-file", "-e", oldTip+"^{commit}"); err != nil {
		return Kept{}, false, nil // already gone (gc after an earlier run): nothing to save
	}
	if isAncestor(ctx, repo, oldTip, newTip) {
		return Kept{}, false, nil
	}
	k, err := keepRef(ctx, repo, task, KeptRewound, oldTip, time.Now())
	return k, err == nil, err
}

// KeepCommit keeps commit under refs/chorus/kept/<task>/<time>-<kind>:
// work that is about to become unreachable for another reason than a
// removal (a resolver's work set aside).
func KeepCommit(ctx context.Context, repo, task, kind, commit string) (Kept, error) {
	return keepRef(ctx, repo, task, kind, commit, time.Now())
}

func isAncestor(ctx context.Context, repo, a, b string) bool {
	_, err := gitx.Git(ctx, repo, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

var unsafeRef = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9_-]+`) })

// refPart makes a task id one safe ref component.
func refPart(s string) string {
	s = unsafeRef().ReplaceAllString(s, "_")
	if s == "" {
		return "_"
	}
	return s
}

func keepRef(ctx context.Context, repo, task, kind, commit string, now time.Time) (Kept, error) {
	k := Kept{Task: task, Kind: kind, Commit: commit, Time: now.UTC()}
	for n := 0; ; n++ {
		stamp := now.UTC().Format(stampLayout)
		if n > 0 {
			stamp += fmt.Sprintf("_%d", n)
		}
		k.Ref = KeptPrefix + refPart(task) + "/" + stamp + "-" + kind
		// The empty old value makes git refuse to overwrite an existing ref.
		_, err := gitx.Git(ctx, repo, "update-ref", "-m", "chorus: keep "+kind+" of "+task, k.Ref, commit, "")
		if err == nil {
			return k, nil
		}
		if n >= 5 {
			return k, fmt.Errorf("keeping %s of %s: %w", kind, task, err)
		}
	}
}

// SnapshotWIP records the worktree's full state (tracked changes and
// untracked files git does not ignore) as a commit whose parent is HEAD,
// without touching the worktree's files or its index: the files are staged
// into a temporary index. It returns "" when there is nothing uncommitted.
func SnapshotWIP(ctx context.Context, dir, msg string) (string, error) {
	st, err := gitx.Git(ctx, dir, "status", "--porcelain", "--untracked-files=all")
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(st) == "" {
		return "", nil
	}
	index, err := gitx.Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		return "", err
	}
	// The temporary index starts as a copy of the real one, so git reuses
	// its stat data instead of hashing every file again.
	tmp, err := os.CreateTemp(filepath.Dir(index), "chorus-keep-index-*")
	if err != nil {
		return "", err
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName)
	if src, err := os.Open(index); err == nil {
		_, err = io.Copy(tmp, src)
		src.Close()
		if err != nil {
			tmp.Close()
			return "", err
		}
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	env := []string{"GIT_INDEX_FILE=" + tmpName}
	if _, err := gitEnv(ctx, dir, env, "add", "-A"); err != nil {
		return "", err
	}
	tree, err := gitEnv(ctx, dir, env, "write-tree")
	if err != nil {
		return "", err
	}
	args := []string{"-c", "user.name=Chorus", "-c", "user.email=chorus@localhost", "commit-tree", tree, "-m", msg}
	if head, err := gitx.Git(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}"); err == nil && head != "" {
		args = append(args, "-p", head)
	}
	return gitEnv(ctx, dir, nil, args...)
}

// gitEnv is Git with extra environment.
func gitEnv(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	r, err := proc.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Timeout: keepTimeout,
		Env: append([]string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}, env...)})
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	if r.ExitCode != 0 {
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), strings.TrimSpace(string(r.Stderr)))
	}
	return strings.TrimSpace(string(r.Stdout)), nil
}

// ListKept returns the kept refs, oldest first.
func ListKept(ctx context.Context, repo string) ([]Kept, error) {
	// Mostly there is none, and the ref files say so: no git process
	// (a fifth of `chorus status`'s CPU).
	if gitx.NoRefsUnder(repo, KeptPrefix) {
		return nil, nil
	}
	out, err := gitx.Git(ctx, repo, "for-each-ref", "--format=%(refname)%00%(objectname)", KeptPrefix)
	if err != nil {
		return nil, err
	}
	var res []Kept
	for _, l := range strings.Split(out, "\n") {
		ref, obj, ok := strings.Cut(l, "\x00")
		if !ok {
			continue
		}
		k := Kept{Ref: ref, Commit: obj}
		rest := strings.TrimPrefix(ref, KeptPrefix)
		task, name, _ := strings.Cut(rest, "/")
		k.Task = task
		if i := strings.LastIndexByte(name, '-'); i > 0 {
			k.Kind = name[i+1:]
			stamp, _, _ := strings.Cut(name[:i], "_")
			k.Time, _ = time.Parse(stampLayout, stamp)
		}
		res = append(res, k)
	}
	sort.SliceStable(res, func(i, j int) bool { return res[i].Time.Before(res[j].Time) })
	return res, nil
}

// PruneKept deletes the kept refs older than olderThan (all of them when
// olderThan is 0) and returns what it deleted. The commits stay in the
// object store until git's own gc expires them.
func PruneKept(ctx context.Context, repo string, olderThan time.Duration, now time.Time) ([]Kept, error) {
	all, err := ListKept(ctx, repo)
	if err != nil {
		return nil, err
	}
	var gone []Kept
	for _, k := range all {
		if olderThan > 0 && (k.Time.IsZero() || now.Sub(k.Time) < olderThan) {
			continue
		}
		if _, err := gitx.Git(ctx, repo, "update-ref", "-d", k.Ref, k.Commit); err != nil {
			return gone, err
		}
		gone = append(gone, k)
	}
	return gone, nil
}
