package gitx

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ObjectStore reads and writes the objects of one repository without a git
// process per call: reads go through one long-lived `git cat-file --batch`
// (git's own object access: packs, alternates, replace refs), writes are
// loose objects written here. On hot paths (every landing, every merge) a
// process start costs more than the work. Anything it does not handle
// returns ErrUnsupported and the caller runs git as before.
type ObjectStore struct {
	repo string

	mu      sync.Mutex // one request at a time on the batch process
	cf      *catFile
	closed  bool
	shares  int           // Share calls not yet matched by a Close
	timeout time.Duration // per read; a stuck process is killed

	cacheMu sync.Mutex
	commits map[string]*commitInfo
	trees   map[string][]TreeEntry

	setMu     sync.Mutex
	setLoaded bool
	set       settings
	identMu   sync.Mutex
	idents    *[2]Ident
	durable   bool
	writeMu   sync.Mutex // guards durable
	objDirMu  sync.Mutex
	objDir    string
}

// ErrUnsupported means the in-process path does not handle this repository
// or this case (sha256 objects, signed commits, a commit encoding, shallow
// history, a walk beyond its bound, …); run git instead.
var ErrUnsupported = errors.New("not handled in-process; run git")

// ErrNoMergeBase means the two commits share no history.
var ErrNoMergeBase = errors.New("no merge base")

// ErrMissing is wrapped when an object does not exist.
var ErrMissing = errors.New("object not found")

// Commit is what the walks need of a commit.
type Commit struct {
	Tree    string
	Parents []string
}

// TreeEntry is one entry of a tree object, as stored.
type TreeEntry struct {
	Mode string // "100644", "100755", "120000", "40000", "160000"
	Name string
	ID   string
}

// IsTree reports a subdirectory entry.
func (e TreeEntry) IsTree() bool { return e.Mode == "40000" }

type commitInfo struct {
	Commit
	date int64 // committer time, for walk order
}

const (
	defaultReadTimeout = 30 * time.Second
	maxCachedCommits   = 100_000
	maxCachedTrees     = 8_192
	maxObjectRead      = 64 << 20 // larger objects are not commits or trees we walk
)

// OpenObjects returns the object store of the repository containing repo
// (any directory of it that lives as long as the store, such as the main
// worktree: cat-file runs there). Nothing starts until the first read.
func OpenObjects(repo string) *ObjectStore {
	return &ObjectStore{repo: repo, timeout: defaultReadTimeout,
		commits: map[string]*commitInfo{}, trees: map[string][]TreeEntry{}}
}

// SetDurable makes every later write fsync the object and its directory
// (for repositories that ask for it with core.fsync), including the trees
// MergeTrees writes.
func (o *ObjectStore) SetDurable(on bool) {
	o.writeMu.Lock()
	o.durable = on
	o.writeMu.Unlock()
}

func (o *ObjectStore) isDurable() bool {
	o.writeMu.Lock()
	defer o.writeMu.Unlock()
	return o.durable
}

// Share hands the store to one more user (another package working on the
// same repository, so one cat-file serves both); each user calls Close,
// and the last Close ends the process.
func (o *ObjectStore) Share() *ObjectStore {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.shares++
	return o
}

// Close ends the batch process (once every Share is closed too). The
// store may be used again afterwards only by opening a new one.
func (o *ObjectStore) Close() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.shares > 0 {
		o.shares--
		return nil
	}
	o.closed = true
	if o.cf == nil {
		return nil
	}
	err := o.cf.close()
	o.cf = nil
	return err
}

// checkID refuses anything but a full lower-case hex object name, so no
// revision expression ever reaches cat-file.
func checkID(id string) error {
	if len(id) == 64 && IsHash(id) {
		return fmt.Errorf("%s: sha256 object names: %w", id, ErrUnsupported)
	}
	if len(id) != 40 || !IsHash(id) {
		return fmt.Errorf("%q is not a full object id (40 lower-case hex digits); resolve names with gitx.ReadRef or `git rev-parse` first", id)
	}
	return nil
}

