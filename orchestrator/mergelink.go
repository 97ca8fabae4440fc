package orchestrator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/worktree"
)

// driverCommand is how git runs Chorus's merge drivers: this executable's
// hidden merge-driver command.
func driverCommand(exe string) string {
	if exe == "" {
		return ""
	}
	return shellQuote(exe) + " merge-driver"
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// persistMerge is the merge service's Persist: the queue goes into
// state.json, written before the service moves any ref. It runs on the
// loop while the loop runs, directly otherwise.
func (e *Engine) persistMerge(items []merge.Item, st merge.Stats) error {
	apply := func() error {
		active, err := e.history.split(items)
		if err != nil {
			return err
		}
		e.st.MergeQueue, e.st.MergeStats = active, st
		e.st.Stats.MergesAuto, e.st.Stats.MergesManual = st.MergesAuto, st.MergesManual
		return e.saveState()
	}
	// Checked under stMu, which Run holds while it starts: either this
	// write ends before the loop reads State, or it goes through the loop.
	e.stMu.Lock()
	if !e.running.Load() {
		defer e.stMu.Unlock()
		return apply()
	}
	e.stMu.Unlock()
	var err error
	if derr := e.do(context.Background(), func() { err = apply() }); derr != nil {
		if errors.Is(derr, errEngineStopped) {
			e.stMu.Lock()
			defer e.stMu.Unlock()
			return apply()
		}
		return derr
	}
	return err
}

// forwardMerge turns the merge service's events into engine events and
// its changes into snapshots.
func (e *Engine) forwardMerge(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case ev := <-e.merge.Events():
			text := ev.Message
			if len(ev.Files) > 0 {
				text += " [" + strings.Join(ev.Files, ", ") + "]"
			}
			kind := EventKind("merge_" + strings.ReplaceAll(string(ev.Kind), "-", "_"))
			select {
			case e.msgs <- func() {
				// Dated when the merge service saw it happen (a landing:
				// when the target took the commit), not when the loop got
				// to it.
				e.mergeRead++
				e.emit(Event{Kind: kind, Time: ev.Time, Task: ev.TaskID, Text: text, Fields: map[string]any{"commit": ev.Commit}})
				if ev.Kind == merge.EventLanded {
					e.needReady = true
					e.suggestPatterns(ev.Commit)
					e.dropLandedBranch(ev.TaskID)
				}
				e.dirty = false // the merge service persists its own changes
			}:
			case <-ctx.Done():
				return
			}
		case <-e.merge.Changed():
			select {
			case e.msgs <- func() { e.dirty = false }: // after() republishes with the new queue
			case <-ctx.Done():
				return
			}
		}
	}
}

// checkpoint records a checkpoint off the loop.
func (e *Engine) checkpoint(reason string) {
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		ref, err := e.merge.Checkpoint(context.Background(), reason)
		select {
		case e.msgs <- func() {
			if err != nil {
				e.emit(Event{Kind: EvError, Text: "checkpoint: " + err.Error()})
				return
			}
			e.st.Checkpoint = ref
			e.emit(Event{Kind: EvCheckpoint, Text: ref, Fields: map[string]any{"reason": reason}})
		}:
		case <-e.loopDone:
		}
	}()
}

// resolverPrefix starts the agent id of every conflict-resolver agent.
const resolverPrefix = "resolver-"

// resolver runs conflict-resolution agents for the merge service.
type resolver struct{ e *Engine }

