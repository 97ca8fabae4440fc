package beads

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/taskid"
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
	recs []*record
	byID map[string]int
	bad  error // first unreadable line; set means no writes
	path string
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
	workers := min(runtime.GOMAXPROCS(0), 4, len(store)/2000)
	if workers <= 1 {
		decodeRecords(store, errs)
	} else {
		var wg sync.WaitGroup
		for w := range workers {
			lo, hi := len(store)*w/workers, len(store)*(w+1)/workers
			wg.Go(func() { decodeRecords(store[lo:hi], errs[lo:hi]) })
		}
		wg.Wait()
	}
	sn := &snapshot{recs: make([]*record, 0, len(store)), byID: make(map[string]int, len(store))}
	for i := range store {
		r, err := &store[i], errs[i]
		if err == nil && r.kind == "issue" {
			if prev, dup := sn.byID[r.id]; dup {
				err = fmt.Errorf("duplicate id %q (first on line %d)", r.id, sn.recs[prev].line)
			}
		}
		if err != nil {
			r.kind = "" // kept verbatim, never a task
			if sn.bad == nil {
				sn.bad = fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, path, r.line, err)
			}
		}
		if r.kind == "issue" {
			sn.byID[r.id] = len(sn.recs)
		}
		sn.recs = append(sn.recs, r)
	}
	return sn
}

// decodeRecords fills the index fields of recs (line and raw set) and
// puts each line's error, if any, in errs.
func decodeRecords(recs []record, errs []error) {
	strs := make(map[string]string, 64)
	for i := range recs {
		r := &recs[i]
		err := decodeWith(&scanner{b: r.raw, strs: strs}, r)
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

// lock takes the cross-process write lock. A fresh descriptor per call
// also excludes other goroutines, since flock belongs to the open file.
func (s *builtinStore) lock(ctx context.Context) (func(), error) {
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return nil, err
	}
	// Keep the lock and temp files out of `git status` when bd has not
	// already provided a .beads/.gitignore (bd's ignores *.lock).
	ign := filepath.Join(s.dir, ".gitignore")
	if _, err := os.Stat(ign); errors.Is(err, os.ErrNotExist) {
		_ = os.WriteFile(ign, []byte("chorus.lock\n.issues.jsonl.tmp*\n"), 0o644)
	}
	f, err := os.OpenFile(s.lockPath, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- flockRetry(int(f.Fd())) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("beads: locking %s: %w", s.lockPath, err)
		}
	case <-ctx.Done():
		// Closing the descriptor releases the lock if it is granted later.
		go func() { <-done; f.Close() }()
		return nil, ctx.Err()
	}
	return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}

func flockRetry(fd int) error {
	for {
		err := syscall.Flock(fd, syscall.LOCK_EX)
		if err != syscall.EINTR {
			return err
		}
	}
}

