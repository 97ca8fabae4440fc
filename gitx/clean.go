package gitx

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SurelyClean answers, without a git process, that `git status
// --porcelain --untracked-files=all` in the checkout dir would print
// nothing: every file git tracks there is as the index recorded it (the
// same stat data, not racily so), the index is HEAD's tree (its
// cache-tree root says so), and no file is there that the index does not
// list, apart from those notWork accepts (nil: none; it is asked about
// files, and about directories with a trailing slash). It never says
// clean when git would not; false means "ask git": anything it does not
// read the way git does — an unknown file (it does not evaluate ignore
// rules), a stat difference git might forgive, a split, sparse or v4
// index, submodules, a packed HEAD commit, environment overrides — is
// left to git's status.
func SurelyClean(dir string, notWork func(rel string) bool) bool {
	for _, k := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"} {
		if os.Getenv(k) != "" {
			return false
		}
	}
	gd, common, ok := worktreeGitDirs(dir)
	if !ok {
		return false
	}
	head := headIn(gd, common)
	if len(head) != 40 {
		return false
	}
	tree, ok := looseCommitTree(common, head)
	if !ok {
		return false
	}
	indexPath := filepath.Join(gd, "index")
	ist, err := os.Stat(indexPath)
	if err != nil {
		return false
	}
	raw, err := os.ReadFile(indexPath)
	if err != nil {
		return false
	}
	idx, ok := parseIndex(raw)
	if !ok || idx.tree != tree {
		return false
	}
	imtime, ok := mtimeOf(ist)
	if !ok {
		return false
	}
	seen := 0
	dir = filepath.Clean(dir)
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel := filepath.ToSlash(strings.TrimPrefix(strings.TrimPrefix(p, dir), string(filepath.Separator)))
		if rel == ".git" {
			return skip(d)
		}
		if d.IsDir() {
			if notWork != nil && notWork(rel+"/") {
				return filepath.SkipDir
			}
			if d.Name() == ".git" {
				return errUnsure // a nested repository: git's decision
			}
			return nil
		}
		e, tracked := idx.find(rel)
		if !tracked {
			if notWork != nil && notWork(rel) {
				return nil
			}
			return errUnsure
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := statOf(fi)
		if !ok || !e.matches(fi, st) || !st.mtime.before(imtime) {
			return errUnsure
		}
		seen++
		return nil
	})
	return err == nil && seen == len(idx.entries)
}

// errUnsure ends SurelyClean's walk: git has to answer.
var errUnsure = errors.New("not surely clean")

func skip(d fs.DirEntry) error {
	if d.IsDir() {
		return filepath.SkipDir
	}
	return nil
}

// timespec is a file time as the index stores it.
type timespec struct{ sec, nsec uint32 }

func (a timespec) before(b timespec) bool {
	return a.sec < b.sec || a.sec == b.sec && a.nsec < b.nsec
}

// statData is the part of a file's stat the index records, truncated to
// 32 bits as the index stores it.
type statData struct {
	ctime, mtime               timespec
	dev, ino, uid, gid, size32 uint32
}

type indexEntry struct {
	name string
	stat statData
	mode uint32
}

// matches is git's stat comparison at its strictest (core.checkStat
// default, core.trustctime, nanoseconds) plus the file's type and
// executable bit.
func (e indexEntry) matches(fi fs.FileInfo, st statData) bool {
	switch e.mode {
	case 0o100644, 0o100755:
		if !fi.Mode().IsRegular() || (fi.Mode().Perm()&0o100 != 0) != (e.mode == 0o100755) {
			return false
		}
	case 0o120000:
		if fi.Mode()&fs.ModeSymlink == 0 {
			return false
		}
	default:
		return false
	}
	return st == e.stat
}

type index struct {
	entries []indexEntry // in the index's order: sorted by name, bytewise
	tree    string       // the cache-tree root: the tree the index is, "" if unknown
}

func (x index) find(name string) (indexEntry, bool) {
	i, ok := slices.BinarySearchFunc(x.entries, name, func(e indexEntry, n string) int { return strings.Compare(e.name, n) })
	if !ok {
		return indexEntry{}, false
	}
	return x.entries[i], true
}

