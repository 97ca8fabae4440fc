package chorusdir

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Holder describes the process that holds the repository lock.
type Holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
	Command string    `json:"command"`
}

// HeldError says another Chorus owns this repository.
type HeldError struct {
	Path   string
	Holder Holder
}

func (e *HeldError) Error() string {
	h := e.Holder
	return fmt.Sprintf("another Chorus is running in this repository (pid %d on %s, started %s, %q); stop it first, or wait for it to finish (lock: %s)",
		h.PID, h.Host, h.Started.Local().Format("2006-01-02 15:04:05"), h.Command, e.Path)
}

// Lock is an exclusive hold on a repository: one Chorus per repository.
// It is an flock, so the kernel releases it when the holder dies however it
// dies; the file left behind by a killed holder is merely stale.
type Lock struct {
	f    *os.File
	path string
}

// Acquire takes the repository lock or returns *HeldError. Holding it,
// it makes .chorus/ private (Tighten), so an install made while it was
// world-readable is fixed on the next start.
func (d Dir) Acquire(command string) (*Lock, error) {
	if err := os.MkdirAll(d.Path, DirMode); err != nil {
		return nil, err
	}
	path := d.Lock()
	deadline := time.Now().Add(3 * time.Second)
	for attempt := 0; attempt < 100; attempt++ {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, FileMode)
		if err != nil {
			return nil, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				h, _ := readHolder(path)
				if !processAlive(h.PID) && time.Now().Before(deadline) {
					// The holder died; a child it was starting at that
					// moment still has the descriptor until its exec.
					time.Sleep(50 * time.Millisecond)
					continue
				}
				return nil, &HeldError{Path: path, Holder: h}
			}
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		// The previous holder may have unlinked the file between our open
		// and our flock; then we locked an orphan inode. Start over.
		if !sameFile(f, path) {
			f.Close()
			continue
		}
		host, _ := os.Hostname()
		b, _ := json.Marshal(Holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC(), Command: command})
		if err := f.Truncate(0); err == nil {
			_, _ = f.WriteAt(append(b, '\n'), 0)
			_ = f.Sync()
		}
		if _, err := d.Tighten(); err != nil {
			f.Close()
			return nil, fmt.Errorf("making %s private: %w", d.Path, err)
		}
		return &Lock{f: f, path: path}, nil
	}
	return nil, fmt.Errorf("lock %s: could not acquire a stable lock file", path)
}

// Release gives the lock up and removes the file.
func (l *Lock) Release() {
	if l == nil || l.f == nil {
		return
	}
	os.Remove(l.path)
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}

// LockState is what `chorus doctor` reports about the lock file.
type LockState struct {
	Present bool   // the file exists
	Held    bool   // a live process holds it
	Holder  Holder // who wrote it
}

// Stale reports a lock file left behind by a process that died.
func (s LockState) Stale() bool { return s.Present && !s.Held }

// InspectLock looks at the lock without taking it for longer than a probe.
func (d Dir) InspectLock() (LockState, error) {
	path := d.Lock()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return LockState{}, nil
	}
	if err != nil {
		return LockState{}, err
	}
	defer f.Close()
	st := LockState{Present: true}
	st.Holder, _ = readHolder(path)
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		// A dead holder's lock can linger for a moment in a child it was
		// starting; that is not a running Chorus.
		st.Held = errors.Is(err, syscall.EWOULDBLOCK) && processAlive(st.Holder.PID)
		return st, nil
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return st, nil
}

func readHolder(path string) (Holder, error) {
	var h Holder
	b, err := os.ReadFile(path)
	if err != nil {
		return h, err
	}
	err = json.Unmarshal([]byte(strings.TrimSpace(string(b))), &h)
	return h, err
}

func sameFile(f *os.File, path string) bool {
	a, err1 := f.Stat()
	b, err2 := os.Stat(path)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// processAlive reports whether pid exists (on this host).
func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
