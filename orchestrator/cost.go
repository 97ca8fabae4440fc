package orchestrator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

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

// transcriptMeter reads an interactive Claude Code's session transcripts
// (<config dir>/projects/<cwd with every non-alphanumeric character as
// '-'>/<session>.jsonl), which record each assistant message's usage.
// Messages are counted once by id, and only those written after the
// meter started, so earlier sessions in the same worktree are not
// counted again.
type transcriptMeter struct {
	dirs    []string
	since   time.Time
	offsets map[string]int64
	seen    map[string]Usage // message id → usage counted
	watched map[string]bool  // folders under inotify watch
}

func newTranscriptMeter(configDir, cwd string, since time.Time) *transcriptMeter {
	m := &transcriptMeter{since: since, offsets: map[string]int64{}, seen: map[string]Usage{}}
	names := []string{cwd}
	if real, err := filepath.EvalSymlinks(cwd); err == nil && real != cwd {
		names = append(names, real)
	}
	for _, n := range names {
		m.dirs = append(m.dirs, filepath.Join(configDir, "projects", projectDirName(n)))
	}
	return m
}

// projectDirName is how Claude Code names a working directory's folder.
func projectDirName(cwd string) string {
	b := []byte(cwd)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			b[i] = '-'
		}
	}
	return string(b)
}

// claudeConfigDir is where an agent with environment env keeps its
// Claude Code state.
func claudeConfigDir(env []string) string {
	get := func(k string) string {
		v := os.Getenv(k)
		for _, kv := range env {
			if kk, vv, ok := strings.Cut(kv, "="); ok && kk == k {
				v = vv
			}
		}
		return v
	}
	if d := get("CLAUDE_CONFIG_DIR"); d != "" {
		return d
	}
	if h := get("HOME"); h != "" {
		return filepath.Join(h, ".claude")
	}
	return ""
}

type transcriptLine struct {
	Type      string    `json:"type"`
	Timestamp time.Time `json:"timestamp"`
	Message   *struct {
		ID    string `json:"id"`
		Model string `json:"model"`
		Usage *struct {
			Input      int64 `json:"input_tokens"`
			Output     int64 `json:"output_tokens"`
			CacheRead  int64 `json:"cache_read_input_tokens"`
			CacheWrite int64 `json:"cache_creation_input_tokens"`
		} `json:"usage"`
	} `json:"message"`
	CostUSD float64 `json:"costUSD"`
}

// read returns the usage added since the last call.
func (m *transcriptMeter) read() Usage {
	var d Usage
	for _, dir := range m.dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.jsonl"))
		// Subagents (the Task tool) write their own transcripts beside the
		// session's.
		sub, _ := filepath.Glob(filepath.Join(dir, "*", "subagents", "*.jsonl"))
		for _, f := range append(files, sub...) {
			d = d.add(m.readFile(f))
		}
	}
	return d
}

func (m *transcriptMeter) readFile(path string) Usage {
	var d Usage
	f, err := os.Open(path)
	if err != nil {
		return d
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil || st.ModTime().Before(m.since.Add(-time.Second)) || st.Size() <= m.offsets[path] {
		return d
	}
	if _, err := f.Seek(m.offsets[path], io.SeekStart); err != nil {
		return d
	}
	rd := bufio.NewReaderSize(f, 64<<10)
	off := m.offsets[path]
	for {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			break // an incomplete last line is read again next time
		}
		off += int64(len(line))
		if !bytes.Contains(line, []byte(`"usage"`)) {
			continue
		}
		var l transcriptLine
		if json.Unmarshal(line, &l) != nil || l.Type != "assistant" || l.Message == nil || l.Message.Usage == nil || l.Message.ID == "" {
			continue
		}
		if !l.Timestamp.IsZero() && l.Timestamp.Before(m.since) {
			continue
		}
		mu := l.Message.Usage
		u := Usage{Input: mu.Input, Output: mu.Output, CacheRead: mu.CacheRead, CacheWrite: mu.CacheWrite}
		u.CostUSD = l.CostUSD
		if u.CostUSD == 0 {
			u.CostUSD = estimateCost(l.Message.Model, u)
		}
		// A message with several content blocks is written once per block,
		// each line repeating its usage: count the latest once.
		prev, ok := m.seen[l.Message.ID]
		if ok && prev == u {
			continue
		}
		m.seen[l.Message.ID] = u
		d = d.add(u.sub(prev))
	}
	m.offsets[path] = off
	return d
}

