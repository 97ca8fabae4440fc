// Package chorusdir owns the layout of a project's .chorus/ directory and the
// small file primitives every writer of it needs: atomic replacement and the
// append-only session log.
package chorusdir

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Dir is a project's .chorus directory.
type Dir struct {
	Root string // the repository's main worktree
	Path string // Root/.chorus
}

// At returns the layout for the repository whose main worktree is root.
func At(root string) Dir { return Dir{Root: root, Path: filepath.Join(root, ".chorus")} }

// Paths of the files Chorus keeps.
func (d Dir) Config() string        { return filepath.Join(d.Path, "config.json") }
func (d Dir) State() string         { return filepath.Join(d.Path, "state.json") }
func (d Dir) SessionLog() string    { return filepath.Join(d.Path, "session-log.jsonl") }
func (d Dir) PlanningState() string { return filepath.Join(d.Path, "planning-state.json") }
func (d Dir) Lock() string          { return filepath.Join(d.Path, "chorus.lock") }
func (d Dir) Logs() string          { return filepath.Join(d.Path, "logs") }
func (d Dir) Prompts() string       { return filepath.Join(d.Path, "prompts") }
func (d Dir) Bin() string           { return filepath.Join(d.Path, "bin") } // the `chorus` agents find first
func (d Dir) Hooks() string         { return filepath.Join(d.Path, "hooks") }
func (d Dir) Patterns() string      { return filepath.Join(d.Path, "PATTERNS.md") }
func (d Dir) TaskRules() string     { return filepath.Join(d.Path, "task-rules.md") }
func (d Dir) Worktrees() string     { return filepath.Join(d.Root, ".worktrees") }
func (d Dir) Learnings() string     { return filepath.Join(d.Root, ".agent", "learnings.md") }

// Exists reports whether the .chorus directory is present.
func (d Dir) Exists() bool {
	st, err := os.Stat(d.Path)
	return err == nil && st.IsDir()
}

// WriteAtomic replaces path with data so that a reader, or a crash at any
// moment, sees either the old or the new content: temp file, fsync, rename,
// fsync of the directory.
func WriteAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, dirModeFor(perm)); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Chmod(perm); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// Entry is one line of session-log.jsonl.
type Entry struct {
	TS      time.Time      `json:"ts"`
	Mode    string         `json:"mode"`
	Event   string         `json:"event"`
	Details map[string]any `json:"details"`
}

var logMu sync.Mutex

// AppendLog appends one JSON line to the session log. Each line is written
// with a single O_APPEND write so lines from concurrent processes never
// interleave.
func (d Dir) AppendLog(mode, event string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	b, err := json.Marshal(Entry{TS: time.Now().UTC().Truncate(time.Second), Mode: mode, Event: event, Details: details})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	logMu.Lock()
	defer logMu.Unlock()
	if err := os.MkdirAll(d.Path, DirMode); err != nil {
		return err
	}
	f, err := os.OpenFile(d.SessionLog(), os.O_RDWR|os.O_APPEND|os.O_CREATE, FileMode)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := AppendLines(f, b); err != nil {
		return fmt.Errorf("session log: %w", err)
	}
	return nil
}

// AppendLines appends b (whole lines) to f, opened with O_APPEND, in one
// write. A write a kill cut short (a SIGKILL stops one of more than a
// page between pages) leaves a last line with no newline; b then starts
// on a line of its own, so the cut line is the only one lost, not b's
// first too.
func AppendLines(f *os.File, b []byte) error {
	if st, err := f.Stat(); err == nil && st.Size() > 0 {
		var last [1]byte
		if _, err := f.ReadAt(last[:], st.Size()-1); err == nil && last[0] != '\n' {
			b = append([]byte{'\n'}, b...)
		}
	}
	_, err := f.Write(b)
	return err
}

// staleSignalAge is how old a signal's temp file must be before a start
// removes it: `chorus signal` (from an agent that may outlive a crashed
// Chorus) writes and renames one within milliseconds.
const staleSignalAge = time.Minute

// CleanTemps removes temp files a killed process left in .chorus/: the
// ".NAME.tmp…" files of WriteAtomic anywhere in it, and signal temp files
// (signals/.tmp-…) older than a minute. Call it holding the lock, so no
// other Chorus is writing. It returns the paths removed.
func (d Dir) CleanTemps(now time.Time) ([]string, error) {
	var removed []string
	err := filepath.WalkDir(d.Path, func(p string, e os.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if e.IsDir() {
			if p != d.Path && filepath.Base(filepath.Dir(p)) == ".chorus" && e.Name() == "logs" {
				return filepath.SkipDir // agent output, no temps of ours
			}
			return nil
		}
		if !e.Type().IsRegular() {
			return nil
		}
		name := e.Name()
		stale := false
		switch {
		case filepath.Base(filepath.Dir(p)) == "signals" && strings.HasPrefix(name, ".tmp-"):
			if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) >= staleSignalAge {
				stale = true
			}
		case strings.HasPrefix(name, ".") && strings.Contains(name, ".tmp"):
			stale = true
		}
		if stale {
			if err := os.Remove(p); err == nil {
				removed = append(removed, p)
			} else if !os.IsNotExist(err) {
				return err
			}
		}
		return nil
	})
	return removed, err
}
