package orchestrator

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
)

// Stage is one state a task went through: its breadcrumb in the timeline.
type Stage struct {
	State string    `json:"state"` // assigned, iteration N, checking, completed, merging, landed, failed, blocked, released, needs-human
	At    time.Time `json:"at"`
	// Seconds in this state, up to the next one (0 for the last).
	Seconds int64 `json:"seconds"`
	// Tokens the agent spent in it (iterations only: checks and merges
	// spend none).
	Tokens int64  `json:"tokens"`
	Detail string `json:"detail,omitempty"`
}

// Timeline is the states of a task, oldest first, from the session log
// (.chorus/session-log.jsonl) and, for each iteration's tokens, files
// and notes, the task's ledger. It reads files: front ends call it off
// their UI thread.
func Timeline(d chorusdir.Dir, taskID string) ([]Stage, error) {
	var stages []Stage
	add := func(state string, at time.Time, detail string) {
		if n := len(stages); n > 0 && stages[n-1].State == state {
			return // the same state again (several quality commands)
		}
		stages = append(stages, Stage{State: state, At: at, Detail: detail})
	}
	f, err := os.Open(d.SessionLog())
	if err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if f != nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64*1024), 4*1024*1024)
		for sc.Scan() {
			var e chorusdir.Entry
			if json.Unmarshal(sc.Bytes(), &e) != nil || e.Details["taskId"] != taskID {
				continue
			}
			text, _ := e.Details["text"].(string)
			switch EventKind(e.Event) {
			case EvAssigned:
				if strings.Contains(text, "resolving") {
					add("resolving", e.TS, text)
				} else {
					add("assigned", e.TS, fmt.Sprint(e.Details["agentId"]))
				}
			case EvIteration:
				n, _ := e.Details["iteration"].(float64)
				add(fmt.Sprintf("iteration %d", int(n)), e.TS, fmt.Sprint(e.Details["agentId"]))
			case EvSignal:
				if e.Details["type"] == "COMPLETE" {
					add("checking", e.TS, "")
				}
			case EvQuality:
				add("checking", e.TS, "")
			case EvMergeQueued, EvCompleted:
				// The merge service may report the branch queued before
				// the engine records the completion that queued it.
				if n := len(stages); n > 0 && stages[n-1].State == "merging" {
					if n < 2 || stages[n-2].State != "completed" {
						stages = append(stages[:n-1], Stage{State: "completed", At: stages[n-1].At}, stages[n-1])
					}
					continue
				}
				if n := len(stages); n > 1 && stages[n-1].State == "merging" && stages[n-2].State == "completed" {
					continue
				}
				add("completed", e.TS, "")
			case "merge_enqueued":
				add("merging", e.TS, "")
			case "merge_landed":
				add("landed", e.TS, text)
			case EvFailed, "merge_failed":
				add("failed", e.TS, text)
			case EvBlocked:
				add("blocked", e.TS, text)
			case EvReleased:
				add("released", e.TS, text)
			case EvNeedsHuman:
				add("needs-human", e.TS, text)
			}
		}
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	for i := range stages {
		if i+1 < len(stages) {
			stages[i].Seconds = int64(stages[i+1].At.Sub(stages[i].At).Seconds())
		}
	}
	its, err := ReadLedger(LedgerPath(d.Path, taskID))
	if err != nil {
		return stages, err
	}
	// The ledger's tokens are the task's running total at each
	// iteration's end; an iteration spent the difference. Ledger sections
	// and iteration stages match in order: a number comes again when an
	// iteration was given back (a stop, a crash of Chorus).
	var prev int64
	k := 0
	for i := range stages {
		if !strings.HasPrefix(stages[i].State, "iteration ") || k >= len(its) {
			continue
		}
		it := its[k]
		k++
		if !it.End.IsZero() {
			stages[i].Tokens = max(0, it.Tokens-prev)
			prev = it.Tokens
		}
		var parts []string
		if len(it.Files) > 0 {
			parts = append(parts, "files: "+strings.Join(it.Files, ", "))
		}
		for _, n := range it.Notes {
			parts = append(parts, "note: "+n)
		}
		if d := strings.Join(parts, "; "); d != "" {
			stages[i].Detail = strings.TrimSpace(stages[i].Detail + " · " + d)
		}
	}
	return stages, nil
}

// Timeline is the engine's view of a task's states, for front ends.
func (e *Engine) Timeline(taskID string) ([]Stage, error) {
	return Timeline(e.opt.Dir, taskID)
}