// parseIndex reads a version 2 or 3 index with SHA-1 ids; ok is false for
// anything else, for any entry that is not a plain stage-0 entry
// (conflicts, assume-unchanged, skip-worktree, intent-to-add) and for an
// extension git requires a reader to understand (split, sparse).
func parseIndex(raw []byte) (index, bool) {
	b := raw
	names := string(raw) // one copy; every entry's name is a slice of it
	const hashLen = 20
	if len(b) < 12+hashLen || string(b[:4]) != "DIRC" {
		return index{}, false
	}
	ver := binary.BigEndian.Uint32(b[4:8])
	if ver != 2 && ver != 3 {
		return index{}, false
	}
	n := int(binary.BigEndian.Uint32(b[8:12]))
	body := b[:len(b)-hashLen]
	idx := index{entries: make([]indexEntry, 0, min(n, len(b)/62))}
	off := 12
	for range n {
		if off+62 > len(body) {
			return index{}, false
		}
		f := func(i int) uint32 { return binary.BigEndian.Uint32(body[off+4*i:]) }
		e := indexEntry{mode: f(6), stat: statData{
			ctime: timespec{f(0), f(1)}, mtime: timespec{f(2), f(3)},
			dev: f(4), ino: f(5), uid: f(7), gid: f(8), size32: f(9)}}
		flags := binary.BigEndian.Uint16(body[off+60:])
		if flags&0xf000 != 0 { // assume-valid, extended flags, a stage
			return index{}, false
		}
		nameAt := off + 62
		end := bytes.IndexByte(body[nameAt:], 0)
		if end < 0 {
			return index{}, false
		}
		e.name = names[nameAt : nameAt+end]
		if len(idx.entries) > 0 && idx.entries[len(idx.entries)-1].name >= e.name {
			return index{}, false // not in git's order: not an index this reads
		}
		idx.entries = append(idx.entries, e)
		off += (62 + end + 8) &^ 7 // NUL padding to a multiple of eight
	}
	for off+8 <= len(body) {
		sig, size := body[off:off+4], int(binary.BigEndian.Uint32(body[off+4:]))
		data := body[off+8:]
		if size > len(data) {
			return index{}, false
		}
		data = data[:size]
		if sig[0] < 'A' || sig[0] > 'Z' {
			return index{}, false // "link", "sdir": must be understood
		}
		if string(sig) == "TREE" {
			idx.tree = cacheTreeRoot(data)
		}
		off += 8 + size
	}
	return idx, off == len(body) && idx.tree != ""
}

// cacheTreeRoot reads the root entry of a cache-tree extension: "" when
// the root is invalidated (a change was staged since the tree was made).
func cacheTreeRoot(d []byte) string {
	if len(d) == 0 || d[0] != 0 { // the root's path is empty
		return ""
	}
	d = d[1:]
	sp := bytes.IndexByte(d, ' ')
	nl := bytes.IndexByte(d, '\n')
	if sp < 0 || nl < sp {
		return ""
	}
	if cnt, err := strconv.Atoi(string(d[:sp])); err != nil || cnt < 0 {
		return ""
	}
	if len(d) < nl+1+20 {
		return ""
	}
	return hex.EncodeToString(d[nl+1 : nl+21])
}

// looseCommitTree reads the tree of a commit stored as a loose object.
func looseCommitTree(common, id string) (string, bool) {
	f, err := os.Open(filepath.Join(common, "objects", id[:2], id[2:]))
	if err != nil {
		return "", false
	}
	defer f.Close()
	zr, err := zlib.NewReader(f)
	if err != nil {
		return "", false
	}
	defer zr.Close()
	var buf [128]byte
	n, _ := io.ReadFull(zr, buf[:])
	b := buf[:n]
	hdr, rest, ok := bytes.Cut(b, []byte{0})
	if !ok || !bytes.HasPrefix(hdr, []byte("commit ")) || !bytes.HasPrefix(rest, []byte("tree ")) || len(rest) < 46 || rest[45] != '\n' {
		return "", false
	}
	t := string(rest[5:45])
	return t, IsHash(t)
}

func mtimeOf(fi fs.FileInfo) (timespec, bool) {
	st, ok := statOf(fi)
	return st.mtime, ok
}