// price is list price in dollars per million tokens.
type price struct{ in, out float64 }

// estimateCost prices usage for CLIs that record tokens but not dollars
// (Claude Code's transcripts), from Anthropic's list prices; cache writes
// cost 1.25× input, cache reads 0.1×. Unknown models cost 0.
func estimateCost(model string, u Usage) float64 {
	m := strings.ToLower(model)
	var p price
	switch {
	case strings.Contains(m, "opus-4-0"), strings.Contains(m, "opus-4-1"), strings.Contains(m, "opus-4-2"),
		m == "claude-opus-4", strings.Contains(m, "3-opus"):
		p = price{15, 75}
	case strings.Contains(m, "opus"):
		p = price{5, 25}
	case strings.Contains(m, "sonnet"):
		p = price{3, 15}
	case strings.Contains(m, "3-5-haiku"), strings.Contains(m, "haiku-3-5"):
		p = price{0.8, 4}
	case strings.Contains(m, "3-haiku"):
		p = price{0.25, 1.25}
	case strings.Contains(m, "haiku"):
		p = price{1, 5}
	default:
		return 0
	}
	return (float64(u.Input)*p.in + float64(u.Output)*p.out + float64(u.CacheWrite)*p.in*1.25 + float64(u.CacheRead)*p.in*0.1) / 1e6
}

// meterTranscripts follows an interactive Claude Code's transcripts while
// its process runs, and once more after it ends. It is woken by inotify
// when a transcript is written, so an idle agent costs nothing; without
// inotify it falls back to reading every few seconds.
func (r *agentRun) meterTranscripts(m *transcriptMeter, done <-chan struct{}) {
	followTranscripts(m, done, func(u Usage) {
		if !u.IsZero() {
			r.stuck.noteActivity(time.Now()) // the record moved: the agent works
		}
		r.reportUsage(u)
	})
}

func followTranscripts(m *transcriptMeter, done <-chan struct{}, report func(Usage)) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				report(m.read())
			case <-done:
				report(m.read())
				return
			}
		}
	}
	defer w.Close()
	m.watch(w)
	report(m.read())
	for {
		select {
		case ev, ok := <-w.Events:
			if !ok {
				return
			}
			if ev.Has(fsnotify.Create) {
				m.watch(w) // a transcript folder may have appeared
			}
			report(m.read())
		case _, ok := <-w.Errors:
			if !ok {
				return
			}
			m.watch(w) // events were lost; the files were not
			report(m.read())
		case <-done:
			report(m.read())
			return
		}
	}
}

// watch adds inotify watches for the transcript folders and the subagent
// folders inside them; a folder that does not exist yet (Claude Code
// makes it with the first message) is watched through its nearest
// existing parent until it does.
func (m *transcriptMeter) watch(w *fsnotify.Watcher) {
	added := true
	add := func(p string) {
		if m.watched == nil {
			m.watched = map[string]bool{}
		}
		if !m.watched[p] && w.Add(p) == nil {
			m.watched[p] = true
			added = true
		}
	}
	nearest := func(d string) string {
		p := d
		for {
			if st, err := os.Stat(p); err == nil && st.IsDir() {
				return p
			}
			parent := filepath.Dir(p)
			if parent == p {
				return p
			}
			p = parent
		}
	}
	// A folder made between a look and its watch sends no event: look
	// again until a pass adds no watch.
	for added {
		added = false
		for _, d := range m.dirs {
			p := nearest(d)
			add(p)
			if p != d {
				continue
			}
			subs, _ := filepath.Glob(filepath.Join(d, "*", "subagents"))
			sessions, _ := filepath.Glob(filepath.Join(d, "*"))
			for _, s := range append(sessions, subs...) {
				if st, err := os.Stat(s); err == nil && st.IsDir() {
					add(s)
				}
			}
		}
	}
}

// isClaudeTerminal says an agent profile runs Claude Code interactively,
// whose usage is only in its transcripts.
func isClaudeTerminal(p config.AgentProfile) bool {
	return p.Format == config.FormatTerminal && strings.HasPrefix(filepath.Base(p.Command), "claude")
}