// writable takes the file lock and the store's lock and loads a snapshot
// that may be written (no malformed line in it); release gives both back.
func (s *builtinStore) writable(ctx context.Context) (*snapshot, func(), error) {
	unlock, err := s.lock(ctx)
	if err != nil {
		return nil, nil, err
	}
	s.mu.Lock()
	release := func() { s.mu.Unlock(); unlock() }
	sn, err := s.load()
	if err == nil && sn.bad != nil {
		err = fmt.Errorf("beads: not writing: %w", sn.bad)
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return sn, release, nil
}

// mutate runs fn on a fresh snapshot under the write lock and writes the
// result atomically. fn validates before it changes anything and marks
// what it changed with touch.
func (s *builtinStore) mutate(ctx context.Context, fn func(sn *snapshot, touch func(*record, *Task)) error) error {
	sn, release, err := s.writable(ctx)
	if err != nil {
		return err
	}
	defer release()
	var changed []*record
	touch := func(r *record, t *Task) {
		t.UpdatedAt = s.now()
		r.setTask(t)
		r.dirty = true
		changed = append(changed, r)
	}
	if err := fn(sn, touch); err != nil {
		if len(changed) > 0 {
			s.snap = nil
		}
		return err
	}
	if len(changed) == 0 {
		return nil
	}
	if err := s.write(sn); err != nil {
		s.snap = nil
		return err
	}
	return nil
}

func (s *builtinStore) write(sn *snapshot) error {
	var buf bytes.Buffer
	for _, r := range sn.recs {
		if r.dirty {
			line, err := encodeRecord(r.task, r.raw, r.drop)
			if err != nil {
				return fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, s.path, r.line, err)
			}
			r.raw, r.dirty, r.drop = line, false, nil
		}
		buf.Write(r.raw)
		buf.WriteByte('\n')
	}
	written, err := atomicWrite(s.path, buf.Bytes())
	if err != nil {
		return err
	}
	st, err := os.Stat(s.path)
	if err != nil {
		return err
	}
	sn.key, sn.data = keyOf(st), buf.Bytes()
	if k := keyOf(written); k.dev != sn.key.dev || k.ino != sn.key.ino {
		// Another writer (bd) replaced the file right after us: this
		// snapshot is not what the path holds, so the next read reloads.
		sn.key = fileKey{}
	}
	// Records now point into buf's bytes, which stay alive with them.
	return nil
}

// atomicWrite replaces path with data: temp file, fsync, rename, fsync dir.
// It returns the new file's FileInfo from before the rename.
func atomicWrite(path string, data []byte) (os.FileInfo, error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".issues.jsonl.tmp*")
	if err != nil {
		return nil, err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return nil, err
	}
	if err := f.Chmod(0o644); err != nil {
		return nil, err
	}
	if err := f.Sync(); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return nil, err
	}
	ok = true
	d, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return st, d.Sync()
}

// newID makes a bd-style id: prefix, '-', base36 of a hash, as short as the
// number of tasks allows (bd's adaptive length), longer on collision.
func (s *builtinStore) newID(sn *snapshot, title string) string {
	n := len(sn.byID) + 1
	length := 3
	for length < 8 && pow36(length) < 4*n*n {
		length++
	}
	for nonce := 0; ; nonce++ {
		h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%d\x00%s\x00%d\x00%d", title, s.now().UnixNano(), s.actor, os.Getpid(), nonce))
		enc := new(big.Int).SetBytes(h[:]).Text(36)
		l := length + nonce/8 // widen after repeated collisions
		if l > len(enc) {
			l = len(enc)
		}
		id := s.prefix + "-" + enc[:l]
		if _, taken := sn.byID[id]; !taken {
			return id
		}
	}
}

func pow36(n int) int {
	p := 1
	for range n {
		p *= 36
	}
	return p
}

func (s *builtinStore) Create(ctx context.Context, title string, opt CreateOptions) (Task, error) {
	var out Task
	if strings.TrimSpace(title) == "" {
		return out, errors.New("beads: title is required")
	}
	prio := opt.priority()
	if prio < 0 || prio > 4 {
		return out, fmt.Errorf("beads: priority %d out of range 0-4", prio)
	}
	err := s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		for _, d := range opt.Deps {
			if _, ok := sn.byID[d]; !ok {
				return fmt.Errorf("beads: dependency %s: %w", d, ErrNotFound)
			}
		}
		id := opt.ID
		if id == "" {
			id = s.newID(sn, title)
		} else if err := taskid.Check(id); err != nil {
			return fmt.Errorf("beads: %w", err)
		} else if _, taken := sn.byID[id]; taken {
			return fmt.Errorf("beads: id %s already exists", id)
		}
		now := s.now()
		t := &Task{
			ID: id, Title: title, Description: opt.Description, AcceptanceCriteria: opt.Acceptance,
			Status: StatusOpen, Priority: prio, IssueType: opt.Type, CreatedAt: now, CreatedBy: s.actor,
		}
		if t.IssueType == "" {
			t.IssueType = "task"
		}
		for _, l := range opt.Labels {
			if l != "" && !hasLabel(t.Labels, l) {
				t.Labels = append(t.Labels, l)
			}
		}
		for _, d := range opt.Deps {
			if !hasDep(t.Dependencies, id, d) {
				t.Dependencies = append(t.Dependencies, Dependency{IssueID: id, DependsOnID: d, Type: "blocks", CreatedAt: now, CreatedBy: s.actor})
			}
		}
		if opt.Model != "" || opt.Agent != "" {
			t.Metadata = map[string]any{}
			if opt.Model != "" {
				t.Metadata[MetaModel] = opt.Model
			}
			if opt.Agent != "" {
				t.Metadata[MetaAgent] = opt.Agent
			}
		}
		r := &record{kind: "issue", line: len(sn.recs) + 1}
		sn.byID[id] = len(sn.recs)
		sn.recs = append(sn.recs, r)
		touch(r, t)
		out = cloneTask(t)
		return nil
	})
	return out, err
}

