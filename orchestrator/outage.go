package orchestrator

import (
	"context"
	"fmt"
	"github.com/chorus-dev/chorus/agent/usage"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// Failures are judged per task, outages per run. One task's agent that
// keeps failing fails that task (the policy, policy.go); when agents of
// several different tasks fail the same way in a row (the agent CLI gone,
// the model API refusing everyone, the disk full) the cause is not theirs:
// the run holds — no agent starts, nothing is spent — names the cause, and
// probes with backoff: after each wait one agent is started, and the first
// turn that does not fail that way resumes the run. A usage limit (the
// account's rate or plan window) holds the run at its first sight, until
// the reset time the CLI gave.

// Hold is why the run starts no agents for now, in the snapshot for the
// front ends and the report.
type Hold struct {
	Kind  string    `json:"kind"`  // HoldOutage or HoldUsage
	Cause string    `json:"cause"` // what is wrong, for a person
	Since time.Time `json:"since"`
	// Until is when the next probe may start (for a usage limit: the reset
	// time the CLI gave, when it gave one).
	Until time.Time `json:"until"`
	// ResetKnown: Until is the reset time the CLI or API gave.
	ResetKnown bool   `json:"resetKnown,omitempty"`
	Probes     int    `json:"probes"`
	Key        string `json:"key"` // the failure's fingerprint
	// Tasks are those whose agents failed this way before the run held:
	// any of them FAILED by it is retried when the hold clears.
	Tasks []string `json:"tasks,omitempty"`
}

// Hold kinds.
const (
	HoldOutage = "outage"
	HoldUsage  = "usage-limit"
)

// Events of the run's holds: EvHeld when it stops starting agents (Text:
// the cause), EvProbe when it tries one, EvResumed (with Fields["hold"])
// when the cause cleared.
const (
	EvHeld  EventKind = "run_held"
	EvProbe EventKind = "run_probe"
)

// outageTasks is how many different tasks failing the same way in a row
// make an outage.
const outageTasks = 2

// Probe backoff: first wait, doubled per failed probe, capped.
var (
	holdBackoffBase = 30 * time.Second
	holdBackoffMax  = 10 * time.Minute
)

// holdBackoff is the wait before probe n+1 (n probes failed so far).
func holdBackoff(base time.Duration, n int) time.Duration {
	if base <= 0 {
		base = holdBackoffBase
	}
	d := base
	for i := 0; i < n && d < holdBackoffMax; i++ {
		d *= 2
	}
	return min(d, holdBackoffMax)
}

// streak is the run's memory of agent failures in a row: pure, owned by
// the loop.
type streak struct {
	key   string
	tasks map[string]bool
	text  string
}

// failed books one agent failure of task with fingerprint key and reports
// whether it makes an outage: outageTasks different tasks in a row failing
// with the same key. A different key starts a new streak.
func (s *streak) failed(task, key, text string) bool {
	if key == "" {
		return false
	}
	if key != s.key {
		s.key, s.tasks = key, map[string]bool{}
	}
	s.tasks[task] = true
	s.text = text
	return len(s.tasks) >= outageTasks
}

// ok books a turn that did not fail: the streak ends.
func (s *streak) ok() { s.key, s.tasks, s.text = "", nil, "" }

// knownCauses name the failures every task would share, by what the
// agent or the system says.
var knownCauses = sync.OnceValue(func() []struct {
	re    *regexp.Regexp
	cause string
} {
	return []struct {
		re    *regexp.Regexp
		cause string
	}{
		{regexp.MustCompile(`(?i)not found on PATH|is not an executable file|executable file not found`), "the agent command is missing"},
		{regexp.MustCompile(`(?i)no space left on device|ENOSPC|disk quota exceeded`), "the disk is full"},
		{regexp.MustCompile(`(?i)not logged in|invalid api key|unauthori[sz]ed|authentication|\b401\b|\b403\b|permission_error|credit balance`), "the model API refuses the account"},
		{regexp.MustCompile(`(?i)connection ?refused|unable to connect|ECONNREFUSED|ENOTFOUND|network is unreachable|could not resolve host`), "the model API cannot be reached"},
		{regexp.MustCompile(`(?i)overloaded|internal server error|bad gateway|service unavailable|\b50[0-4]\b|\b529\b`), "the model API is failing"},
	}
})

// digits blanks the parts of a failure that differ between two agents
// failing the same way.
var digits = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9a-f]{7,}|[0-9]+`) })

// failureCause fingerprints an agent failure: a known cause by name, any
// other by its text with the numbers blanked; cause is said to a person.
func failureCause(text string) (key, cause string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return "", ""
	}
	for _, k := range knownCauses() {
		if k.re.MatchString(text) {
			return k.cause, k.cause
		}
	}
	one := oneLine(text, 300)
	return digits().ReplaceAllString(strings.ToLower(one), "#"), "agents of different tasks fail the same way: " + one
}

// holdFor is the run's hold after a failure with fingerprint key: a new
// one, or the current one after a failed probe (backoff doubled).
func holdFor(cur *Hold, kind, key, cause string, now time.Time, base time.Duration) *Hold {
	if cur != nil && cur.Key == key {
		h := *cur
		h.Probes++
		h.Until, h.ResetKnown = now.Add(holdBackoff(base, h.Probes)), false
		return &h
	}
	return &Hold{Kind: kind, Cause: cause, Since: now, Until: now.Add(holdBackoff(base, 0)), Key: key}
}

// holdText says what the run waits for.
func (h *Hold) text() string {
	when := "next try " + h.Until.Local().Format("15:04:05")
	if h.ResetKnown {
		when = "resets at " + h.Until.Local().Format("15:04:05")
	}
	return fmt.Sprintf("%s (%s; no agent starts until then)", h.Cause, when)
}

// holdBase is the first wait of a hold's probes.
func (e *Engine) holdBase() time.Duration {
	if e.opt.HoldBackoff > 0 {
		return e.opt.HoldBackoff
	}
	return holdBackoffBase
}

// holding reports whether the run may start no agent now: a hold that
// has not reached its time, or whose probe runs. Loop only.
func (e *Engine) holding() bool {
	h := e.st.Hold
	return h != nil && (time.Now().Before(h.Until) || e.probe != "")
}

// setHold holds the run (or renews its hold after a failed probe) and
// wakes the scheduler when the next probe is due. Loop only.
func (e *Engine) setHold(h *Hold, task string) {
	renewed := e.st.Hold != nil
	e.st.Hold, e.probe = h, ""
	kind := EvHeld
	if renewed {
		kind = EvAlert
	}
	e.emit(Event{Kind: kind, Task: task, Text: "autopilot holds: " + h.text(),
		Fields: map[string]any{"hold": h.Kind, "cause": h.Cause, "until": h.Until, "resetKnown": h.ResetKnown, "probes": h.Probes}})
	// A timer, not a goroutine Run waits for: shutdown must not wait it out.
	time.AfterFunc(time.Until(h.Until), func() {
		select {
		case e.msgs <- func() { e.needReady = true }:
		case <-e.loopDone:
		}
	})
}

// clearHold ends the run's hold: its cause is gone. Loop only.
func (e *Engine) clearHold(why string) {
	h := e.st.Hold
	if h == nil {
		return
	}
	e.st.Hold, e.probe = nil, ""
	e.needReady = true
	e.emit(Event{Kind: EvResumed, Text: fmt.Sprintf("autopilot resumes: %s (held since %s: %s)", why, h.Since.Local().Format("15:04:05"), h.Cause),
		Fields: map[string]any{"hold": h.Kind, "cause": h.Cause, "since": h.Since, "probes": h.Probes}})
	// A task the outage failed before the run could tell it was one is
	// not to blame either: it goes back to pending, its worktree kept.
	for _, id := range h.Tasks {
		if tr := e.st.Tasks[id]; tr != nil && tr.Failed != "" {
			go func() {
				if err := e.Do(context.Background(), Command{Kind: CmdRetry, TaskID: id}); err != nil {
					e.post(func() {
						e.emit(Event{Kind: EvError, Task: id, Text: "retrying a task the outage failed: " + err.Error()})
					})
				}
			}()
		}
	}
}

// probeEnded notes that the probe's run ended without showing the cause
// gone (claim lost, stopped, could not start): the next is tried after the
// backoff. Loop only.
func (e *Engine) probeEnded(task string) {
	if e.probe != task || e.st.Hold == nil {
		return
	}
	h := e.st.Hold
	e.setHold(holdFor(h, h.Kind, h.Key, h.Cause, time.Now(), e.holdBase()), task)
}

// agentFailed judges an agent failure for the run; a non-nil hold means
// the task is not to blame and the run holds. Loop only.
func (e *Engine) agentFailed(task, failure string) *Hold {
	key, cause := failureCause(failure)
	if h := e.st.Hold; h != nil && h.Key == key {
		if e.probe == task {
			e.setHold(holdFor(h, h.Kind, key, cause, time.Now(), e.holdBase()), task)
		}
		return e.st.Hold
	}
	if !e.streak.failed(task, key, failure) {
		return nil
	}
	h := holdFor(nil, HoldOutage, key, cause, time.Now(), e.holdBase())
	for t := range e.streak.tasks {
		h.Tasks = append(h.Tasks, t)
	}
	sort.Strings(h.Tasks)
	e.setHold(h, task)
	return e.st.Hold
}

// agentWorked notes a turn that did not fail: the streak ends, and a
// hold's cause is gone. Loop only.
func (e *Engine) agentWorked(task string) {
	e.streak.ok()
	if h := e.st.Hold; h != nil {
		e.clearHold("an agent worked again (" + task + ")")
	}
}

// outageCheck asks the loop whether a failure of this run's agent is an
// outage of the run; nil: it is the task's.
func (r *agentRun) outageCheck(failure string) *Hold {
	r.e.startMu.Lock()
	defer r.e.startMu.Unlock()
	var h *Hold
	r.update(func(s *State, a *AgentState) {
		if got := r.e.agentFailed(r.taskID, failure); got != nil {
			c := *got
			h = &c
		}
	})
	return h
}

// worked tells the loop this run's agent did a turn without failing.
func (r *agentRun) worked() {
	r.update(func(s *State, a *AgentState) { r.e.agentWorked(r.taskID) })
}

// held is the run's hold cause when it keeps this run from starting its
// agent again ("" when not: no hold, or this run is the probe).
func (r *agentRun) held() string {
	var cause string
	_ = r.e.do(context.Background(), func() {
		if h := r.e.st.Hold; h != nil && r.e.probe != r.taskID {
			cause = h.Cause
		}
		r.e.dirty = false
	})
	return cause
}

// heldError is spawn's answer when the run holds: the cause.
type heldError string

func (h heldError) Error() string { return "autopilot holds: " + string(h) }

// usageKey is the fingerprint of every usage-limit hold: one account, one
// window.
const usageKey = "usage-limit"

// usageLimited holds the run for the account's usage limit: until the
// reset time the agent gave, or with backoff when it gave none; the other
// running agents are parked (their tasks back to open, their turn not
// counted). Loop only.
func (e *Engine) usageLimited(task string, f usage.Finding) {
	now := time.Now()
	h := e.st.Hold
	switch {
	case h == nil || h.Kind != HoldUsage || e.probe == task:
		var cur *Hold
		if h != nil && h.Kind == HoldUsage {
			cur = h // a probe hit the limit again
		}
		nh := holdFor(cur, HoldUsage, usageKey, "usage limit: "+f.Text, now, e.holdBase())
		if f.Reset.After(now) {
			nh.Until, nh.ResetKnown = f.Reset, true
		}
		e.setHold(nh, task)
	case f.Reset.After(h.Until):
		// Another agent names a later reset: wait for that one.
		c := *h
		c.Until, c.ResetKnown = f.Reset, true
		e.setHold(&c, task)
	}
	for _, r := range e.runs {
		if r.taskID != task {
			r.cancel(errParked)
		}
	}
}

// usageLimited tells the loop this run's agent hit the usage limit.
func (r *agentRun) usageLimited(f usage.Finding) {
	r.e.startMu.Lock()
	defer r.e.startMu.Unlock()
	r.update(func(s *State, a *AgentState) { r.e.usageLimited(r.taskID, f) })
}
