package gitx

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
)

// MaxWalk bounds the commits one IsAncestor or MergeBase visits; beyond
// it they return ErrUnsupported and the caller asks git (which may use a
// commit-graph). Each commit not cached is a round trip to cat-file
// (tens of microseconds, more on a loaded machine), so a few thousand
// cost about what one git process does.
const MaxWalk = 2_000

// gitNameCmp is git's tree order: names compared bytewise as if a
// directory's name ended in '/'.
func gitNameCmp(a string, aDir bool, b string, bDir bool) int {
	n := min(len(a), len(b))
	if c := cmp.Compare(a[:n], b[:n]); c != 0 {
		return c
	}
	var ca, cb byte
	if len(a) > n {
		ca = a[n]
	} else if aDir {
		ca = '/'
	}
	if len(b) > n {
		cb = b[n]
	} else if bDir {
		cb = '/'
	}
	return cmp.Compare(ca, cb)
}

const gitlinkMode = "160000"

// DiffNames returns the paths `git diff --name-only --no-renames a b`
// prints, in its order and unquoted (as with -z); a and b are commits or
// trees. Only subtrees whose ids differ are read. ErrUnsupported when a
// submodule (gitlink) differs, since git's output then depends on
// submodule settings, or when diff.orderFile reorders the output.
func (o *ObjectStore) DiffNames(ctx context.Context, a, b string) ([]string, error) {
	set, err := o.settings(ctx)
	if err != nil {
		return nil, err
	}
	if set.orderFile {
		return nil, fmt.Errorf("diff.orderFile is set: %w", ErrUnsupported)
	}
	ta, err := o.rootTree(ctx, a)
	if err != nil {
		return nil, err
	}
	tb, err := o.rootTree(ctx, b)
	if err != nil {
		return nil, err
	}
	out := []string{}
	if err := o.diffTrees(ctx, "", ta, tb, &out); err != nil {
		return nil, err
	}
	return out, nil
}

func (o *ObjectStore) diffTrees(ctx context.Context, prefix, a, b string, out *[]string) error {
	if a == b {
		return nil
	}
	ts, err := o.treesOf(ctx, a, b)
	if err != nil {
		return err
	}
	ea, eb := ts[0], ts[1]
	// one side only: every file under it, in order.
	emit := func(e TreeEntry, deleted bool) error {
		if e.Mode == gitlinkMode {
			return fmt.Errorf("submodule %s%s differs: %w", prefix, e.Name, ErrUnsupported)
		}
		if !e.IsTree() {
			*out = append(*out, prefix+e.Name)
			return nil
		}
		if deleted {
			return o.diffTrees(ctx, prefix+e.Name+"/", e.ID, "", out)
		}
		return o.diffTrees(ctx, prefix+e.Name+"/", "", e.ID, out)
	}
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var c int
		switch {
		case i == len(ea):
			c = 1
		case j == len(eb):
			c = -1
		default:
			c = gitNameCmp(ea[i].Name, ea[i].IsTree(), eb[j].Name, eb[j].IsTree())
		}
		switch {
		case c < 0:
			if err := emit(ea[i], true); err != nil {
				return err
			}
			i++
		case c > 0:
			if err := emit(eb[j], false); err != nil {
				return err
			}
			j++
		default:
			x, y := ea[i], eb[j]
			i++
			j++
			if x.ID == y.ID && x.Mode == y.Mode {
				continue
			}
			if x.Mode == gitlinkMode || y.Mode == gitlinkMode {
				return fmt.Errorf("submodule %s%s differs: %w", prefix, x.Name, ErrUnsupported)
			}
			if x.IsTree() {
				if err := o.diffTrees(ctx, prefix+x.Name+"/", x.ID, y.ID, out); err != nil {
					return err
				}
				continue
			}
			*out = append(*out, prefix+x.Name)
		}
	}
	return nil
}

// Flags of git's paint-down walk (commit.c, paint_down_to_common).
const (
	paintOne uint8 = 1 << iota
	paintTwo
	paintStale
	paintResult
)

type walkItem struct {
	id   string
	date int64
	seq  int
}

type walkQueue []walkItem

