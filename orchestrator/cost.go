package orchestrator

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/config"
)

// Usage is tokens and dollars spent, as the agents report them: headless
// runs in their structured events, interactive Claude Code in its session
// transcripts. Chorus itself never calls a model.
type Usage struct {
	Input      int64   `json:"input"` // uncached input tokens
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cacheRead"`
	CacheWrite int64   `json:"cacheWrite"`
	CostUSD    float64 `json:"costUsd"` // the CLI's figure, or an estimate from list prices where it gives none
}

// Tokens is every token the model processed, cached ones included: what
// the token caps count.
func (u Usage) Tokens() int64 { return u.Input + u.Output + u.CacheRead + u.CacheWrite }

// IsZero reports no usage at all.
func (u Usage) IsZero() bool { return u == Usage{} }

func (u Usage) add(o Usage) Usage {
	return Usage{u.Input + o.Input, u.Output + o.Output, u.CacheRead + o.CacheRead, u.CacheWrite + o.CacheWrite, u.CostUSD + o.CostUSD}
}

func (u Usage) sub(o Usage) Usage {
	return Usage{u.Input - o.Input, u.Output - o.Output, u.CacheRead - o.CacheRead, u.CacheWrite - o.CacheWrite, u.CostUSD - o.CostUSD}
}

// String is a short form for progress lines: "12.3k tokens (…), $0.0412".
// Tokens without dollars (a CLI that reports none, a model without a list
// price here) say so rather than claim $0.
func (u Usage) String() string {
	cost := fmt.Sprintf("$%.4f", u.CostUSD)
	if u.CostUSD == 0 && u.Tokens() > 0 {
		cost = "cost not reported"
	}
	return fmt.Sprintf("%s tokens (in %s, out %s, cached %s), %s",
		short(u.Tokens()), short(u.Input), short(u.Output), short(u.CacheRead+u.CacheWrite), cost)
}

// Brief is the compact form for tile titles and the task panel:
// "12.3k tok $0.04", "12.3k tok" when no dollars are known, "" for none.
func (u Usage) Brief() string {
	if u.Tokens() == 0 && u.CostUSD == 0 {
		return ""
	}
	s := short(u.Tokens()) + " tok"
	if u.CostUSD > 0 {
		s += fmt.Sprintf(" $%.2f", u.CostUSD)
	}
	return s
}

