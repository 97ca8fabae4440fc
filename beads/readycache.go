package beads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// ReadyCache is implemented by stores that keep a rendered ready list on
// disk, so that a short-lived process asking for it again finds it without
// reading the task file (the built-in store).
type ReadyCache interface {
	// CachedReady writes render(Ready(opt)) to w. format names the
	// rendering: callers with different render functions must use
	// different names. computed reports that the store was read in this
	// call (so LoadError is cheap now); false means the answer came from
	// the cache, which only holds answers from files without bad lines.
	CachedReady(ctx context.Context, w io.Writer, opt ReadyOptions, format string, render func([]Task) ([]byte, error)) (computed bool, err error)
}

// The cache lives next to the data in its own directory, whose .gitignore
// keeps it out of git whatever .beads/.gitignore says (bd writes its own).
const (
	readyCacheDir   = "chorus-cache"
	readyCacheMagic = "chorus-ready-cache 1\n" // bump when the entry format or Ready's rules change
)

// exeID identifies the running binary, so that a ready list rendered by
// another version of Chorus (another Task shape or JSON form) is never
// served. Counts and the index memo, which only this package's code
// decides, are kept under codeID instead.
var exeID = sync.OnceValue(func() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	st, err := os.Stat(p)
	if err != nil {
		return ""
	}
	k := keyOf(st)
	return fmt.Sprintf("%d:%d:%d:%d:%d", k.dev, k.ino, k.size, k.mtimeNanos, k.ctimeNanos)
})

// cacheEntry is the header of a cache file; the rendered answer follows it.
//
// The answer is valid while the task file keeps the identity key, the
// clock stays in [lo, hi) (so no defer_until date is crossed), and, when
// the entry is racy, the file's bytes still hash to sum. An entry is racy
// when the task file changed in the same filesystem clock tick as the
// cache was started (as in git's racy-clean index entries): a later
// change in that tick could leave the identity as it was.
type cacheEntry struct {
	variant string // hash of format and options
	exe     string
	key     fileKey
	lo, hi  int64  // unix ns
	sum     string // hex sha256 of the task file when racy, else "-"
	n       int    // payload length
	crc     uint32 // payload checksum, against torn or damaged files
	off     int64  // where the payload starts (not stored)
}

func (e cacheEntry) header() string {
	k := e.key
	return fmt.Sprintf("%s %s %d %d %d %d %d %d %d %s %d %d\n", e.variant, e.exe, k.dev, k.ino, k.size, k.mtimeNanos, k.ctimeNanos, e.lo, e.hi, e.sum, e.n, e.crc)
}

func parseEntry(line string) (cacheEntry, bool) {
	f := strings.Fields(line)
	if len(f) != 12 {
		return cacheEntry{}, false
	}
	var n [9]int64
	for i, j := range []int{2, 3, 4, 5, 6, 7, 8, 10, 11} {
		v, err := strconv.ParseInt(f[j], 10, 64)
		if err != nil {
			return cacheEntry{}, false
		}
		n[i] = v
	}
	if n[7] < 0 || n[8] < 0 || n[8] > math.MaxUint32 {
		return cacheEntry{}, false
	}
	e := cacheEntry{variant: f[0], exe: f[1], sum: f[9], lo: n[5], hi: n[6], n: int(n[7]), crc: uint32(n[8])}
	e.key = fileKey{ok: true, dev: uint64(n[0]), ino: uint64(n[1]), size: n[2], mtimeNanos: n[3], ctimeNanos: n[4]}
	return e, true
}

func variantOf(opt ReadyOptions, format string) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%q %v %q %q", format, opt.IncludeDeferred, opt.ExcludeLabels, opt.IncludeLabels))
	return hex.EncodeToString(h[:16])
}