func hasDep(ds []Dependency, from, to string) bool {
	for _, d := range ds {
		if d.IssueID == from && d.DependsOnID == to && blockingType(d.Type) {
			return true
		}
	}
	return false
}

// edit loads id, lets fn change a copy, and writes it back.
func (s *builtinStore) edit(ctx context.Context, id string, fn func(sn *snapshot, t *Task) error) (Task, error) {
	var out Task
	err := s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		r, err := s.find(sn, id)
		if err != nil {
			return err
		}
		before, err := sn.full(r)
		if err != nil {
			return err
		}
		t := cloneTask(before)
		if err := fn(sn, &t); err != nil {
			return err
		}
		if !reflect.DeepEqual(&t, before) {
			touch(r, &t)
		}
		out = cloneTask(&t)
		return nil
	})
	return out, err
}

// activeBlockers lists the ids holding r back, as Ready would see them.
func activeBlockers(sn *snapshot, t *Task) []string {
	var out []string
	for _, d := range t.Dependencies {
		if !blockingType(d.Type) || (d.IssueID != "" && d.IssueID != t.ID) {
			continue
		}
		if j, ok := sn.byID[d.DependsOnID]; ok && activeStatus(sn.recs[j].status) {
			out = append(out, d.DependsOnID)
		}
	}
	return out
}

func (s *builtinStore) Claim(ctx context.Context, id, actor string) (Task, error) {
	if actor == "" {
		actor = s.actor
	}
	return s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		switch {
		case t.Status == StatusInProgress && t.Assignee == actor:
			return nil // bd treats a repeat claim by the same actor as success
		case t.Status == StatusInProgress || (t.Status == StatusOpen && t.Assignee != "" && t.Assignee != actor):
			return fmt.Errorf("claiming %s: %w by %s", id, ErrClaimed, t.Assignee)
		case t.Status != StatusOpen:
			return fmt.Errorf("claiming %s: %w (status %s)", id, ErrNotOpen, t.Status)
		}
		if b := activeBlockers(sn, t); len(b) > 0 {
			return fmt.Errorf("claiming %s: %w: %s", id, ErrNotReady, strings.Join(b, ", "))
		}
		t.Status, t.Assignee = StatusInProgress, actor
		if t.StartedAt == nil {
			now := s.now()
			t.StartedAt = &now
		}
		return nil
	})
}

func (s *builtinStore) Release(ctx context.Context, id string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		t.Status, t.Assignee = StatusOpen, ""
		return nil
	})
	return err
}

func (s *builtinStore) Close(ctx context.Context, id, reason string) error {
	if reason == "" {
		reason = "Closed"
	}
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if t.Status == StatusClosed {
			return nil
		}
		// bd refuses this too ("cannot close X: blocked by open issues").
		if b := activeBlockers(sn, t); len(b) > 0 {
			return fmt.Errorf("cannot close %s: %w: blocked by open issues [%s]", id, ErrNotReady, strings.Join(b, " "))
		}
		now := s.now()
		t.Status, t.ClosedAt, t.CloseReason = StatusClosed, &now, reason
		return nil
	})
	return err
}