// Commit returns the tree and parents of commit id (a full hex id).
func (o *ObjectStore) Commit(ctx context.Context, id string) (Commit, error) {
	c, err := o.commit(ctx, id)
	if err != nil {
		return Commit{}, err
	}
	return Commit{Tree: c.Tree, Parents: slices.Clone(c.Parents)}, nil
}

func (o *ObjectStore) commit(ctx context.Context, id string) (*commitInfo, error) {
	o.cacheMu.Lock()
	c := o.commits[id]
	o.cacheMu.Unlock()
	if c != nil {
		return c, nil
	}
	typ, data, err := o.readObject(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ != "commit" {
		return nil, fmt.Errorf("%s is a %s, not a commit", id, typ)
	}
	c, err = parseCommit(data)
	if err != nil {
		return nil, fmt.Errorf("commit %s: %w", id, err)
	}
	o.cacheCommit(id, c)
	return c, nil
}

func (o *ObjectStore) cacheCommit(id string, c *commitInfo) {
	o.cacheMu.Lock()
	if len(o.commits) >= maxCachedCommits {
		clear(o.commits)
	}
	o.commits[id] = c
	o.cacheMu.Unlock()
}

// parseCommit reads the headers the walks need; strict about their shape.
func parseCommit(data []byte) (*commitInfo, error) {
	c := &commitInfo{}
	rest := data
	first, inParents, haveCommitter := true, true, false
	for len(rest) > 0 {
		nl := bytes.IndexByte(rest, '\n')
		if nl < 0 {
			return nil, errors.New("headers not terminated")
		}
		line := string(rest[:nl])
		rest = rest[nl+1:]
		if line == "" {
			break
		}
		k, v, _ := strings.Cut(line, " ")
		switch {
		case first:
			if k != "tree" || len(v) != 40 || !IsHash(v) {
				return nil, fmt.Errorf("first line %q is not a tree", line)
			}
			c.Tree = v
		case k == "parent" && inParents:
			if len(v) != 40 || !IsHash(v) {
				return nil, fmt.Errorf("bad parent line %q", line)
			}
			c.Parents = append(c.Parents, v)
		case k == "committer" && !haveCommitter:
			inParents = false
			haveCommitter = true
			f := strings.Fields(v)
			if len(f) >= 2 {
				c.date, _ = strconv.ParseInt(f[len(f)-2], 10, 64)
			}
		default:
			// git reads parents only right after the tree
			inParents = false
		}
		first = false
	}
	if first {
		return nil, errors.New("empty commit")
	}
	return c, nil
}

// Tree returns the entries of tree id in stored order.
func (o *ObjectStore) Tree(ctx context.Context, id string) ([]TreeEntry, error) {
	t, err := o.tree(ctx, id)
	if err != nil {
		return nil, err
	}
	return slices.Clone(t), nil
}

// tree returns the shared cached slice: callers must not modify it.
func (o *ObjectStore) tree(ctx context.Context, id string) ([]TreeEntry, error) {
	o.cacheMu.Lock()
	t, ok := o.trees[id]
	o.cacheMu.Unlock()
	if ok {
		return t, nil
	}
	typ, data, err := o.readObject(ctx, id)
	if err != nil {
		return nil, err
	}
	if typ != "tree" {
		return nil, fmt.Errorf("%s is a %s, not a tree", id, typ)
	}
	t, err = parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", id, err)
	}
	o.cacheTree(id, t)
	return t, nil
}

