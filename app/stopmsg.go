package app

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/report"
)

// uncommittedWork is a task whose work a WIP commit failed to save (disk
// full, a broken index): it stays as files in its worktree.
type uncommittedWork struct {
	Task, Worktree, Why string
}

// uncommittedFrom reads one engine event for a failed WIP commit.
func uncommittedFrom(ev orchestrator.Event) (uncommittedWork, bool) {
	wt, _ := ev.Fields[orchestrator.FieldUncommitted].(string)
	if ev.Kind != orchestrator.EvError || wt == "" {
		return uncommittedWork{}, false
	}
	return uncommittedWork{Task: ev.Task, Worktree: wt, Why: ev.Text}, true
}

// uncommittedSince reads the session log for WIP commits that failed from
// since on (the log's times are whole seconds: the second of since counts),
// the latest per task. A background engine's front end learns of them this
// way.
func uncommittedSince(d chorusdir.Dir, since time.Time) []uncommittedWork {
	entries, err := report.ReadLog(d.SessionLog())
	if err != nil {
		return nil
	}
	var out []uncommittedWork
	for _, e := range entries {
		if e.Event != string(orchestrator.EvError) || e.TS.Before(since.Truncate(time.Second)) {
			continue
		}
		wt, _ := e.Details[orchestrator.FieldUncommitted].(string)
		task, _ := e.Details["taskId"].(string)
		why, _ := e.Details["text"].(string)
		if wt != "" {
			out = addUncommitted(out, uncommittedWork{Task: task, Worktree: wt, Why: why})
		}
	}
	return out
}

// addUncommitted keeps one entry per task, the latest.
func addUncommitted(list []uncommittedWork, u uncommittedWork) []uncommittedWork {
	for i, x := range list {
		if x.Task == u.Task {
			list[i] = u
			return list
		}
	}
	return append(list, u)
}

// stoppedLine says what a stop did to the running agents' tasks, and never
// that work was committed when a commit failed.
func stoppedLine(running int, lost []uncommittedWork) string {
	if len(lost) == 0 {
		return fmt.Sprintf("stopped %d agent(s); their tasks went back to open with their work committed", running)
	}
	return fmt.Sprintf("stopped %d agent(s); their tasks went back to open, but the work of %d could not be committed: %s",
		running, len(lost), uncommittedText(lost))
}

// uncommittedText names each task whose work stays uncommitted, where it
// is and what to do.
func uncommittedText(lost []uncommittedWork) string {
	var parts []string
	for _, u := range lost {
		parts = append(parts, fmt.Sprintf("%s's changes are still uncommitted files in %s (%s)", line(u.Task), u.Worktree, line(u.Why)))
	}
	return strings.Join(parts, "; ") + ". Nothing was deleted: the task's next run continues in that worktree; to keep them now, free the space (or fix the cause), then `git -C WORKTREE add -A && git -C WORKTREE commit -m wip`"
}

// waitLockFree waits until no process holds the repository lock (the
// engine that just closed its socket lets go of it right after), for at
// most limit: a blocking shared flock on the lock file is granted the
// moment the holder releases it.
func waitLockFree(d chorusdir.Dir, limit time.Duration) bool {
	f, err := os.Open(d.Lock())
	if err != nil {
		return true // no lock file: nobody holds it
	}
	got := make(chan struct{})
	go func() {
		defer f.Close()
		if syscall.Flock(int(f.Fd()), syscall.LOCK_SH) == nil {
			_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		}
		close(got)
	}()
	select {
	case <-got:
		return true
	case <-time.After(limit):
		return false
	}
}