func (s *builtinStore) Reopen(ctx context.Context, id string) error {
	return s.mutate(ctx, func(sn *snapshot, touch func(*record, *Task)) error {
		r, err := s.find(sn, id)
		if err != nil {
			return err
		}
		// Like bd reopen (which also clears defer_until), plus the assignee
		// so the task can be claimed again.
		full, err := sn.full(r)
		if err != nil {
			return err
		}
		t := cloneTask(full)
		t.Status, t.Assignee, t.ClosedAt, t.CloseReason = StatusOpen, "", nil, ""
		r.drop = map[string]bool{"defer_until": true}
		r.deferUntil = time.Time{}
		touch(r, &t)
		return nil
	})
}

func (s *builtinStore) Block(ctx context.Context, id, reason string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		t.Status = StatusBlocked
		if reason != "" {
			t.Notes = appendNote(t.Notes, reason)
		}
		return nil
	})
	return err
}

func appendNote(notes, add string) string {
	if notes == "" {
		return add
	}
	return notes + "\n" + add
}

func (s *builtinStore) AddLabel(ctx context.Context, id, label string) error {
	if label == "" {
		return errors.New("beads: empty label")
	}
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if !hasLabel(t.Labels, label) {
			t.Labels = append(t.Labels, label)
		}
		return nil
	})
	return err
}

func (s *builtinStore) RemoveLabel(ctx context.Context, id, label string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		out := t.Labels[:0:0]
		for _, l := range t.Labels {
			if l != label {
				out = append(out, l)
			}
		}
		t.Labels = out
		return nil
	})
	return err
}

func (s *builtinStore) Update(ctx context.Context, id string, u Update) (Task, error) {
	if u.Priority != nil && (*u.Priority < 0 || *u.Priority > 4) {
		return Task{}, fmt.Errorf("beads: priority %d out of range 0-4", *u.Priority)
	}
	if u.Title != nil && strings.TrimSpace(*u.Title) == "" {
		return Task{}, errors.New("beads: title is required")
	}
	return s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if u.Title != nil {
			t.Title = *u.Title
		}
		if u.Description != nil {
			t.Description = *u.Description
		}
		if u.Acceptance != nil {
			t.AcceptanceCriteria = *u.Acceptance
		}
		if u.Priority != nil {
			t.Priority = *u.Priority
		}
		if u.Notes != nil && *u.Notes != "" {
			t.Notes = appendNote(t.Notes, *u.Notes)
		}
		if len(u.Metadata) > 0 {
			if t.Metadata == nil {
				t.Metadata = map[string]any{}
			}
			for k, v := range u.Metadata {
				t.Metadata[k] = v
			}
		}
		return nil
	})
}

func (s *builtinStore) AddDependency(ctx context.Context, id, dependsOn string) error {
	_, err := s.edit(ctx, id, func(sn *snapshot, t *Task) error {
		if _, err := s.find(sn, dependsOn); err != nil {
			return fmt.Errorf("beads: dependency %s: %w", dependsOn, ErrNotFound)
		}
		if hasDep(t.Dependencies, id, dependsOn) {
			return nil
		}
		next := func(x string) []string {
			j, ok := sn.byID[x]
			if !ok {
				return nil
			}
			var out []string
			for _, d := range sn.recs[j].deps {
				if blockingType(d.Type) && (d.IssueID == "" || d.IssueID == x) {
					out = append(out, d.DependsOnID)
				}
			}
			return out
		}
		if c := cyclePath(id, dependsOn, next); c != "" {
			return fmt.Errorf("%w: %s", ErrCycle, c)
		}
		t.Dependencies = append(t.Dependencies, Dependency{IssueID: id, DependsOnID: dependsOn, Type: "blocks", CreatedAt: s.now(), CreatedBy: s.actor})
		return nil
	})
	return err
}