// Resolve starts an agent in the prepared worktree with the resolver
// prompt and waits for RESOLVED or NEEDS_HUMAN (or its exit). The agent
// shows in the grid like any other while it works.
func (rs resolver) Resolve(ctx context.Context, req merge.ResolveRequest) (merge.ResolveResult, error) {
	e := rs.e
	name := req.Agent
	p, ok := e.cfg.Profile(name)
	if !ok {
		name = e.cfg.Agents.Default
		p = e.cfg.Agents.Available[name]
	}
	r := &agentRun{e: e, profileName: name, profile: p, taskID: req.TaskID,
		events: make(chan turnEvent, 64), answers: make(chan string, 1), restart: make(chan struct{}, 1), closed: make(chan struct{})}
	// The merge service bounds the resolver (merge.resolverTimeoutMinutes)
	// and ends ctx when a person stops it.
	r.id = resolverPrefix + worktree.Slug(req.TaskID)
	key, err := signal.NewKey()
	if err != nil {
		return merge.ResolveResult{}, err
	}
	r.key = key
	r.ctx, r.cancel = context.WithCancelCause(ctx)
	defer r.cancel(nil)
	r.size.Store(uint64(e.opt.Cols)<<32 | uint64(e.opt.Rows))
	r.screen = term.New(e.opt.Cols, e.opt.Rows, term.WithScrollback(e.cfg.Agents.Scrollback), term.WithReplies(replyWriter{r}))
	if err := e.do(ctx, func() {
		e.runs[r.id] = r
		e.st.Agents[r.id] = &AgentState{ID: r.id, Type: name, TaskID: req.TaskID, Title: "resolve merge conflict",
			Worktree: req.Worktree, Branch: req.Branch, Status: AgentRunning, StartedAt: time.Now().UTC(), Iteration: 1}
		e.emit(Event{Kind: EvAssigned, Agent: r.id, Task: req.TaskID, Text: "resolving a merge conflict"})
	}); err != nil {
		return merge.ResolveResult{}, err
	}
	defer func() {
		close(r.closed)
		_ = e.do(context.Background(), func() {
			delete(e.runs, r.id)
			delete(e.st.Agents, r.id)
			e.emit(Event{Kind: EvFinished, Agent: r.id, Task: req.TaskID, Text: "resolver"})
		})
	}()
	det := signal.NewDetector(signal.DetectorOptions{Prompts: []string{req.Prompt}})
	wt := worktree.Worktree{Dir: req.Worktree, Branch: req.Branch}
	t, err := e.opt.Store.Get(ctx, req.TaskID)
	if err != nil {
		t = beads.Task{ID: req.TaskID} // a user's branch has no task
	}
	retire, err := r.publishKey()
	if err != nil {
		return merge.ResolveResult{}, err
	}
	defer retire()
	proc, err := r.spawn(t, wt, req.Prompt, 1, 1, det, func(*State, *AgentState) {})
	if err != nil {
		return merge.ResolveResult{}, err
	}
	defer func() { r.stopProc(proc) }()
	// A `chorus signal RESOLVED` run just before exiting may still be on its
	// way through the signals directory: the exit waits exitGrace for it.
	var exitWait <-chan time.Time
	exitCode, gen, told := 0, 1, 0
	retell := "" // for a headless resolver: its next run's addition to the prompt
	for {
		select {
		case <-r.ctx.Done():
			return merge.ResolveResult{}, context.Cause(r.ctx)
		case <-exitWait:
			if retell == "" {
				return merge.ResolveResult{Explanation: fmt.Sprintf("the resolver agent exited (code %d) without answering", exitCode)}, nil
			}
			// A headless resolver said COMPLETE: it runs again, told.
			gen++
			exitWait = nil
			proc, err = r.spawn(t, wt, req.Prompt+"\n\n## Before you answer\n"+retell, 1, gen, det, func(*State, *AgentState) {})
			retell = ""
			if err != nil {
				return merge.ResolveResult{}, err
			}
		case ev := <-r.events:
			if ev.exited {
				if exitWait == nil && ev.gen == gen {
					exitCode, exitWait = ev.code, time.After(exitGrace)
				}
				continue
			}
			if ev.sig == nil {
				continue // a near miss or a turn's end: a resolver is judged by its merge
			}
			switch ev.sig.Type {
			case signal.Resolved:
				return merge.ResolveResult{Resolved: true, Explanation: ev.sig.Payload}, nil
			case signal.NeedsHuman, signal.Blocked, signal.NeedsHelp:
				return merge.ResolveResult{Explanation: ev.sig.Payload}, nil
			case signal.Complete:
				if res, done := r.resolverSaidComplete(req, proc, det, ev.sig.Payload, &told, &retell); done {
					return res, nil
				}
			}
		}
	}
}

// resolverRetells bounds how often a resolver that says COMPLETE with its
// merge unfinished is told to finish and say RESOLVED.
const resolverRetells = 2

// resolverSaidComplete handles a resolver's COMPLETE, the word of a task
// and not of a resolution. A concluded, clean merge is taken as RESOLVED
// (the merge service checks it again); otherwise the agent is told what is
// unfinished and to say RESOLVED: typed into an interactive one, in the
// next run's prompt for a headless one. done means the answer is res.
func (r *agentRun) resolverSaidComplete(req merge.ResolveRequest, p agentProc, det *signal.Detector, payload string, told *int, retell *string) (res merge.ResolveResult, done bool) {
	problem := "its merge could not be checked"
	if req.Unfinished != nil {
		problem = req.Unfinished(r.ctx)
	}
	if problem == "" {
		r.event(EvAlert, "the resolver said COMPLETE and its merge is concluded and clean: taken as RESOLVED", map[string]any{"resolverComplete": true})
		expl := strings.TrimSpace(payload)
		if expl == "" {
			expl = "the resolver said COMPLETE with a clean, concluded merge"
		}
		return merge.ResolveResult{Resolved: true, Explanation: expl}, true
	}
	if *told >= resolverRetells {
		r.event(EvAlert, "the resolver said COMPLETE again with its merge unfinished: "+problem, map[string]any{"resolverComplete": true})
		return merge.ResolveResult{Explanation: fmt.Sprintf("the resolver said COMPLETE %d times, not RESOLVED, and %s", *told+1, problem)}, true
	}
	*told++
	text := resolverRetell(problem)
	r.event(EvAlert, "the resolver said COMPLETE with its merge unfinished ("+problem+"): told to finish and say RESOLVED", map[string]any{"resolverComplete": true, "told": *told})
	if p != nil && r.interactive() {
		r.detect(func() { det.AddPrompt(text); det.Reset() })
		if err := r.typeInto(p, text); err == nil {
			return res, false
		}
		r.stopProc(p) // its exit brings the next run, told
	}
	*retell = text
	return res, false
}

