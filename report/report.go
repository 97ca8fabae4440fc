// Package report is the morning report: what a run of Chorus did, built
// from the session log (.chorus/session-log.jsonl), the merge history, the
// engine's state.json and the task store. It says what landed (with its
// commit), what failed and why, what waits for a person with the exact
// command that moves it on, what each task cost, and the wall time.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// SessionStarted is the session-log event a session begins with; a report
// without --since covers the run since the last one.
const SessionStarted = "session_started"

// Report is one run's summary.
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// Wall is the time from the first to the last event of the run.
	Wall    time.Duration      `json:"wallNanos"`
	Landed  []Landed           `json:"landed"`
	Failed  []Failed           `json:"failed"`
	Waiting []Waiting          `json:"waiting"`
	Tasks   []TaskCost         `json:"tasks"`
	Total   orchestrator.Usage `json:"total"`
}

// Landed is a task whose work reached the target branch.
type Landed struct {
	Task   string    `json:"task"`
	Title  string    `json:"title"`
	Commit string    `json:"commit"`
	At     time.Time `json:"at"`
}

// Failed is a task that failed or was blocked in the run.
type Failed struct {
	Task   string `json:"task"`
	Title  string `json:"title"`
	Kind   string `json:"kind"` // failed | blocked
	Reason string `json:"reason"`
}

// Waiting is something only a person can move on, with the command that
// does it.
type Waiting struct {
	Task string `json:"task"`
	What string `json:"what"`
	Next string `json:"next"`
}

// TaskCost is what one task of the run cost (over all its runs).
type TaskCost struct {
	Task    string             `json:"task"`
	Title   string             `json:"title"`
	Usage   orchestrator.Usage `json:"usage"`
	Runtime time.Duration      `json:"runtimeNanos"`
}

// Build reads the run since since (zero: since the last session start)
// until now.
func Build(dir chorusdir.Dir, tasks []beads.Task, since time.Time) (Report, error) {
	entries, err := ReadLog(dir.SessionLog())
	if err != nil {
		return Report{}, err
	}
	start := 0
	if since.IsZero() {
		// By position, not time: the log's times are whole seconds, and the
		// session before may have ended within the same one.
		for i, e := range entries {
			if e.Event == SessionStarted {
				start, since = i, e.TS
			}
		}
	}
	entries = entries[start:]
	r := Report{Since: since, Until: time.Now().UTC()}
	title := map[string]string{}
	for _, t := range tasks {
		title[t.ID] = t.Title
	}
	var first, last time.Time
	landed := map[string]int{}
	failed := map[string]int{}
	cost := map[string]int{}
	seen := map[string]bool{}
	for _, e := range entries {
		if e.Mode != "implementation" || start == 0 && e.TS.Before(since.Truncate(time.Second)) {
			continue
		}
		if first.IsZero() {
			first = e.TS
		}
		last = e.TS
		task, _ := e.Details["taskId"].(string)
		text, _ := e.Details["text"].(string)
		if task != "" {
			seen[task] = true
		}
		switch orchestrator.EventKind(e.Event) {
		case orchestrator.EventKind("merge_" + string(merge.EventLanded)):
			commit, _ := e.Details["commit"].(string)
			l := Landed{Task: task, Title: title[task], Commit: commit, At: e.TS}
			if i, ok := landed[task]; ok {
				r.Landed[i] = l
			} else {
				landed[task] = len(r.Landed)
				r.Landed = append(r.Landed, l)
			}
		case orchestrator.EvFailed, orchestrator.EvBlocked:
			kind := map[orchestrator.EventKind]string{orchestrator.EvFailed: "failed", orchestrator.EvBlocked: "blocked"}[orchestrator.EventKind(e.Event)]
			f := Failed{Task: task, Title: title[task], Kind: kind, Reason: text}
			if last, _ := e.Details["lastFailure"].(string); last != "" && !strings.Contains(text, last) {
				f.Reason += "; last: " + last
			}
			if i, ok := failed[task]; ok {
				r.Failed[i] = f
			} else {
				failed[task] = len(r.Failed)
				r.Failed = append(r.Failed, f)
			}
		case orchestrator.EvCompleted:
			// A task failed earlier in the run and completed later is no
			// longer a failure.
			if i, ok := failed[task]; ok {
				r.Failed = append(r.Failed[:i], r.Failed[i+1:]...)
				delete(failed, task)
				for k, v := range failed {
					if v > i {
						failed[k] = v - 1
					}
				}
			}
		}
		if u, ok := usageOf(e.Details["usage"]); ok && task != "" {
			tc := TaskCost{Task: task, Title: title[task], Usage: u}
			if s, ok := e.Details["runtime"].(float64); ok {
				tc.Runtime = time.Duration(s) * time.Second
			}
			if i, ok := cost[task]; ok {
				r.Tasks[i] = tc // the latest word: totals over every run
			} else {
				cost[task] = len(r.Tasks)
				r.Tasks = append(r.Tasks, tc)
			}
		}
	}
	if !first.IsZero() {
		r.Wall = last.Sub(first)
	}
	// The merge commit from the history when the log has none (a landing
	// recorded after a crash).
	hist, err := readHistory(filepath.Join(dir.Path, "merge-history.jsonl"))
	if err != nil {
		return Report{}, err
	}
	for _, it := range hist {
		if it.LandedAt.IsZero() || it.LandedAt.Before(since) {
			continue
		}
		if i, ok := landed[it.TaskID]; ok {
			if r.Landed[i].Commit == "" {
				r.Landed[i].Commit = it.MergeCommit
			}
			continue
		}
		landed[it.TaskID] = len(r.Landed)
		r.Landed = append(r.Landed, Landed{Task: it.TaskID, Title: orDefault(title[it.TaskID], it.Title), Commit: it.MergeCommit, At: it.LandedAt})
	}
	for _, c := range r.Tasks {
		r.Total = add(r.Total, c.Usage)
	}
	st, err := orchestrator.LoadState(dir.State())
	if err != nil {
		return Report{}, err
	}
	r.Waiting = waiting(dir, st, tasks, seen)
	return r, nil
}

