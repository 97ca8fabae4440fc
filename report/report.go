// Package report is the morning report: what a night of Chorus did, built
// from the session log (.chorus/session-log.jsonl), the merge history, the
// engine's state.json and the task store. It says which period it covers
// (by default since the last report), what landed (with its commit), what
// failed and why with the command that moves it on, what waits for a
// person, when autopilot or the merge queue paused and why, the conflicts
// agents resolved, the iterations retried and why, and what planning and
// each task cost in money and time.
package report

import (
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

// SessionStarted is the session-log event a session begins with.
const SessionStarted = "session_started"

// Report is one period's summary.
type Report struct {
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// From says where Since comes from (FromReport, FromUnread, FromLog,
	// FromSince); LastReport is when the last report was produced.
	From       string    `json:"from"`
	LastReport time.Time `json:"lastReport,omitempty"`
	// Wall is the time from the first to the last event of the period.
	Wall      time.Duration `json:"wallNanos"`
	Sessions  int           `json:"sessions"` // Chorus starts in the period
	Landed    []Landed      `json:"landed"`
	Failed    []Failed      `json:"failed"`
	Waiting   []Waiting     `json:"waiting"`
	Pauses    []Pause       `json:"pauses"`
	Conflicts []Conflict    `json:"conflicts"`
	Retries   []Retry       `json:"retries"`
	// Released are claims of other Chorus instances sharing the task
	// queue, released because their heartbeat went silent.
	Released []DeadRelease      `json:"releasedFromDeadInstances,omitempty"`
	Tasks    []TaskCost         `json:"tasks"`
	Planning Planning           `json:"planning"`
	Total    orchestrator.Usage `json:"total"` // tasks and planning

	sinceOffset, logEnd int64 // the period in the session log, for Record
}

// DeadRelease is a task another instance held, put back to open because
// that instance was taken for dead.
type DeadRelease struct {
	Task     string    `json:"task"`
	Instance string    `json:"instance"`
	Why      string    `json:"why"`
	At       time.Time `json:"at"`
}

// Landed is a task whose work reached the target branch.
type Landed struct {
	Task   string    `json:"task"`
	Title  string    `json:"title"`
	Commit string    `json:"commit"`
	At     time.Time `json:"at"`
}

// Failed is a task that failed or was blocked in the period.
type Failed struct {
	Task   string    `json:"task"`
	Title  string    `json:"title"`
	Kind   string    `json:"kind"` // failed | blocked
	Reason string    `json:"reason"`
	At     time.Time `json:"at"`
	Next   string    `json:"next"` // the command that moves it on
	// Output is the agent's last lines, Ledger the task's ledger: the
	// evidence behind a FAILED.
	Output string `json:"output,omitempty"`
	Ledger string `json:"ledger,omitempty"`
}

// Waiting is something only a person can move on, with the command that
// does it.
type Waiting struct {
	Task string `json:"task"`
	What string `json:"what"`
	Next string `json:"next"`
}

// Pause is a time autopilot or the merge queue stopped by itself.
type Pause struct {
	Scope string `json:"scope"` // autopilot | merge queue
	// Hold is why a run held: outage (several tasks failing the same way)
	// or usage-limit (the account's rate or plan window); "" for a pause.
	Hold  string    `json:"hold,omitempty"`
	Cause string    `json:"cause"`
	At    time.Time `json:"at"`
	// ResetAt is when a hold expected its cause gone (a usage window's
	// reset, ResetKnown when the CLI or API gave it); Probes the agents
	// started to test it.
	ResetAt    time.Time `json:"resetAt,omitempty"`
	ResetKnown bool      `json:"resetKnown,omitempty"`
	Probes     int       `json:"probes,omitempty"`
	// Until is when it resumed (zero: still paused at the period's end);
	// Resumed says how.
	Until   time.Time `json:"until,omitempty"`
	Resumed string    `json:"resumed,omitempty"`
}

// Conflict is a merge that conflicted, and what came of it.
type Conflict struct {
	Task        string    `json:"task"`
	Files       []string  `json:"files,omitempty"`
	At          time.Time `json:"at"`
	Outcome     string    `json:"outcome"` // resolved by an agent | waiting for a person | unresolved
	Explanation string    `json:"explanation,omitempty"`
}

// Retry is an iteration after a task's first, and why it ran.
type Retry struct {
	Task      string    `json:"task"`
	Iteration int       `json:"iteration"`
	Why       string    `json:"why"`
	At        time.Time `json:"at"`
}

// TaskCost is what one task of the period cost (over all its runs).
type TaskCost struct {
	Task       string             `json:"task"`
	Title      string             `json:"title"`
	Usage      orchestrator.Usage `json:"usage"`
	Runtime    time.Duration      `json:"runtimeNanos"` // its agents' time
	Iterations int                `json:"iterations"`
	Outcome    string             `json:"outcome,omitempty"` // the last: completed, failed, blocked, released
}

// Planning is what the Plan Agent cost in the period.
type Planning struct {
	Runs  int                `json:"runs"`
	Usage orchestrator.Usage `json:"usage"`
}

// Build reads the period from since (zero: since the last report, see
// Record) until now.
func Build(dir chorusdir.Dir, tasks []beads.Task, since time.Time) (Report, error) {
	per := period{since: since, offset: -1, from: FromSince}
	if since.IsZero() {
		var err error
		if per, err = defaultPeriod(dir); err != nil {
			return Report{}, err
		}
	}
	entries, end, byTime, err := readLogFrom(dir.SessionLog(), max(per.offset, 0))
	if err != nil {
		return Report{}, err
	}
	if per.offset < 0 {
		byTime = true
	}
	r := Report{Since: per.since, Until: time.Now().UTC(), From: per.from, LastReport: per.last, sinceOffset: per.offset, logEnd: end}
	if byTime {
		r.sinceOffset = -1
		// The log's times are whole seconds: the second of since counts.
		cut := per.since.Truncate(time.Second)
		kept := entries[:0]
		for _, e := range entries {
			if !e.TS.Before(cut) {
				kept = append(kept, e)
			}
		}
		entries = kept
	}
	title := map[string]string{}
	for _, t := range tasks {
		title[t.ID] = t.Title
	}
	n := newNight(title)
	for _, e := range entries {
		if e.Mode == "implementation" {
			n.add(e)
		}
	}
	n.finish(&r)
	if r.Since.IsZero() && len(entries) > 0 {
		r.Since = entries[0].TS
	}
	// The merge commit from the history when the log has none (a landing
	// recorded after a crash).
	hist, err := readHistory(filepath.Join(dir.Path, "merge-history.jsonl"))
	if err != nil {
		return Report{}, err
	}
	landed := map[string]int{}
	for i, l := range r.Landed {
		landed[l.Task] = i
	}
	for _, it := range hist {
		if it.LandedAt.IsZero() || it.LandedAt.Before(r.Since.Truncate(time.Second)) {
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
	st, err := orchestrator.LoadState(dir.State())
	if err != nil {
		return Report{}, err
	}
	inPeriod := map[string]Failed{}
	for _, f := range r.Failed {
		inPeriod[f.Task] = f
	}
	r.Waiting = append(waiting(dir, st, tasks, inPeriod), r.Waiting...)
	return r, nil
}

// retryCommand moves a failed or blocked task back to the ready work.
func retryCommand(id string) string {
	return fmt.Sprintf("chorus task show %s; then chorus task label remove %s failed && chorus task reopen %s", id, id, id)
}

// waiting lists what needs a person: merges the queue cannot move alone,
// questions agents wait on (while Chorus runs), tasks blocked (with the
// period's reason) and tasks that failed before the period (the period's
// failures are under Failed, with their command).
func waiting(dir chorusdir.Dir, st *orchestrator.State, tasks []beads.Task, inPeriod map[string]Failed) []Waiting {
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
		// A failed or blocked task waits for a person until someone acts,
		// however old: every one is listed.
		f, told := inPeriod[t.ID]
		switch {
		case t.HasLabel(beads.LabelFailed) && t.Status != beads.StatusClosed:
			// One that failed in the period is under Failed with its command.
			if !told || f.Kind != "failed" {
				out = append(out, Waiting{Task: t.ID, What: "task failed before this period, still failed", Next: retryCommand(t.ID)})
			}
		case t.Status == beads.StatusBlocked:
			what := "task blocked"
			if told && f.Reason != "" {
				what += ": " + f.Reason
			}
			if !told {
				what += " (before this period)"
			}
			out = append(out, Waiting{Task: t.ID, What: what,
				Next: fmt.Sprintf("chorus task show %s; once what it waits for is done, chorus task reopen %s", t.ID, t.ID)})
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
