package gitx

// A new branch's checkout written in-process: the files of a commit's tree
// and the index git would write for them, for a worktree that is being
// created (`git worktree add -b` costs a process and most of its CPU in
// that checkout). Anything a plain checkout does not cover — line-ending
// conversion, attributes, filters, hooks, submodules, sparse or split
// indexes, unusual names or modes — is ErrUnsupported: git does it.

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// unlikeCheckout reports a configuration key whose value makes git's
// checkout (or its index, or its branch creation) differ from the plain
// one written here.
func unlikeCheckout(k, v string, hasValue bool) bool {
	isTrue := func() bool { return gitBool(v, hasValue) }
	switch k {
	case "core.autocrlf":
		return isTrue() || strings.EqualFold(v, "input")
	case "core.eol":
		return !strings.EqualFold(v, "lf") && !strings.EqualFold(v, "native")
	case "core.symlinks", "core.filemode":
		return !isTrue()
	case "core.sparsecheckout", "core.splitindex", "core.precomposeunicode", "core.ignorecase", "core.bare",
		"index.skiphash", "feature.manymanyfiles", "feature.manyfiles", "worktree.userelativepaths",
		"extensions.relativeworktrees":
		return isTrue()
	case "core.fsmonitor":
		return v != "" && isTrue()
	case "core.hookspath", "core.attributesfile", "core.worktree", "index.version",
		"core.sharedrepository", "extensions.refstorage", "core.checkroundtripencoding":
		return true
	}
	return strings.HasPrefix(k, "filter.")
}

// checkoutEntry is one file of the tree to check out.
type checkoutEntry struct {
	path string // slash-separated, from the tree's root
	mode uint32 // 0o100644, 0o100755 or 0o120000
	id   string
}

// cacheTree is a tree of the checkout with what the index's cache-tree
// extension records of it.
type cacheTree struct {
	name    string
	id      string
	entries int // files below it, at any depth
	subs    []*cacheTree
}

// Checkout is a commit's tree read and judged writable in-process
// (PlanCheckout); Write puts it on disk.
type Checkout struct {
	o     *ObjectStore
	files []checkoutEntry // in the index's order
	root  *cacheTree
}

// maxCheckoutFiles bounds what is checked out in-process: a large tree is
// git's to check out (in parallel, streaming blobs).
const maxCheckoutFiles = 4096

// maxCheckoutBytes bounds the contents read for an in-process checkout:
// blobs are held whole, and git streams large ones.
var maxCheckoutBytes int64 = 32 << 20

// PlanCheckout reads commit's tree for a plain checkout; ErrUnsupported
// when git's checkout of it could differ from the plain one.
func (o *ObjectStore) PlanCheckout(ctx context.Context, commit string) (*Checkout, error) {
	set, err := o.settings(ctx)
	if err != nil {
		return nil, err
	}
	switch {
	case set.sha256:
		return nil, fmt.Errorf("sha256 repository: %w", ErrUnsupported)
	case set.unlikeCheckout != "":
		return nil, fmt.Errorf("%s is set: %w", set.unlikeCheckout, ErrUnsupported)
	}
	if f := attributesFile(); f != "" {
		return nil, fmt.Errorf("%s exists: %w", f, ErrUnsupported)
	}
	tree, err := o.rootTree(ctx, commit)
	if err != nil {
		return nil, err
	}
	c := &Checkout{o: o, root: &cacheTree{id: tree}}
	if err := c.walk(ctx, c.root, ""); err != nil {
		return nil, err
	}
	sort.Slice(c.files, func(i, j int) bool { return c.files[i].path < c.files[j].path })
	return c, nil
}

// attributesFile names an attributes file outside the tree that git would
// read (the repository's, the user's, the system's), "" when none exists.
func attributesFile() string {
	var candidates []string
	if x := os.Getenv("XDG_CONFIG_HOME"); x != "" {
		candidates = append(candidates, filepath.Join(x, "git", "attributes"))
	} else if h, err := os.UserHomeDir(); err == nil {
		candidates = append(candidates, filepath.Join(h, ".config", "git", "attributes"))
	}
	candidates = append(candidates, "/etc/gitattributes")
	for _, p := range candidates {
		if exists(p) {
			return p
		}
	}
	return ""
}

