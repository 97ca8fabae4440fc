package report

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// night folds the period's session-log entries into the report's lists.
type night struct {
	title map[string]string

	first, last time.Time
	sessions    int
	landed      []Landed
	landedAt    map[string]int
	failed      []Failed
	failedAt    map[string]int
	pauses      []Pause
	open        map[string]int // scope → index of its open pause
	conflicts   []Conflict
	conflictAt  map[string]int // task → its latest conflict
	retries     []Retry
	released    []DeadRelease
	lastWhy     map[string]string // task → what ended its last turn
	running     map[string]bool   // tasks with an iteration under way
	costs       []TaskCost
	costAt      map[string]int
	iterations  map[string]int
	outcome     map[string]string
	planning    Planning
	uncommitted map[string]string // task → worktree whose work a WIP commit failed to save
}

func newNight(title map[string]string) *night {
	return &night{title: title, landedAt: map[string]int{}, failedAt: map[string]int{},
		open: map[string]int{}, conflictAt: map[string]int{}, lastWhy: map[string]string{}, running: map[string]bool{},
		costAt: map[string]int{}, iterations: map[string]int{}, outcome: map[string]string{}, uncommitted: map[string]string{}}
}

func str(d map[string]any, k string) string {
	s, _ := d[k].(string)
	return s
}

func num(d map[string]any, k string) (int, bool) {
	f, ok := d[k].(float64)
	return int(f), ok
}

// Merge events as the engine names them: "merge_" + the service's kind.
func mergeKind(k merge.EventKind) orchestrator.EventKind {
	return orchestrator.EventKind("merge_" + strings.ReplaceAll(string(k), "-", "_"))
}