func (s *builtinStore) CachedReady(ctx context.Context, w io.Writer, opt ReadyOptions, format string, render func([]Task) ([]byte, error)) (bool, error) {
	variant := variantOf(opt, format)
	path := filepath.Join(s.dir, readyCacheDir, "ready-"+variant[:16])
	if f, e, ok := s.openCached(path, variant, exeID()); ok {
		defer f.Close()
		return false, copyPayload(w, f, e)
	}
	out, err := s.renderCached(path, variant, exeID(), s.load, func(sn *snapshot, now time.Time) func() ([]byte, error) {
		ts := readyTasks(sn, opt, now)
		return func() ([]byte, error) { return render(ts) }
	})
	if err != nil {
		return true, err
	}
	_, err = w.Write(out)
	return true, err
}

// openCached opens the cache file and returns it positioned at the
// payload, if it still holds the answer.
func (s *builtinStore) openCached(path, variant, exe string) (*os.File, cacheEntry, bool) {
	var e cacheEntry
	if exe == "" {
		return nil, e, false
	}
	st, err := os.Stat(s.path)
	if err != nil {
		return nil, e, false
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, e, false
	}
	// The payload is checked here and copied out afterwards, both through
	// a small buffer: reading it whole into fresh memory costs more than
	// everything else a cached answer takes. Cache files are replaced by
	// rename, never rewritten, so the open file keeps what was checked.
	buf := make([]byte, 64<<10)
	n, err := io.ReadFull(f, buf)
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		err = io.EOF
	default:
		f.Close()
		return nil, e, false
	}
	head := buf[:n]
	ok := bytes.HasPrefix(head, []byte(readyCacheMagic))
	nl := -1
	if ok {
		head = head[len(readyCacheMagic):]
		nl = bytes.IndexByte(head, '\n')
	}
	if nl >= 0 {
		e, ok = parseEntry(string(head[:nl]))
	}
	now := s.now().UnixNano()
	if nl < 0 || !ok || e.variant != variant || e.exe != exe || e.key != keyOf(st) || now < e.lo || now >= e.hi {
		f.Close()
		return nil, e, false
	}
	e.off = int64(len(readyCacheMagic) + nl + 1)
	payload := head[nl+1:]
	crc, size := crc32.ChecksumIEEE(payload), int64(len(payload))
	for err == nil {
		var m int
		m, err = f.Read(buf)
		crc = crc32.Update(crc, crc32.IEEETable, buf[:m])
		size += int64(m)
	}
	if err != io.EOF || size != int64(e.n) || crc != e.crc || !s.sameContent(e) {
		f.Close()
		return nil, e, false
	}
	if _, err := f.Seek(e.off, io.SeekStart); err != nil {
		f.Close()
		return nil, e, false
	}
	return f, e, true
}

// sameContent checks a racy entry against the task file's bytes.
func (s *builtinStore) sameContent(e cacheEntry) bool {
	if e.sum == "-" {
		return true
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		return false
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]) == e.sum
}

// copyPayload writes the checked payload of f to w.
func copyPayload(w io.Writer, f *os.File, e cacheEntry) error {
	n, err := io.Copy(w, io.LimitReader(f, int64(e.n)))
	if err == nil && n != int64(e.n) {
		err = fmt.Errorf("beads: %s changed while being read", f.Name())
	}
	return err
}