func (c *Checkout) walk(ctx context.Context, t *cacheTree, prefix string) error {
	entries, err := c.o.tree(ctx, t.id)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if !plainName(e.Name) {
			return fmt.Errorf("tree entry %q: %w", prefix+e.Name, ErrUnsupported)
		}
		p := prefix + e.Name
		var mode uint32
		switch e.Mode {
		case "40000":
			sub := &cacheTree{name: e.Name, id: e.ID}
			if err := c.walk(ctx, sub, p+"/"); err != nil {
				return err
			}
			if sub.entries == 0 { // an empty tree: git's cache-tree differs
				return fmt.Errorf("tree entry %q is an empty tree: %w", p, ErrUnsupported)
			}
			t.subs = append(t.subs, sub)
			t.entries += sub.entries
			continue
		case "100644":
			mode = 0o100644
		case "100755":
			mode = 0o100755
		case "120000":
			mode = 0o120000
		default: // submodules, old modes git canonicalises
			return fmt.Errorf("tree entry %q has mode %s: %w", p, e.Mode, ErrUnsupported)
		}
		c.files = append(c.files, checkoutEntry{path: p, mode: mode, id: e.ID})
		t.entries++
		if len(c.files) > maxCheckoutFiles {
			return fmt.Errorf("more than %d files: %w", maxCheckoutFiles, ErrUnsupported)
		}
	}
	return nil
}

// plainName is a tree entry name written the same on any system: no
// attributes or modules file (git reads those), nothing git refuses or
// some filesystem would alias (.git in any case, dots, backslashes,
// control bytes).
func plainName(n string) bool {
	l := strings.ToLower(n)
	if n == "" || n == "." || n == ".." || l == ".gitattributes" || l == ".gitmodules" ||
		strings.HasPrefix(l, ".git") && strings.Trim(l[4:], ". ") == "" || strings.HasPrefix(l, "git~") {
		return false
	}
	for i := 0; i < len(n); i++ {
		if b := n[i]; b < 0x20 || b == '\\' || b == 0x7f {
			return false
		}
	}
	return true
}

// Write creates dir's files from the tree (dir exists and is empty) and
// returns the index git would write for them: version 2, the files' stat
// data, the cache-tree of the whole tree. Files are created with the
// process's umask, as git creates them.
func (c *Checkout) Write(ctx context.Context, dir string) ([]byte, error) {
	all := make([]int, len(c.files))
	for i := range all {
		all[i] = i
	}
	stats := make([]statData, len(c.files))
	if err := c.writeFiles(ctx, dir, all, stats); err != nil {
		return nil, err
	}
	return c.index(stats), nil
}

// writeFiles creates the files c.files[i] for i in which (their paths
// free), reading their blobs in batches within the checkout's budget, and
// records each one's stat data in stats[i].
func (c *Checkout) writeFiles(ctx context.Context, dir string, which []int, stats []statData) error {
	made := map[string]bool{}
	budget := int64(maxCheckoutBytes)
	for start := 0; start < len(which); start += maxBatch {
		batch := which[start:min(start+maxBatch, len(which))]
		ids := make([]string, len(batch))
		for k, i := range batch {
			ids[k] = c.files[i].id
		}
		objs, err := c.o.readObjectsWithin(ctx, ids, &budget)
		if err != nil {
			return err
		}
		for k, ob := range objs {
			f := c.files[batch[k]]
			if errors.Is(ob.err, errOverBudget) {
				return fmt.Errorf("files over %d MiB: %w", maxCheckoutBytes>>20, ErrUnsupported)
			}
			if ob.err != nil {
				return ob.err
			}
			if ob.typ != "blob" {
				return fmt.Errorf("%s (%s) is a %s, not a blob", f.path, f.id, ob.typ)
			}
			st, err := checkoutFile(dir, f, ob.data, made)
			if err != nil {
				return err
			}
			stats[batch[k]] = st
		}
	}
	return nil
}

func checkoutFile(dir string, f checkoutEntry, data []byte, made map[string]bool) (statData, error) {
	p := filepath.Join(dir, filepath.FromSlash(f.path))
	if err := makeDirs(dir, path.Dir(f.path), made); err != nil {
		return statData{}, err
	}
	switch f.mode {
	case 0o120000:
		if bytes.IndexByte(data, 0) >= 0 {
			return statData{}, fmt.Errorf("symbolic link %s has a NUL in its target: %w", f.path, ErrUnsupported)
		}
		if err := os.Symlink(string(data), p); err != nil {
			return statData{}, err
		}
	default:
		perm := os.FileMode(0o666)
		if f.mode == 0o100755 {
			perm = 0o777
		}
		fh, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return statData{}, err
		}
		_, err = fh.Write(data)
		if cerr := fh.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return statData{}, err
		}
	}
	fi, err := os.Lstat(p)
	if err != nil {
		return statData{}, err
	}
	st, ok := statOf(fi)
	if !ok {
		return statData{}, fmt.Errorf("no stat data for %s: %w", f.path, ErrUnsupported)
	}
	return st, nil
}

// makeDirs makes dir's subdirectory rel (slash-separated) one name at a
// time, each a directory of its own: never through a symbolic link the
// checkout wrote (on a filesystem that folds case, "A" a link and "a/f" a
// file would otherwise write outside dir).
func makeDirs(dir, rel string, made map[string]bool) error {
	if rel == "." || made[rel] {
		return nil
	}
	if err := makeDirs(dir, path.Dir(rel), made); err != nil {
		return err
	}
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.Mkdir(p, 0o777); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	if fi, err := os.Lstat(p); err != nil || !fi.IsDir() {
		return fmt.Errorf("%s is not a directory the checkout made: %w", rel, ErrUnsupported)
	}
	made[rel] = true
	return nil
}