func (q walkQueue) Len() int { return len(q) }
func (q walkQueue) Less(i, j int) bool {
	if q[i].date != q[j].date {
		return q[i].date > q[j].date
	}
	return q[i].seq < q[j].seq
}
func (q walkQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *walkQueue) Push(x any)   { *q = append(*q, x.(walkItem)) }
func (q *walkQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// paint is git's paint_down_to_common: commits reachable from one get
// paintOne, from two paintTwo; walking newest first, it stops once every
// commit left to visit is below a common ancestor already found. Every
// best common ancestor ends among the results, whatever the dates (the
// order only decides how soon it stops). stop, when set, ends the walk
// early once it returns true.
func (o *ObjectStore) paint(ctx context.Context, one, two string, stop func(map[string]uint8) bool) (map[string]uint8, []string, error) {
	set, err := o.settings(ctx)
	if err != nil {
		return nil, nil, err
	}
	if set.shallow {
		return nil, nil, fmt.Errorf("shallow or grafted history: %w", ErrUnsupported)
	}
	flags := map[string]uint8{}
	q := &walkQueue{}
	seq := 0
	push := func(id string) error {
		c, err := o.commit(ctx, id)
		if err != nil {
			return err
		}
		seq++
		heap.Push(q, walkItem{id: id, date: c.date, seq: seq})
		return nil
	}
	flags[one] |= paintOne
	if err := push(one); err != nil {
		return nil, nil, err
	}
	flags[two] |= paintTwo
	if err := push(two); err != nil {
		return nil, nil, err
	}
	var results []string
	visited := 0
	for {
		if stop != nil && stop(flags) {
			break
		}
		nonstale := false
		for _, it := range *q {
			if flags[it.id]&paintStale == 0 {
				nonstale = true
				break
			}
		}
		if !nonstale {
			break
		}
		if visited++; visited > MaxWalk {
			return nil, nil, fmt.Errorf("history walk beyond %d commits: %w", MaxWalk, ErrUnsupported)
		}
		it := heap.Pop(q).(walkItem)
		f := flags[it.id] & (paintOne | paintTwo | paintStale)
		if f == paintOne|paintTwo {
			if flags[it.id]&paintResult == 0 {
				flags[it.id] |= paintResult
				results = append(results, it.id)
			}
			f |= paintStale
		}
		c, err := o.commit(ctx, it.id)
		if err != nil {
			return nil, nil, err
		}
		o.prefetchCommits(ctx, c.Parents)
		for _, p := range c.Parents {
			if flags[p]&f == f {
				continue
			}
			flags[p] |= f
			if err := push(p); err != nil {
				return nil, nil, err
			}
		}
	}
	live := results[:0]
	for _, r := range results {
		if flags[r]&paintStale == 0 {
			live = append(live, r)
		}
	}
	return flags, live, nil
}

// IsAncestor gives the answer of `git merge-base --is-ancestor a b`: a is
// b or an ancestor of b. a and b are full commit ids.
func (o *ObjectStore) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	if err := checkID(a); err != nil {
		return false, err
	}
	if err := checkID(b); err != nil {
		return false, err
	}
	flags, _, err := o.paint(ctx, a, b, func(f map[string]uint8) bool { return f[a]&paintTwo != 0 })
	if err != nil {
		return false, err
	}
	return flags[a]&paintTwo != 0, nil
}

// MergeBase gives the answer of `git merge-base a b` when there is one
// best common ancestor; ErrNoMergeBase for unrelated histories and
// ErrUnsupported for several bases (criss-cross) or a long walk.
func (o *ObjectStore) MergeBase(ctx context.Context, a, b string) (string, error) {
	if err := checkID(a); err != nil {
		return "", err
	}
	if err := checkID(b); err != nil {
		return "", err
	}
	if a == b {
		if _, err := o.commit(ctx, a); err != nil {
			return "", err
		}
		return a, nil
	}
	_, results, err := o.paint(ctx, a, b, nil)
	if err != nil {
		return "", err
	}
	switch len(results) {
	case 0:
		return "", fmt.Errorf("%s and %s: %w", a, b, ErrNoMergeBase)
	case 1:
		return results[0], nil
	}
	// A result below another (found first because of clock skew) is not
	// a best base.
	var best []string
	for i, r := range results {
		redundant := false
		for j, s := range results {
			if i == j {
				continue
			}
			anc, err := o.IsAncestor(ctx, r, s)
			if err != nil {
				return "", err
			}
			if anc {
				redundant = true
				break
			}
		}
		if !redundant {
			best = append(best, r)
		}
	}
	if len(best) != 1 {
		return "", fmt.Errorf("%s and %s have %d merge bases (criss-cross history): %w", a, b, len(best), ErrUnsupported)
	}
	return best[0], nil
}
