package chorusdir

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// The diagnostic log is Chorus's own account of what it did and what went
// wrong, for whoever debugs it: text records through log/slog in
// .chorus/logs/chorus.log. The session log (session-log.jsonl) stays the
// audit trail of engine events; this one is free to change shape.
const (
	// LogLevelEnv sets the diagnostic log's level: debug, info, warn or error.
	LogLevelEnv = "CHORUS_LOG_LEVEL"
	// DiagLogMax is the size at which chorus.log is rotated.
	DiagLogMax = 10 << 20
	// DiagLogKeep is how many rotated files (chorus.log.1, .2) are kept.
	DiagLogKeep = 2
)

// DiagLog is the path of the diagnostic log.
func (d Dir) DiagLog() string { return filepath.Join(d.Logs(), "chorus.log") }

// ParseLogLevel reads a level name as LogLevelEnv takes it; "" is info.
func ParseLogLevel(s string) (slog.Level, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "info":
		return slog.LevelInfo, nil
	case "debug":
		return slog.LevelDebug, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("%s=%q is not a log level: use debug, info, warn or error", LogLevelEnv, s)
}

// OpenDiagLog opens the diagnostic log at the level named by LogLevelEnv.
// A bad level name is an error rather than a silent default, so the user
// learns why the debug lines they asked for are missing.
func (d Dir) OpenDiagLog() (*slog.Logger, io.Closer, error) {
	level, err := ParseLogLevel(os.Getenv(LogLevelEnv))
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(d.Logs(), DirMode); err != nil {
		return nil, nil, err
	}
	f, err := OpenRotating(d.DiagLog(), DiagLogMax, DiagLogKeep)
	if err != nil {
		return nil, nil, err
	}
	return slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: level})), f, nil
}

// RotatingFile is an append-only file that, before a write would take it
// past max bytes, is renamed to path.1 (path.1 to path.2, and so on up to
// keep files; the oldest is dropped) and started afresh. It assumes one
// writing process, which the repository lock guarantees.
type RotatingFile struct {
	mu   sync.Mutex
	path string
	max  int64
	keep int
	f    *os.File
	size int64
	err  error // a failed rotation; writes stop rather than grow the file
}

// OpenRotating opens (appending to) or creates path.
func OpenRotating(path string, max int64, keep int) (*RotatingFile, error) {
	r := &RotatingFile{path: path, max: max, keep: keep}
	if err := r.open(); err != nil {
		return nil, err
	}
	return r, nil
}

func (r *RotatingFile) open() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return err
	}
	r.f, r.size = f, st.Size()
	return nil
}

// Write appends p, rotating first when p would not fit. A record larger
// than max is written whole to a fresh file.
func (r *RotatingFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return 0, r.err
	}
	if r.f == nil {
		return 0, os.ErrClosed
	}
	if r.size > 0 && r.size+int64(len(p)) > r.max {
		if err := r.rotate(); err != nil {
			r.err = fmt.Errorf("rotate %s: %w", r.path, err)
			return 0, r.err
		}
	}
	n, err := r.f.Write(p)
	r.size += int64(n)
	return n, err
}

func (r *RotatingFile) rotate() error {
	if err := r.f.Close(); err != nil {
		return err
	}
	r.f = nil
	if r.keep <= 0 {
		if err := os.Remove(r.path); err != nil && !os.IsNotExist(err) {
			return err
		}
		return r.open()
	}
	for i := r.keep - 1; i >= 1; i-- {
		from, to := r.path+"."+strconv.Itoa(i), r.path+"."+strconv.Itoa(i+1)
		if err := os.Rename(from, to); err != nil && !os.IsNotExist(err) {
			return err
		}
	}
	if err := os.Rename(r.path, r.path+".1"); err != nil {
		return err
	}
	return r.open()
}

// Close closes the current file.
func (r *RotatingFile) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.f == nil {
		return nil
	}
	err := r.f.Close()
	r.f = nil
	return err
}
