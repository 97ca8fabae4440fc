package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/gitx"
)

// integrator takes items from the queue and lands them, one at a time,
// on a goroutine of its own (run): the candidate merge, the quality gate,
// batches, the fenced landing, the holds when the target moves. It is
// also the service's hands on the repository: the object store, the
// queue's ref transactions, the integration worktree, and what it
// remembers of the commits it made (the chain of landings, the last
// candidate's tree), so it asks git only what the files cannot tell. It
// holds no queue state: items change through q's bookkeeping; its own
// lock (memMu) is a leaf.
type integrator struct {
	// q is the queue the integrator takes items from and reports to.
	q *Service

	repoDir, commonDir string
	target             string // the target branch's name
	integ              string // Chorus's detached integration worktree
	noFsync            bool
	// refs applies the queue's own ref transactions (candidates, merged
	// refs, landed branches' deletion) through one git process.
	refs *gitx.RefUpdater
	// objs reads commits and trees and writes merge commits (and the
	// trees of merges that touch different files) in-process.
	objs *gitx.ObjectStore

	memMu sync.Mutex
	// chain: merges landed one on another, ending at chainTip (extendChain).
	chain    map[string]bool
	chainTip string
	// lastCommit/lastTree: the last candidate made and its tree (tips).
	lastCommit, lastTree string
}

// run is the integrator's loop: it settles what a crash left (once
// restored), takes the target's tip as the baseline, then takes the
// queue's next item or batch and carries it as far as it goes, one at a
// time under opMu, watching the target while the queue is idle. It ends
// with ctx, or after Drain once the queue is idle.
func (in *integrator) run(ctx context.Context) error {
	q := in.q
	watch := time.NewTicker(q.opt.WatchInterval)
	defer watch.Stop()
	observed := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		if q.reconciling() {
			q.opMu.Lock()
			err := in.reconcileAll(ctx)
			q.opMu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		if !observed {
			// A new session takes the tip it finds as its baseline.
			observed = true
			q.opMu.Lock()
			in.observeTarget()
			q.opMu.Unlock()
			in.warm(ctx)
			q.baselineTaken()
		}
		w := q.take()
		if w.id != "" {
			q.opMu.Lock()
			if w.batch != nil {
				in.processBatch(ctx, w.batch)
			} else {
				in.process(ctx, w.id)
			}
			q.opMu.Unlock()
			q.release()
			continue
		}
		if w.idle && w.draining {
			if len(w.waiting) > 0 {
				return &WaitingError{Items: w.waiting}
			}
			return nil
		}
		var gather <-chan time.Time // a lone candidate waiting for others (gather.go)
		if w.gather > 0 {
			gather = time.After(w.gather)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-q.wake:
		case <-gather:
		case <-watch.C:
			q.opMu.Lock()
			in.watchTarget(ctx)
			q.opMu.Unlock()
		}
	}
}

// warm starts what the first landing would otherwise start on its path:
// the object store's cat-file, and the repository's settings and
// identities its commits are written with (three git processes). A
// failure is left for that landing to meet (nothing failed is cached).
func (in *integrator) warm(ctx context.Context) {
	if tip, err := in.readTarget(); err == nil {
		_ = in.treeOf(tip)
	}
	_, _, _ = in.objs.Ident(ctx)
}

// ancestor reports whether a is an ancestor of (or equal to) b in the
// service's repository: in-process for commit ids and plainly stored refs,
// git otherwise.
func (in *integrator) ancestor(ctx context.Context, a, b string) (bool, error) {
	resolve := func(x string) string {
		if gitx.IsHash(x) {
			return x
		}
		if strings.HasPrefix(x, "refs/") {
			if h, ok, known := in.refValue(x); ok && known {
				return h
			}
		}
		return ""
	}
	if ha, hb := resolve(a), resolve(b); ha != "" && hb != "" {
		if in, err := in.objs.IsAncestor(ctx, ha, hb); err == nil {
			return in, nil
		}
	}
	return isAncestor(ctx, in.repoDir, a, b)
}

// durable prefixes git args so the objects and refs that land work are
// fsynced (git's default syncs neither loose objects nor refs), unless the
// options turn that off. Batch mode flushes a merge's many tree objects
// with one disk barrier instead of one each: half the cost of a merge.
func (in *integrator) durable(args ...string) []string {
	return append(fsyncConfig(in.noFsync), args...)
}

// commitTree writes a commit like `git commit-tree TREE -p P… -m M…`,
// in-process where the repository allows it (gitx.ObjectStore.WriteCommit:
// the same bytes, so the same id), with git otherwise (signed commits,
// other object formats).
func (in *integrator) commitTree(ctx context.Context, tree string, parents []string, msgs ...string) (string, error) {
	if author, committer, err := in.objs.Ident(ctx); err == nil {
		c, err := in.objs.WriteCommit(ctx, gitx.NewCommit{Tree: tree, Parents: parents, Messages: msgs,
			Author: author, Committer: committer, Durable: !in.noFsync})
		if err == nil || !errors.Is(err, gitx.ErrUnsupported) {
			return c, err
		}
	}
	args := []string{"commit-tree", tree}
	for _, p := range parents {
		args = append(args, "-p", p)
	}
	for _, m := range msgs {
		args = append(args, "-m", m)
	}
	return git(ctx, in.repoDir, in.durable(args...)...)
}