// waiting lists what needs a person: merges the queue cannot move alone,
// questions agents wait on (while Chorus runs) and the run's tasks left
// failed or blocked.
func waiting(dir chorusdir.Dir, st *orchestrator.State, tasks []beads.Task, inRun map[string]bool) []Waiting {
	var out []Waiting
	if st != nil {
		for _, it := range st.MergeQueue {
			switch it.Status {
			case merge.StatusWaitingApproval:
				out = append(out, Waiting{Task: it.TaskID, What: "merge waits for approval",
					Next: fmt.Sprintf("chorus task diff %s; then chorus merge approve %s (or chorus merge drop %s)", it.TaskID, it.TaskID, it.TaskID)})
			case merge.StatusWaitingHuman, merge.StatusFailed:
				what := "merge waits for a person"
				if it.LastError != "" {
					what += ": " + firstLine(it.LastError)
				}
				next := fmt.Sprintf("chorus task diff %s; fix the branch, then run chorus again (or chorus merge drop %s)", it.TaskID, it.TaskID)
				if it.Action != "" {
					next = firstLine(it.Action) + "; or chorus merge drop " + it.TaskID
				}
				out = append(out, Waiting{Task: it.TaskID, What: what, Next: next})
			case merge.StatusHeld:
				out = append(out, Waiting{Task: it.TaskID, What: "merge held: the target branch moved outside Chorus",
					Next: "inspect the target's new tip, then chorus merge accept-target"})
			}
		}
		if ls, err := dir.InspectLock(); err == nil && ls.Held {
			ids := make([]string, 0, len(st.Agents))
			for id := range st.Agents {
				ids = append(ids, id)
			}
			sort.Strings(ids)
			for _, id := range ids {
				a := st.Agents[id]
				if a.Status == orchestrator.AgentNeedsHelp && a.QuestionID != "" {
					out = append(out, Waiting{Task: a.TaskID, What: "question: " + a.Question + optionList(a.Options),
						Next: "chorus answer " + a.TaskID + " NUMBER|TEXT"})
				}
			}
		}
	}
	for _, t := range tasks {
		if !inRun[t.ID] {
			continue
		}
		switch {
		case t.HasLabel(beads.LabelFailed) && t.Status != beads.StatusClosed:
			out = append(out, Waiting{Task: t.ID, What: "task failed",
				Next: fmt.Sprintf("chorus task show %s; then chorus task label remove %s failed && chorus task reopen %s", t.ID, t.ID, t.ID)})
		case t.Status == beads.StatusBlocked:
			out = append(out, Waiting{Task: t.ID, What: "task blocked",
				Next: fmt.Sprintf("chorus task show %s; once unblocked, chorus task reopen %s", t.ID, t.ID)})
		}
	}
	return out
}

func optionList(opts []string) string {
	if len(opts) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(" (")
	for i, o := range opts {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%d) %s", i+1, o)
	}
	b.WriteString(")")
	return b.String()
}

// ReadLog reads the session log; lines it cannot parse are skipped (the
// log is appended by several processes and may end mid-line after a kill).
func ReadLog(path string) ([]chorusdir.Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []chorusdir.Entry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	for sc.Scan() {
		var e chorusdir.Entry
		if json.Unmarshal(sc.Bytes(), &e) == nil {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}

func readHistory(path string) ([]merge.Item, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []merge.Item
	for _, l := range bytes.Split(b, []byte("\n")) {
		var it merge.Item
		if json.Unmarshal(l, &it) == nil && it.TaskID != "" {
			out = append(out, it)
		}
	}
	return out, nil
}

func usageOf(v any) (orchestrator.Usage, bool) {
	if v == nil {
		return orchestrator.Usage{}, false
	}
	b, err := json.Marshal(v)
	if err != nil {
		return orchestrator.Usage{}, false
	}
	var u orchestrator.Usage
	if json.Unmarshal(b, &u) != nil {
		return orchestrator.Usage{}, false
	}
	return u, true
}

func add(a, b orchestrator.Usage) orchestrator.Usage {
	a.Input += b.Input
	a.Output += b.Output
	a.CacheRead += b.CacheRead
	a.CacheWrite += b.CacheWrite
	a.CostUSD += b.CostUSD
	return a
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