// renderCached computes the answer and, when it can, leaves it in the
// cache. compute runs on the loaded snapshot with the store locked and
// returns what renders the answer after the lock is let go. A cache that
// cannot be written is no error: the answer stands.
func (s *builtinStore) renderCached(path, variant, exe string, load func() (*snapshot, error), compute func(sn *snapshot, now time.Time) func() ([]byte, error)) ([]byte, error) {
	// The temp file is made first: its ctime is a filesystem clock reading
	// from before the task file is looked at (see cacheEntry).
	tmp, tst := s.cacheTemp(filepath.Dir(path))
	keep := false
	if tmp != nil {
		defer func() {
			tmp.Close()
			if !keep {
				os.Remove(tmp.Name())
			}
		}()
	}
	s.mu.Lock()
	sn, err := load()
	if err != nil {
		s.mu.Unlock()
		return nil, err
	}
	now := s.now()
	render := compute(sn, now)
	e := cacheEntry{variant: variant, exe: exe, key: sn.key, sum: "-"}
	if sn.memo != nil {
		e.lo, e.hi = sn.memo.Lo, sn.memo.Hi
	} else {
		e.lo, e.hi = deferWindow(sn.recs, now)
	}
	clean := sn.bad == nil && sn.key.ok
	if clean && tst != nil && racy(sn.key, keyOf(tst)) {
		var h [sha256.Size]byte
		if guard(sn.mapped, func() { h = sha256.Sum256(sn.data) }) {
			e.sum = hex.EncodeToString(h[:])
		} else {
			clean = false // the file changed under the mapping: no cache
		}
	}
	s.mu.Unlock()
	out, err := render()
	if err != nil || tmp == nil || !clean || e.exe == "" {
		return out, err
	}
	e.n, e.crc = len(out), crc32.ChecksumIEEE(out)
	if _, err := tmp.WriteString(readyCacheMagic + e.header()); err != nil {
		return out, nil
	}
	if _, err := tmp.Write(out); err != nil {
		return out, nil
	}
	// No fsync: a cache torn by a crash fails its checksum and is redone.
	if tmp.Close() == nil && os.Rename(tmp.Name(), path) == nil {
		keep = true
	}
	return out, nil
}

// racy reports whether the task file's identity alone cannot vouch for its
// content: it changed no earlier than stamp, a file created before the
// task file was read, on the same filesystem clock. A later change in the
// same clock tick would keep ctime as it was.
func racy(file, stamp fileKey) bool {
	return file.dev != stamp.dev || file.ctimeNanos >= stamp.ctimeNanos
}

// cacheTemp creates a temp file in dir (and dir with its .gitignore when
// needed). It returns nil when the cache cannot be written: read-only
// checkouts still answer, just without a cache.
func (s *builtinStore) cacheTemp(dir string) (*os.File, os.FileInfo) {
	if _, err := os.Stat(s.path); err != nil {
		return nil, nil // nothing to cache yet, and no reason to create .beads
	}
	ign := filepath.Join(dir, ".gitignore")
	if _, err := os.Stat(ign); errors.Is(err, fs.ErrNotExist) {
		if os.MkdirAll(dir, 0o755) != nil {
			return nil, nil
		}
		if atomicReplace(ign, []byte("# Derived from ../issues.jsonl by Chorus; safe to delete.\n*\n")) != nil {
			return nil, nil
		}
	} else if err != nil {
		return nil, nil
	}
	f, err := os.CreateTemp(dir, ".tmp-*")
	if err != nil {
		return nil, nil
	}
	st, err := f.Stat()
	if err == nil {
		err = f.Chmod(0o644)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, nil
	}
	return f, st
}

// atomicReplace writes path through a temp file and a rename, so readers
// never see it half written.
func atomicReplace(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".tmp-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(0o644)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

// deferWindow is the span of clock readings around now in which no task's
// defer_until is crossed, so Ready's answer cannot change with time alone.
func deferWindow(recs []*record, now time.Time) (lo, hi int64) {
	lo, hi = math.MinInt64, math.MaxInt64
	for _, r := range recs {
		if r.kind != "issue" || r.deferUntil.IsZero() {
			continue
		}
		d := unixNanoClamped(r.deferUntil)
		if r.deferUntil.After(now) {
			hi = min(hi, d)
		} else {
			lo = max(lo, d)
		}
	}
	return lo, hi
}

// unixNanoClamped is UnixNano with dates beyond its range pinned to the
// ends, which keeps them on the same side of any clock reading.
func unixNanoClamped(t time.Time) int64 {
	switch {
	case t.Before(time.Unix(0, math.MinInt64)):
		return math.MinInt64
	case t.After(time.Unix(0, math.MaxInt64)):
		return math.MaxInt64
	}
	return t.UnixNano()
}