// treesOf returns several trees ("" is an empty one), reading the ones
// not cached in one round trip.
func (o *ObjectStore) treesOf(ctx context.Context, ids ...string) ([][]TreeEntry, error) {
	out := make([][]TreeEntry, len(ids))
	var need []string
	var at []int
	o.cacheMu.Lock()
	for i, id := range ids {
		if id == "" {
			continue
		}
		if t, ok := o.trees[id]; ok {
			out[i] = t
			continue
		}
		need = append(need, id)
		at = append(at, i)
	}
	o.cacheMu.Unlock()
	if len(need) == 0 {
		return out, nil
	}
	objs, err := o.readObjects(ctx, need)
	if err != nil {
		return nil, err
	}
	for k, ob := range objs {
		id := need[k]
		if ob.err != nil {
			return nil, ob.err
		}
		if ob.typ != "tree" {
			return nil, fmt.Errorf("%s is a %s, not a tree", id, ob.typ)
		}
		t, err := parseTree(ob.data)
		if err != nil {
			return nil, fmt.Errorf("tree %s: %w", id, err)
		}
		o.cacheTree(id, t)
		out[at[k]] = t
	}
	return out, nil
}

// prefetchCommits reads the commits among ids not cached yet in one round
// trip; errors are left for the reads that need them.
func (o *ObjectStore) prefetchCommits(ctx context.Context, ids []string) {
	var need []string
	o.cacheMu.Lock()
	for _, id := range ids {
		if o.commits[id] == nil && IsHash(id) && len(id) == 40 {
			need = append(need, id)
		}
	}
	o.cacheMu.Unlock()
	if len(need) < 2 {
		return
	}
	objs, err := o.readObjects(ctx, need)
	if err != nil {
		return
	}
	for k, ob := range objs {
		if ob.err == nil && ob.typ == "commit" {
			if c, err := parseCommit(ob.data); err == nil {
				o.cacheCommit(need[k], c)
			}
		}
	}
}

func (o *ObjectStore) cacheTree(id string, t []TreeEntry) {
	o.cacheMu.Lock()
	if len(o.trees) >= maxCachedTrees {
		clear(o.trees)
	}
	o.trees[id] = t
	o.cacheMu.Unlock()
}

const hexDigits = "0123456789abcdef"

func parseTree(data []byte) ([]TreeEntry, error) {
	var out []TreeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 || sp > 6 {
			return nil, errors.New("bad entry mode")
		}
		mode := string(data[:sp])
		for _, c := range mode {
			if c < '0' || c > '7' {
				return nil, fmt.Errorf("bad entry mode %q", mode)
			}
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul <= 0 {
			return nil, errors.New("bad entry name")
		}
		name := string(data[:nul])
		if strings.Contains(name, "/") {
			return nil, fmt.Errorf("entry name %q contains a slash", name)
		}
		data = data[nul+1:]
		if len(data) < 20 {
			return nil, errors.New("truncated entry")
		}
		var id [40]byte
		for i, b := range data[:20] {
			id[2*i], id[2*i+1] = hexDigits[b>>4], hexDigits[b&15]
		}
		data = data[20:]
		out = append(out, TreeEntry{Mode: mode, Name: name, ID: string(id[:])})
	}
	return out, nil
}

// rootTree returns the tree of a commit, or id itself when it is a tree.
func (o *ObjectStore) rootTree(ctx context.Context, id string) (string, error) {
	if err := checkID(id); err != nil {
		return "", err
	}
	o.cacheMu.Lock()
	c := o.commits[id]
	_, isTree := o.trees[id]
	o.cacheMu.Unlock()
	if c != nil {
		return c.Tree, nil
	}
	if isTree {
		return id, nil
	}
	typ, data, err := o.readObject(ctx, id)
	if err != nil {
		return "", err
	}
	switch typ {
	case "commit":
		c, err := parseCommit(data)
		if err != nil {
			return "", fmt.Errorf("commit %s: %w", id, err)
		}
		o.cacheCommit(id, c)
		return c.Tree, nil
	case "tree":
		t, err := parseTree(data)
		if err != nil {
			return "", fmt.Errorf("tree %s: %w", id, err)
		}
		o.cacheTree(id, t)
		return id, nil
	}
	return "", fmt.Errorf("%s is a %s, not a commit or tree", id, typ)
}
