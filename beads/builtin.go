package beads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// builtinStore keeps tasks in <main repo>/.beads/issues.jsonl in beads'
// interchange format. Every write is a read-modify-write under an flock on
// .beads/chorus.lock, so other processes (a `chorus task create` next to a
// running Chorus) are safe; readers need no lock because the file is only
// ever replaced by rename.
type builtinStore struct {
	dir, path, lockPath string
	prefix, actor       string

	mu   sync.Mutex
	snap *snapshot
	now  func() time.Time
}

// fileKey is a file's identity. ctime is in it because nothing can set
// it back: any change to the file moves it.
type fileKey struct {
	ok         bool
	dev, ino   uint64
	size       int64
	mtimeNanos int64
	ctimeNanos int64
}

type snapshot struct {
	key  fileKey
	data []byte // the file's bytes as of key
	// mapped: data is a mapping of the file (counting only), read under
	// guard since a file cut short under it faults.
	mapped bool
	recs   []*record
	byID   map[string]int
	bad    error // first unreadable line; set means no writes
	path   string
	// Counting only: each record's line sum (index memo), the memo read
	// and which of its records each record came from (-1: decoded), and
	// the counts when they came from the memo whole (then recs is empty).
	sums     []lineSum
	memoRead *indexMemo
	memoFrom []int32
	memo     *memoCounts // also a first count's (countFirst), with its count blocks
}

// OpenBuiltin opens the built-in store in beadsDir (normally from
// MainBeadsDir). The file is created on the first write.
func OpenBuiltin(beadsDir string, opt OpenOptions) (Store, error) {
	return openBuiltin(beadsDir, opt)
}

func openBuiltin(beadsDir string, opt OpenOptions) (*builtinStore, error) {
	abs, err := filepath.Abs(beadsDir)
	if err != nil {
		return nil, err
	}
	s := &builtinStore{
		dir:      abs,
		path:     filepath.Join(abs, "issues.jsonl"),
		lockPath: filepath.Join(abs, "chorus.lock"),
		actor:    opt.Actor,
		now:      func() time.Time { return time.Now().UTC() },
	}
	s.prefix = normPrefix(opt.Prefix)
	if s.prefix == "" {
		s.prefix = configPrefix(abs)
	}
	if s.prefix == "" {
		s.prefix = dirPrefix(filepath.Base(filepath.Dir(abs)))
	}
	return s, nil
}

func normPrefix(p string) string { return strings.TrimRight(strings.TrimSpace(p), "-") }

// configPrefix reads issue-prefix from bd's .beads/config.yaml, if any.
func configPrefix(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if ok && (k == "issue-prefix" || k == "issue_prefix") {
			return normPrefix(strings.Trim(strings.TrimSpace(v), `"'`))
		}
	}
	return ""
}

func dirPrefix(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "bd"
	}
	return b.String()
}

func (s *builtinStore) Backend() string { return BackendBuiltin }

// Refresh is a no-op: every read checks the file.
func (s *builtinStore) Refresh(context.Context) error { return nil }

// load returns the current snapshot, re-reading the file only when its
// identity (inode, size, mtime) changed. Callers hold s.mu.
func (s *builtinStore) load() (*snapshot, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		if s.snap == nil || s.snap.key.ok {
			s.snap = &snapshot{byID: map[string]int{}}
		}
		return s.snap, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	key := keyOf(st)
	if s.snap != nil && s.snap.key == key {
		return s.snap, nil
	}
	data := make([]byte, st.Size())
	if _, err := readFull(f, data); err != nil {
		return nil, err
	}
	s.snap = parseSnapshot(data, s.path)
	s.snap.path = s.path
	s.snap.data = data
	s.snap.key = key
	return s.snap, nil
}

func readFull(f *os.File, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := f.Read(b[n:])
		n += m
		if err != nil {
			if n == len(b) {
				break
			}
			return n, err
		}
	}
	return n, nil
}

func keyOf(st os.FileInfo) fileKey {
	k := fileKey{ok: true, size: st.Size(), mtimeNanos: st.ModTime().UnixNano()}
	k.dev, k.ino, k.ctimeNanos = statIdentity(st)
	return k
}

// parseSnapshot decodes every line of data. A big file is decoded in
// parallel chunks (decoding is most of what a CLI start on 10k tasks
// costs); ids are then checked in file order, so records and the error
// reported are exactly those of a single pass.
func parseSnapshot(data []byte, path string) *snapshot {
	return parseSnapshotWith(data, path, decodeAll)
}

// parseSnapshotWith is parseSnapshot with decode filling the records'
// index fields (line and raw set) and each line's error.
func parseSnapshotWith(data []byte, path string, decode func(store []record, errs []error)) *snapshot {
	// Count lines first so records live in one allocation.
	n := bytes.Count(data, []byte{'\n'}) + 1
	store := make([]record, 0, n)
	for lineNo := 1; len(data) > 0; lineNo++ {
		var line []byte
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			line, data = data[:i], data[i+1:]
		} else {
			line, data = data, nil
		}
		if len(bytes.TrimSpace(line)) > 0 {
			store = append(store, record{line: lineNo, raw: line})
		}
	}
	errs := make([]error, len(store))
	decode(store, errs)
	sn := &snapshot{recs: make([]*record, 0, len(store)), byID: make(map[string]int, len(store))}
	for i := range store {
		r, err := &store[i], errs[i]
		if err == nil && r.kind == "issue" {
			// One map operation per task: a duplicate shows as a map that did
			// not grow, and the first task keeps the id.
			n := len(sn.byID)
			sn.byID[r.id] = len(sn.recs)
			if len(sn.byID) == n {
				prev := firstTask(sn.recs, r.id)
				sn.byID[r.id] = prev
				err = fmt.Errorf("duplicate id %q (first on line %d)", r.id, sn.recs[prev].line)
			}
		}
		if err != nil {
			r.kind = "" // kept verbatim, never a task
			if sn.bad == nil {
				sn.bad = fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, path, r.line, err)
			}
		}
		sn.recs = append(sn.recs, r)
	}
	return sn
}