func (n *night) add(e chorusdir.Entry) {
	if n.first.IsZero() {
		n.first = e.TS
	}
	n.last = e.TS
	d := e.Details
	task, text := str(d, "taskId"), str(d, "text")
	switch kind := orchestrator.EventKind(e.Event); kind {
	case SessionStarted:
		n.sessions++
		// Iterations under way when Chorus went away ended with it.
		for t := range n.running {
			n.lastWhy[t] = "Chorus stopped or died during the iteration (it was started again)"
		}
	case orchestrator.EvIteration:
		it, _ := num(d, "iteration")
		// An iteration a crash or a stop interrupted is given back: it runs
		// again under the same number, and that is a retry too.
		again := it <= n.iterations[task]
		if it > n.iterations[task] {
			n.iterations[task] = it
		}
		if it > 1 || again {
			why := str(d, orchestrator.FieldRetryAfter)
			if why == "" {
				why = n.lastWhy[task]
			}
			n.retries = append(n.retries, Retry{Task: task, Iteration: it, Why: orDefault(why, "not recorded"), At: e.TS})
		}
		delete(n.lastWhy, task)
		delete(n.uncommitted, task) // the next run works on in that worktree
		n.running[task] = true
	case orchestrator.EvAgentExit:
		if code, ok := num(d, "exitCode"); ok && code != 0 {
			n.lastWhy[task] = fmt.Sprintf("the agent exited with code %d", code)
		} else if n.lastWhy[task] == "" {
			n.lastWhy[task] = "the agent exited without signalling COMPLETE"
		}
	case orchestrator.EvQuality:
		if passed, _ := d["passed"].(bool); !passed {
			n.lastWhy[task] = "quality check " + str(d, "name") + " failed"
		}
	case orchestrator.EvReleased:
		// Stopped and given back (a hold parked it, a person stopped it,
		// Chorus shut down): that is why it runs again.
		if text != "" {
			n.lastWhy[task] = "it was stopped and given back: " + text
		}
	case orchestrator.EvDeadReleased:
		n.released = append(n.released, DeadRelease{Task: task, Instance: str(d, "instance"), Why: text, At: e.TS})
	case "signal_near_miss":
		if r := str(d, "reason"); r != "" && n.lastWhy[task] == "" {
			n.lastWhy[task] = "a completion tag that did not count: " + r
		}
	case "signal_rejected":
		if text != "" {
			n.lastWhy[task] = "COMPLETE refused: " + text
		}
	case orchestrator.EvAlert:
		if i, ok := n.open["autopilot"]; ok && str(d, "hold") != "" {
			// A hold renewed (a probe failed, a later reset was named, an
			// outage turned out to be the usage limit): its latest word.
			p := &n.pauses[i]
			p.Hold, p.Cause = str(d, "hold"), orDefault(str(d, "cause"), p.Cause)
			p.ResetAt, _ = time.Parse(time.RFC3339Nano, str(d, "until"))
			p.ResetKnown, _ = d["resetKnown"].(bool)
			break
		}
		if text != "" && n.lastWhy[task] == "" { // a cause said before it explains more
			n.lastWhy[task] = text
		}
	case orchestrator.EvFinished:
		delete(n.running, task)
		if plan, _ := d["plan"].(bool); plan {
			n.planning.Runs++
			if u, ok := usageOf(d["usage"]); ok {
				n.planning.Usage = add(n.planning.Usage, u)
			}
		}
	case mergeKind(merge.EventLanded):
		l := Landed{Task: task, Title: n.title[task], Commit: str(d, "commit"), At: e.TS}
		if i, ok := n.landedAt[task]; ok {
			n.landed[i] = l
		} else {
			n.landedAt[task] = len(n.landed)
			n.landed = append(n.landed, l)
		}
		if i, ok := n.conflictAt[task]; ok && n.conflicts[i].Outcome == "" {
			n.conflicts[i].Outcome = "resolved by the merge drivers"
		}
	case orchestrator.EvFailed, orchestrator.EvBlocked:
		k := map[orchestrator.EventKind]string{orchestrator.EvFailed: "failed", orchestrator.EvBlocked: "blocked"}[kind]
		f := Failed{Task: task, Title: n.title[task], Kind: k, Reason: text, At: e.TS, Next: retryCommand(task)}
		if k == "blocked" {
			f.Next = fmt.Sprintf("chorus task show %s; once what it waits for is done, chorus task reopen %s", task, task)
		}
		if last := str(d, "lastFailure"); last != "" && !strings.Contains(text, last) {
			f.Reason += "; last: " + last
		}
		f.Output, f.Ledger = str(d, "output"), str(d, "ledger")
		if i, ok := n.failedAt[task]; ok {
			n.failed[i] = f
		} else {
			n.failedAt[task] = len(n.failed)
			n.failed = append(n.failed, f)
		}
	case orchestrator.EvCompleted:
		// A task failed earlier in the period and completed later is no
		// longer a failure.
		if i, ok := n.failedAt[task]; ok {
			n.failed = append(n.failed[:i], n.failed[i+1:]...)
			delete(n.failedAt, task)
			for k, v := range n.failedAt {
				if v > i {
					n.failedAt[k] = v - 1
				}
			}
		}
	case orchestrator.EvHeld:
		// The run holds (an outage, a usage window); a renewed hold after a
		// failed probe is an alert, and the hold stays the same one.
		i, ok := n.open["autopilot"]
		if !ok {
			i = len(n.pauses)
			n.open["autopilot"] = i
			n.pauses = append(n.pauses, Pause{Scope: "autopilot", At: e.TS})
		}
		p := &n.pauses[i]
		p.Hold, p.Cause = str(d, "hold"), orDefault(str(d, "cause"), text)
		p.ResetAt, _ = time.Parse(time.RFC3339Nano, str(d, "until"))
		p.ResetKnown, _ = d["resetKnown"].(bool)
	case orchestrator.EvProbe:
		if i, ok := n.open["autopilot"]; ok {
			n.pauses[i].Probes++
		}
	case orchestrator.EvPaused, orchestrator.EvResumed, mergeKind(merge.EventPaused), mergeKind(merge.EventResumed):
		scope := "autopilot"
		if strings.HasPrefix(string(kind), "merge_") {
			scope = "merge queue"
		}
		if kind == orchestrator.EvPaused || kind == mergeKind(merge.EventPaused) {
			if _, ok := n.open[scope]; !ok {
				n.open[scope] = len(n.pauses)
				n.pauses = append(n.pauses, Pause{Scope: scope, Cause: orDefault(text, "paused by a person"), At: e.TS})
			}
		} else if i, ok := n.open[scope]; ok {
			n.pauses[i].Until, n.pauses[i].Resumed = e.TS, orDefault(text, "resumed")
			delete(n.open, scope)
		}
	case mergeKind(merge.EventConflict):
		n.conflictAt[task] = len(n.conflicts)
		n.conflicts = append(n.conflicts, Conflict{Task: task, Files: bracketed(text), At: e.TS})
	case mergeKind(merge.EventResolved):
		if i, ok := n.conflictAt[task]; ok {
			n.conflicts[i].Outcome, n.conflicts[i].Explanation = "resolved by an agent", text
		}
	case mergeKind(merge.EventWaitingHuman):
		if i, ok := n.conflictAt[task]; ok && n.conflicts[i].Outcome == "" {
			n.conflicts[i].Outcome = "waiting for a person"
		}
	case orchestrator.EvError:
		if wt := str(d, orchestrator.FieldUncommitted); wt != "" {
			n.uncommitted[task] = wt
		}
	}
	switch orchestrator.EventKind(e.Event) {
	case orchestrator.EvCompleted, orchestrator.EvFailed, orchestrator.EvBlocked, orchestrator.EvReleased:
		n.outcome[task] = strings.TrimPrefix(e.Event, "task_")
	}
	if u, ok := usageOf(d["usage"]); ok && task != "" && orchestrator.EventKind(e.Event) != orchestrator.EvFinished {
		tc := TaskCost{Task: task, Title: n.title[task], Usage: u}
		if s, ok := d["runtime"].(float64); ok {
			tc.Runtime = time.Duration(s) * time.Second
		}
		if i, ok := n.costAt[task]; ok {
			n.costs[i] = tc // the latest word: totals over every run
		} else {
			n.costAt[task] = len(n.costs)
			n.costs = append(n.costs, tc)
		}
	}
}

