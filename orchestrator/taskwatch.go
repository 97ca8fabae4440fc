package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Changes made to the task store outside the engine (a `chorus task`
// command with no engine to go through, bd in another shell, an editor)
// reach the front ends through the snapshot's TaskGen: the engine watches
// the store's files and bumps it, so a TUI reloads its task list within
// the debounce below instead of at some unrelated event.

// taskWatchDebounce gathers the several events one write makes (a temp
// file renamed over the task file, a lock) into one reload.
const taskWatchDebounce = 50 * time.Millisecond

// taskStoreFile says whether a file in .beads/ is one a task change
// touches: the built-in store's file (replaced by a rename), and bd's
// last-touched marker, written by every bd write (its JSONL export is
// throttled and lags; its database is watched separately).
func taskStoreFile(name string) bool {
	switch filepath.Base(name) {
	case "issues.jsonl", "last-touched":
		return true
	}
	return false
}

// watchTasks follows .beads/ until ctx ends. A store that is not there
// yet, or a platform without a watcher, only loses the live reload: the
// periodic tick still finds new ready work.
func (e *Engine) watchTasks(ctx context.Context) {
	dir := filepath.Join(e.opt.Dir.Root, ".beads")
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return
	}
	// bd's embedded database: one directory per database, written on
	// every change. Its writes come in bursts the debounce folds.
	dolt := filepath.Join(dir, "embeddeddolt")
	if ents, err := os.ReadDir(dolt); err == nil {
		for _, en := range ents {
			if en.IsDir() {
				_ = w.Add(filepath.Join(dolt, en.Name()))
			}
		}
	}
	go func() {
		defer w.Close()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		armed := false
		for {
			select {
			case <-ctx.Done():
				return
			case <-w.Errors:
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Dir(ev.Name) == dir && !taskStoreFile(ev.Name) {
					continue
				}
				if ev.Op == fsnotify.Chmod {
					continue
				}
				if !armed {
					armed = true
					timer.Reset(taskWatchDebounce)
				}
			case <-timer.C:
				armed = false
				select {
				case e.msgs <- func() { e.bumpTasks() }:
				case <-e.loopDone:
					return
				case <-ctx.Done():
					return
				}
			}
		}
	}()
}

// bumpTasks records a change of the task store. Loop only.
func (e *Engine) bumpTasks() {
	e.taskGen++
	e.needReady = true
	e.noReady = false
	e.dirty = false // nothing in State changed; the publish carries it
}