// resolverRetell is what a resolver that said COMPLETE is told.
func resolverRetell(problem string) string {
	return "You are resolving a merge conflict: COMPLETE does not apply here, RESOLVED does. Still to do: " + problem +
		". Conclude the merge with git commit, run the quality commands, then run `chorus signal RESOLVED` " +
		"(or `chorus signal NEEDS_HUMAN \"why\"` if you cannot resolve it)."
}

// rollback runs a rollback level off the loop and reopens what it reverted.
func (e *Engine) rollback(ctx context.Context, c Command) error {
	if e.merge == nil {
		return errors.New("rollback needs the merge service")
	}
	var reverted []string
	var err error
	switch c.Level {
	case 1:
		return e.rollbackIteration(ctx, c.AgentID)
	case 2:
		reverted, err = e.merge.RollbackTask(ctx, c.TaskID)
	case 3:
		ids := []string{c.TaskID}
		deps, derr := e.merge.Dependents(ctx, c.TaskID)
		if derr != nil {
			return derr
		}
		reverted, err = e.merge.RollbackWithDependents(ctx, append(ids, deps...))
	case 4:
		reverted, err = e.merge.RollbackToCheckpoint(ctx, c.Text)
	default:
		return fmt.Errorf("rollback level %d is not valid; allowed: 1 (iteration), 2 (task), 3 (task and dependents), 4 (checkpoint)", c.Level)
	}
	for _, id := range reverted {
		if rerr := e.opt.Store.Reopen(ctx, id); rerr != nil && err == nil {
			err = fmt.Errorf("reopening %s: %w", id, rerr)
		}
	}
	_ = e.do(ctx, func() {
		for _, id := range reverted {
			if tr := e.st.Tasks[id]; tr != nil {
				tr.Completed, tr.Closed = false, false
			}
		}
		e.needReady = true
		e.emit(Event{Kind: EvRollback, Task: c.TaskID, Text: fmt.Sprintf("level %d: reverted %s", c.Level, strings.Join(reverted, ", "))})
	})
	return err
}

// rollbackIteration resets a running agent's worktree to where its current
// iteration started and restarts it there.
func (e *Engine) rollbackIteration(ctx context.Context, agentID string) error {
	var r *agentRun
	var base string
	if err := e.do(ctx, func() {
		r = e.runs[agentID]
		if r != nil {
			if tr := e.st.Tasks[r.taskID]; tr != nil {
				base = tr.IterationBase
			}
		}
	}); err != nil {
		return err
	}
	if r == nil {
		return fmt.Errorf("%w: %s", ErrUnknownAgent, agentID)
	}
	if base == "" {
		return errors.New("the iteration's starting commit is not known yet")
	}
	r.resetTo.Store(&base)
	select {
	case r.restart <- struct{}{}:
	default:
	}
	return nil
}

// mergeHistory keeps finished merges out of state.json: a landed and
// cleaned-up item is appended once to .chorus/merge-history.jsonl, so the
// state file — rewritten after every transition — holds only the live
// queue and does not grow with the session.
type mergeHistory struct {
	mu   sync.Mutex
	path string
	done map[string]string // task id -> merge commit already written
}

func (h *mergeHistory) final(it merge.Item) bool {
	return it.Status == merge.StatusLanded && it.Cleaned
}

// split appends newly finished items to the history file and returns the
// rest.
func (h *mergeHistory) split(items []merge.Item) ([]merge.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	var active []merge.Item
	var add []byte
	for _, it := range items {
		if !h.final(it) {
			active = append(active, it)
			continue
		}
		if h.done[it.TaskID] == it.MergeCommit {
			continue
		}
		b, err := json.Marshal(it)
		if err != nil {
			return nil, err
		}
		add = append(append(add, b...), '\n')
		h.done[it.TaskID] = it.MergeCommit
	}
	if len(add) > 0 {
		f, err := os.OpenFile(h.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			return nil, err
		}
		err = chorusdir.AppendLines(f, add)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return nil, err
		}
	}
	return active, nil
}

// load reads the history; the last record of a task wins. A damaged line
// (a crash mid-append) is skipped: the item is still in state.json then.
func (h *mergeHistory) load() ([]merge.Item, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	b, err := os.ReadFile(h.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	byTask := map[string]int{}
	var out []merge.Item
	for _, l := range bytes.Split(b, []byte("\n")) {
		var it merge.Item
		if len(bytes.TrimSpace(l)) == 0 || json.Unmarshal(l, &it) != nil {
			continue
		}
		h.done[it.TaskID] = it.MergeCommit
		if i, ok := byTask[it.TaskID]; ok {
			out[i] = it
			continue
		}
		byTask[it.TaskID] = len(out)
		out = append(out, it)
	}
	return out, nil
}