// index encodes the index: header, entries in path order, the TREE
// extension, the SHA-1 trailer.
func (c *Checkout) index(stats []statData) []byte {
	var b bytes.Buffer
	b.WriteString("DIRC")
	u32 := func(v uint32) { _ = binary.Write(&b, binary.BigEndian, v) }
	u32(2)
	u32(uint32(len(c.files)))
	for i, f := range c.files {
		st := stats[i]
		start := b.Len()
		for _, v := range []uint32{st.ctime.sec, st.ctime.nsec, st.mtime.sec, st.mtime.nsec, st.dev, st.ino, f.mode, st.uid, st.gid, st.size32} {
			u32(v)
		}
		id, _ := hex.DecodeString(f.id)
		b.Write(id)
		_ = binary.Write(&b, binary.BigEndian, uint16(min(len(f.path), 0xfff)))
		b.WriteString(f.path)
		b.Write(make([]byte, (62+len(f.path)+8)&^7-(b.Len()-start)))
	}
	var ext bytes.Buffer
	writeCacheTree(&ext, c.root)
	b.WriteString("TREE")
	u32(uint32(ext.Len()))
	b.Write(ext.Bytes())
	sum := sha1.Sum(b.Bytes())
	b.Write(sum[:])
	return b.Bytes()
}

func writeCacheTree(b *bytes.Buffer, t *cacheTree) {
	b.WriteString(t.name)
	b.WriteByte(0)
	b.WriteString(strconv.Itoa(t.entries) + " " + strconv.Itoa(len(t.subs)) + "\n")
	id, _ := hex.DecodeString(t.id)
	b.Write(id)
	for _, s := range t.subs {
		writeCacheTree(b, s)
	}
}

// WriteOver brings dir from old's checkout to c's: dir holds old's files
// as oldIndex records them (a clean worktree whose extra files were
// removed), so the files both trees share (same path, blob and mode) are
// kept with their stat data when it still matches, and only the others
// are deleted or written. Returns c's index, as Write does. Reusing a checkout this way
// spares the filesystem a tree's worth of deletions and creations.
func (c *Checkout) WriteOver(ctx context.Context, dir string, old *Checkout, oldIndex []byte) ([]byte, error) {
	idx, ok := parseIndex(oldIndex)
	if !ok || len(idx.entries) != len(old.files) {
		return nil, fmt.Errorf("the reused checkout's index: %w", ErrUnsupported)
	}
	oldBy := make(map[string]checkoutEntry, len(old.files))
	for _, f := range old.files {
		oldBy[f.path] = f
	}
	kept := map[string]bool{}
	stats := make([]statData, len(c.files))
	var write []int
	for i, f := range c.files {
		if o, ok := oldBy[f.path]; ok && o.id == f.id && o.mode == f.mode {
			// Kept only as its index recorded it: a file changed since
			// is written again.
			e, ok := idx.find(f.path)
			fi, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f.path)))
			if ok && err == nil {
				if st, ok := statOf(fi); ok && e.matches(fi, st) {
					stats[i], kept[f.path] = e.stat, true
					continue
				}
			}
		}
		write = append(write, i)
	}
	// Old files not kept go first, then directories they leave empty
	// (deepest first): a path may change between file and directory.
	dirs := map[string]bool{}
	for _, o := range old.files {
		if kept[o.path] {
			continue
		}
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(o.path))); err != nil && !os.IsNotExist(err) {
			return nil, err
		}
		for d := path.Dir(o.path); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	byDepth := make([]string, 0, len(dirs))
	for d := range dirs {
		byDepth = append(byDepth, d)
	}
	sort.Slice(byDepth, func(i, j int) bool { return len(byDepth[i]) > len(byDepth[j]) })
	for _, d := range byDepth {
		_ = os.Remove(filepath.Join(dir, filepath.FromSlash(d))) // fails when not empty: kept
	}
	if err := c.writeFiles(ctx, dir, write, stats); err != nil {
		return nil, err
	}
	return c.index(stats), nil
}

// IndexLists reports whether an index (a file's contents) lists path;
// false too for an index this package does not read.
func IndexLists(index []byte, path string) bool {
	idx, ok := parseIndex(index)
	if !ok {
		return false
	}
	_, found := idx.find(path)
	return found
}

// Reusable reports whether a checkout whose index is index could be
// written over in-process (Checkout.WriteOver): a version 2 index of at
// most maxCheckoutFiles entries. A larger tree is git's to check out, so
// keeping it for reuse would only hold its disk.
func Reusable(index []byte) bool {
	return len(index) >= 12 && string(index[:4]) == "DIRC" &&
		binary.BigEndian.Uint32(index[4:8]) == 2 && binary.BigEndian.Uint32(index[8:12]) <= maxCheckoutFiles
}