// refTxn applies update-ref --stdin lines (one per line of txn) as one
// transaction through the service's long-lived git.
func (in *integrator) refTxn(ctx context.Context, txn string) error {
	return in.refs.Apply(ctx, strings.Split(strings.TrimRight(txn, "\n"), "\n"))
}

// extendChain records a landing from base to commit. The chain holds the
// merges this service landed one on another: while the target is still at
// the chain's tip, each of them is reachable from it without asking git.
func (in *integrator) extendChain(base, commit string) {
	in.memMu.Lock()
	defer in.memMu.Unlock()
	if in.chain == nil || in.chainTip != base {
		in.chain = map[string]bool{}
	}
	in.chain[commit] = true
	in.chainTip = commit
}

// onChain reports that commit is known to be reachable from tip.
func (in *integrator) onChain(commit, tip string) bool {
	in.memMu.Lock()
	defer in.memMu.Unlock()
	return tip != "" && tip == in.chainTip && in.chain[commit]
}

// rememberTree notes the tree of a commit this service made: after it
// lands, the next merge needs the target's tree without asking git.
func (in *integrator) rememberTree(commit, tree string) {
	in.memMu.Lock()
	in.lastCommit, in.lastTree = commit, tree
	in.memMu.Unlock()
}

func (in *integrator) treeOf(commit string) string {
	in.memMu.Lock()
	if commit == in.lastCommit {
		defer in.memMu.Unlock()
		return in.lastTree
	}
	in.memMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	if c, err := in.objs.Commit(ctx, commit); err == nil {
		return c.Tree
	}
	return ""
}

// tips resolves the target tip, its tree and the branch tip in one call.
func (in *integrator) tips(ctx context.Context, mergeRef string) (tip, tipTree, head string, err error) {
	ref := mergeRef
	if !strings.HasPrefix(ref, "refs/") {
		ref = "refs/heads/" + ref
	}
	t := "refs/heads/" + in.target
	// In-process when both refs read plainly (the tree from the object
	// store, or remembered when this service made the commit).
	if tip, ok, known := in.refValue(t); known && ok {
		if tree := in.treeOf(tip); tree != "" {
			if h, ok, known := in.refValue(ref); known && ok {
				return tip, tree, h, nil
			}
		}
	}
	out, e := git(ctx, in.repoDir, "rev-parse", t, t+"^{tree}", ref+"^{commit}")
	if e == nil {
		f := strings.Fields(out)
		if len(f) == 3 {
			return f[0], f[1], f[2], nil
		}
	}
	if _, e2 := git(ctx, in.repoDir, "rev-parse", "--verify", "-q", t); e2 != nil {
		return "", "", "", fmt.Errorf("%w: %s", errNoTarget, in.target)
	}
	return "", "", "", fmt.Errorf("branch %s not found", mergeRef)
}

// mergeTree computes the merge in the integration worktree (the drivers'
// temp files go there) without touching any index or file.
func (in *integrator) mergeTree(ctx context.Context, base, head string) (mergeResult, error) {
	// Branches that change different paths merge in-process (the same
	// tree git would write); anything else asks git.
	if mb, err := in.objs.MergeBase(ctx, base, head); err == nil {
		if tree, ok, err := in.objs.MergeTrees(ctx, mb, base, head); err == nil && ok {
			return mergeResult{tree: tree, clean: true}, nil
		}
	}
	r, err := run(ctx, in.integ, "", "merge-tree", "--write-tree", "-z", "--name-only", base, head)
	if err != nil {
		return mergeResult{}, err
	}
	if r.rc != 0 && r.rc != 1 {
		return mergeResult{}, fmt.Errorf("git merge-tree: exit %d: %s", r.rc, firstLines(r.err, 4))
	}
	return parseMergeTree(r.out, r.rc == 0), nil
}

// readTarget returns the target's tip. It reads the loose ref file or
// packed-refs in-process — the idle watch calls it every few seconds and a
// git process per check would cost more than the check — and falls back to
// git for anything unusual (a symbolic ref, another ref storage).
func (in *integrator) readTarget() (string, error) {
	name := "refs/heads/" + in.target
	if b, err := os.ReadFile(filepath.Join(in.commonDir, filepath.FromSlash(name))); err == nil {
		if h := strings.TrimSpace(string(b)); isHash(h) {
			return h, nil
		}
	} else if errors.Is(err, os.ErrNotExist) {
		if h, ok := packedRef(filepath.Join(in.commonDir, "packed-refs"), name); ok {
			return h, nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	h, err := git(ctx, in.repoDir, "rev-parse", "--verify", "-q", name)
	if err != nil {
		return "", fmt.Errorf("%w: %s", errNoTarget, in.target)
	}
	return h, nil
}

// refValue reads a ref of the common git dir in-process (see gitx.ReadRef).
func (in *integrator) refValue(name string) (hash string, exists, known bool) {
	return gitx.ReadRef(in.commonDir, name)
}