// firstTask is the index of the task with id in recs, which has one.
func firstTask(recs []*record, id string) int {
	return slices.IndexFunc(recs, func(r *record) bool { return r.kind == "issue" && r.id == id })
}

// decodeAll is decodeRecords in parallel chunks on a big file.
func decodeAll(store []record, errs []error) { decodeParallel(store, errs, false) }

// decodeParallel is decodeAll over lines that may lie in a mapping
// (mapped): a worker's fault reading it (the file cut short meanwhile) is
// caught there and raised again on the calling goroutine once all are
// done, where the caller's guard turns it into reading the file instead.
func decodeParallel(store []record, errs []error, mapped bool) {
	workers := min(runtime.GOMAXPROCS(0), 4, len(store)/2000)
	if workers <= 1 {
		decodeRecords(store, errs)
		return
	}
	var wg sync.WaitGroup
	faults := make([]any, workers)
	for w := range workers {
		lo, hi := len(store)*w/workers, len(store)*(w+1)/workers
		wg.Go(func() { faults[w] = caught(mapped, func() { decodeRecords(store[lo:hi], errs[lo:hi]) }) })
	}
	wg.Wait()
	for _, f := range faults {
		if f != nil {
			panic(f)
		}
	}
}

// decodeRecords fills the index fields of recs (line and raw set) and
// puts each line's error, if any, in errs.
func decodeRecords(recs []record, errs []error) {
	strs := make(map[string]string, 64)
	deps := &depSlab{}
	for i := range recs {
		r := &recs[i]
		err := decodeWith(&scanner{b: r.raw, strs: strs, deps: deps}, r)
		if err != nil {
			*r = record{line: r.line, raw: r.raw}
			err = decodeSlow(r.raw, r)
		}
		if err == nil && r.kind == "issue" && r.id == "" {
			err = errors.New("record has no id")
		}
		errs[i] = err
	}
}

// LoadError reports an unreadable line in the file (wrapping ErrMalformed),
// or nil. Reads still work around such a line; writes do not.
func (s *builtinStore) LoadError() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, err := s.load()
	if err != nil {
		return err
	}
	return sn.bad
}

// full decodes r completely. The load pass skips over text it does not
// need, so a broken string (a raw control byte, bad UTF-8) can surface
// only here; the record then drops out and the file counts as malformed.
func (sn *snapshot) full(r *record) (*Task, error) {
	t, err := r.full()
	if err != nil {
		r.kind = ""
		delete(sn.byID, r.id)
		if sn.bad == nil {
			sn.bad = fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, sn.path, r.line, err)
		}
		return nil, sn.bad
	}
	return t, nil
}

func (s *builtinStore) find(sn *snapshot, id string) (*record, error) {
	i, ok := sn.byID[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return sn.recs[i], nil
}

func (s *builtinStore) Get(ctx context.Context, id string) (Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, err := s.load()
	if err != nil {
		return Task{}, err
	}
	r, err := s.find(sn, id)
	if err != nil {
		return Task{}, err
	}
	t, err := sn.full(r)
	if err != nil {
		return Task{}, err
	}
	return cloneTask(t), nil
}

func (s *builtinStore) List(ctx context.Context) ([]Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, err := s.load()
	if err != nil {
		return nil, err
	}
	out := make([]Task, 0, len(sn.byID))
	for _, r := range sn.recs {
		if r.kind == "issue" {
			if t, err := sn.full(r); err == nil {
				out = append(out, cloneTask(t))
			}
		}
	}
	return out, nil
}

func (s *builtinStore) Ready(ctx context.Context, opt ReadyOptions) ([]Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	sn, err := s.load()
	if err != nil {
		return nil, err
	}
	return readyTasks(sn, opt, s.now()), nil
}

// readyTasks is Ready over a loaded snapshot.
func readyTasks(sn *snapshot, opt ReadyOptions, now time.Time) []Task {
	idx := readyIndex(sn.recs, sn.byID, opt, now)
	recs := make([]*record, len(idx))
	for k, i := range idx {
		recs[k] = sn.recs[i]
	}
	decodeFull(recs)
	out := make([]Task, 0, len(recs))
	for _, r := range recs {
		if t, err := sn.full(r); err == nil {
			out = append(out, cloneTask(t))
		}
	}
	return out
}

// decodeFull decodes the tasks of many records in parallel chunks, ahead
// of snapshot.full, which then finds them decoded (and decodes a failed
// one again to report it in order).
func decodeFull(recs []*record) {
	workers := min(runtime.GOMAXPROCS(0), 4, len(recs)/500)
	if workers <= 1 {
		return
	}
	var wg sync.WaitGroup
	for w := range workers {
		chunk := recs[len(recs)*w/workers : len(recs)*(w+1)/workers]
		wg.Go(func() {
			for _, r := range chunk {
				_, _ = r.full()
			}
		})
	}
	wg.Wait()
}