// bracketed reads the "[a, b]" a merge event's text ends with.
func bracketed(text string) []string {
	i := strings.LastIndex(text, " [")
	if i < 0 || !strings.HasSuffix(text, "]") {
		return nil
	}
	return strings.Split(text[i+2:len(text)-1], ", ")
}

func (n *night) finish(r *Report) {
	if !n.first.IsZero() {
		r.Wall = n.last.Sub(n.first)
	}
	r.Sessions = n.sessions
	r.Landed, r.Failed, r.Pauses, r.Retries = n.landed, n.failed, n.pauses, n.retries
	r.Released = n.released
	for i := range n.conflicts {
		if n.conflicts[i].Outcome == "" {
			n.conflicts[i].Outcome = "unresolved"
		}
	}
	r.Conflicts = n.conflicts
	for i := range n.costs {
		n.costs[i].Iterations = n.iterations[n.costs[i].Task]
		n.costs[i].Outcome = n.outcome[n.costs[i].Task]
	}
	r.Tasks = n.costs
	r.Planning = n.planning
	for _, c := range r.Tasks {
		r.Total = add(r.Total, c.Usage)
	}
	r.Total = add(r.Total, r.Planning.Usage)
	tasks := make([]string, 0, len(n.uncommitted))
	for t := range n.uncommitted {
		tasks = append(tasks, t)
	}
	sort.Strings(tasks)
	for _, task := range tasks {
		wt := n.uncommitted[task]
		r.Waiting = append(r.Waiting, Waiting{Task: task, What: "work not committed (a WIP commit failed): the changes are uncommitted files in " + wt,
			Next: fmt.Sprintf("git -C %s status; git -C %s add -A && git -C %s commit -m wip (or run chorus again: the task's next run continues there)", wt, wt, wt)})
	}
}