func short(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.1fM", float64(n)/1e6)
	case n >= 10_000:
		return fmt.Sprintf("%.0fk", float64(n)/1e3)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

func fromTokens(t signal.TokenUsage) Usage {
	return Usage{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, CostUSD: t.CostUSD}
}

// addUsage books what an agent spent on its agent, its task and the
// session, then enforces the budgets. Loop only.
func (e *Engine) addUsage(agentID, taskID string, d Usage) {
	if d.IsZero() {
		return
	}
	if a := e.st.Agents[agentID]; a != nil {
		a.Usage = a.Usage.add(d)
	}
	// A closed task's record is dropped when it finishes (its figures
	// went out with EvCompleted); a late reading must not bring it back.
	if tr := e.st.Tasks[taskID]; tr != nil {
		tr.Usage = tr.Usage.add(d)
	} else if taskID != "" && e.taskRunning(taskID) {
		e.st.run(taskID).Usage = d
	}
	e.st.Usage = e.st.Usage.add(d)
	e.checkBudgets()
}

// reportUsage hands a usage delta from an agent's goroutines to the loop.
// It waits for the loop rather than give up when the run ends, so the
// last figures of a finished agent still count.
func (r *agentRun) reportUsage(d Usage) {
	if d.IsZero() {
		return
	}
	id, task := r.id, r.taskID
	select {
	case r.e.msgs <- func() { r.e.addUsage(id, task, d) }:
	case <-r.e.loopDone:
	}
}

// waitMeters waits for the run's transcript readers, which end with their
// processes; the bound keeps a process that outlived its run from holding
// the run open.
func (r *agentRun) waitMeters() {
	done := make(chan struct{})
	go func() { r.meters.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
}

// usageMeter turns a process's cumulative usage figures into deltas.
type usageMeter struct {
	last Usage
}

func (m *usageMeter) delta(total Usage) Usage {
	d := total.sub(m.last)
	m.last = total
	return d
}

// recordRuntime adds a finished run's time to its task. Loop only.
func (e *Engine) recordRuntime(r *agentRun) {
	a := e.st.Agents[r.id]
	if a == nil || a.StartedAt.IsZero() {
		return
	}
	e.st.run(r.taskID).Runtime += int64(time.Since(a.StartedAt).Seconds())
}

// taskMinutes is the wall time agents have spent on a task, the running
// one included.
func (e *Engine) taskMinutes(taskID string) float64 {
	var secs float64
	if tr := e.st.Tasks[taskID]; tr != nil {
		secs = float64(tr.Runtime)
	}
	for _, a := range e.st.Agents {
		if a.TaskID == taskID && !a.StartedAt.IsZero() {
			secs += time.Since(a.StartedAt).Seconds()
		}
	}
	return secs / 60
}

// budgetCause is why a budget stops a run; it wraps errBudget.
type budgetCause struct{ reason string }

func (b budgetCause) Error() string { return b.reason }
func (b budgetCause) Unwrap() error { return errBudget }

// sessionOver returns the session cap reached, if any.
func (e *Engine) sessionOver() string {
	b := e.cfg.Budget
	u := e.st.Usage
	switch {
	case b.SessionTokens > 0 && u.Tokens() >= b.SessionTokens:
		return fmt.Sprintf("session token budget reached (%d of %d)", u.Tokens(), b.SessionTokens)
	case b.SessionDollars > 0 && u.CostUSD >= b.SessionDollars:
		return fmt.Sprintf("session cost budget reached ($%.4f of $%.2f)", u.CostUSD, b.SessionDollars)
	case b.SessionMinutes > 0 && time.Since(e.st.StartedAt) >= time.Duration(b.SessionMinutes)*time.Minute:
		return fmt.Sprintf("session time budget reached (%d minutes)", b.SessionMinutes)
	}
	return ""
}

// taskOver returns the task cap reached, if any.
func (e *Engine) taskOver(taskID string) string {
	b := e.cfg.Budget
	tr := e.st.Tasks[taskID]
	if tr == nil {
		return ""
	}
	u := tr.Usage
	switch {
	case b.TaskTokens > 0 && u.Tokens() >= b.TaskTokens:
		return fmt.Sprintf("task token budget reached (%d of %d)", u.Tokens(), b.TaskTokens)
	case b.TaskDollars > 0 && u.CostUSD >= b.TaskDollars:
		return fmt.Sprintf("task cost budget reached ($%.4f of $%.2f)", u.CostUSD, b.TaskDollars)
	case b.TaskMinutes > 0 && e.taskMinutes(taskID) >= float64(b.TaskMinutes):
		return fmt.Sprintf("task time budget reached (%d minutes)", b.TaskMinutes)
	}
	return ""
}

// checkBudgets stops the agents whose task or session went over a cap:
// their tasks end blocked with the reason. A session cap, or any cap with
// onExceeded "stop", pauses autopilot. Loop only; called after usage
// arrives and on the loop's ticker.
func (e *Engine) checkBudgets() {
	session := e.sessionOver()
	ids := make([]string, 0, len(e.runs))
	for id := range e.runs {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	stopped := false
	for _, id := range ids {
		r := e.runs[id]
		if r.ctx.Err() != nil || strings.HasPrefix(id, "resolver-") {
			continue // already ending; resolvers answer to the merge service
		}
		reason := session
		if reason == "" {
			reason = e.taskOver(r.taskID)
		}
		if reason == "" {
			continue
		}
		e.emit(Event{Kind: EvAlert, Agent: r.id, Task: r.taskID, Text: reason, Fields: map[string]any{"budget": true}})
		r.cancel(budgetCause{reason})
		stopped = true
	}
	if (session != "" || (stopped && e.cfg.Budget.OnExceeded == "stop")) && e.st.Mode == config.ModeAutopilot && !e.st.Paused {
		e.st.Paused = true
		why := session
		if why == "" {
			why = "a task reached its budget and budget.onExceeded is \"stop\""
		}
		e.emit(Event{Kind: EvPaused, Text: "autopilot stopped: " + why})
	}
}
