package beads

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// Writing the task file: the cross-process lock, read-modify-write of a
// snapshot, and the atomic replacement of the file.

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
			line, err := encodeRecord(r.task(), r.raw, r.ext().drop)
			if err != nil {
				return fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, s.path, r.line, err)
			}
			r.raw, r.dirty, r.more.drop = line, false, nil
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
