package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/worktree"
)

// agentProc is a running agent as a supervisor drives it: a process of the
// engine's own (*ptyproc.Proc) or one in an agent host (*host.Client).
type agentProc interface {
	Write(b []byte) (int, error)
	Resize(cols, rows uint16) error
	Output() <-chan []byte
	Done() <-chan struct{}
	Wait() (int, error)
	Pid() int
	StartTime() uint64
	Type(ctx context.Context, text string, opts ptyproc.TypeOptions) error
	Stop(grace time.Duration)
}

// procSlot holds the agent's current process for other goroutines.
type procSlot struct{ v atomic.Pointer[procBox] }

type procBox struct{ p agentProc }

func (s *procSlot) Load() agentProc {
	if b := s.v.Load(); b != nil {
		return b.p
	}
	return nil
}

func (s *procSlot) Store(p agentProc) { s.v.Store(&procBox{p}) }

// runner is the engine's agent host runner, or nil when agents run in the
// engine's process (agents.host off).
func (e *Engine) runner() host.Runner {
	if e.opt.Runner != nil {
		return e.opt.Runner
	}
	if !e.cfg.Agents.Host || e.opt.ChorusExe == "" {
		return nil
	}
	// Hosts belong to this instance: another instance's (a copy of the
	// repository elsewhere, a teammate's) are never listed.
	instance := e.instance
	if instance == "" {
		instance = e.opt.Dir.Path
	}
	exe, args := hostCommand(e.opt.ChorusExe)
	return &host.Local{
		Dir: filepath.Join(e.opt.Dir.Path, "hosts"), Instance: instance,
		Exe: exe, Args: args,
		Orphan: time.Duration(e.cfg.Agents.HostOrphanSeconds) * time.Second,
		LogDir: e.opt.Dir.Logs(),
	}
}

// openedHost is an agent host started and connected for an agent's next
// run, not yet running the agent.
type openedHost struct {
	cl  *host.Client
	url string    // the hub's remote, when the host works in a clone of it
	git *host.Git // that clone
}

// openHost starts a new agent host for the agent to start in sp. It runs
// no agent yet, so it is started outside the engine's start gate: the
// host's own start (a process, or a pod), and its handshake, would
// otherwise hold up every other agent's start.
func (r *agentRun) openHost(rn host.Runner, sp ptyproc.Spec, wt worktree.Worktree) (*openedHost, error) {
	url := r.e.remoteURL(rn)
	limit := 30 * time.Second
	if url != "" {
		limit = 5 * time.Minute // a pod clones the task first
	}
	ctx, cancel := context.WithTimeout(r.ctx, limit)
	defer cancel()
	oh := &openedHost{url: url}
	if url != "" {
		g, err := r.remoteGit(ctx, url, wt, sp.Env)
		if err != nil {
			return nil, err
		}
		oh.git = g
	}
	cl, err := rn.Start(ctx, host.Meta{AgentID: r.id, TaskID: r.taskID})
	if err != nil {
		return nil, err
	}
	oh.cl = cl
	return oh, nil
}

// discard ends a host that will run no agent (the run was held before its
// start).
func (oh *openedHost) discard() { oh.cl.Stop(time.Second) }

// startHosted starts the agent in the host opened for it.
func (r *agentRun) startHosted(oh *openedHost, sp ptyproc.Spec, wt worktree.Worktree) (agentProc, error) {
	limit := 30 * time.Second
	if oh.url != "" {
		limit = 5 * time.Minute // a pod clones the task first
	}
	ctx, cancel := context.WithTimeout(r.ctx, limit)
	defer cancel()
	hs := host.Spec{Argv: sp.Argv, Dir: sp.Dir, Env: append(sp.Env, signal.EnvHosted+"=1"), Unset: sp.Unset,
		Cols: sp.Cols, Rows: sp.Rows, LogPath: sp.LogPath, Scrollback: r.e.cfg.Agents.Scrollback, Git: oh.git}
	if oh.url != "" {
		if err := r.farSpec(&hs); err != nil {
			oh.cl.Stop(time.Second)
			return nil, err
		}
	}
	hp := newHostedProc(oh.cl)
	if oh.url != "" {
		// Set before the start: the agent may signal at once.
		r.relay(hp, wt)
	}
	if err := oh.cl.Start(ctx, hs); err != nil {
		oh.cl.Stop(time.Second)
		return nil, err
	}
	return hp, nil
}

// farSpec fits a spec to a host that cannot see the hub's files: the
// prompt file its argv names travels in the spec (the host writes it in
// its own directory), and BEADS_DIR, the hub's task store, is left out:
// the agent reaches the engine through its host (`chorus signal`, `note`,
// `ask`), and its own checkout's .beads, if any, is what bd finds there.
func (r *agentRun) farSpec(hs *host.Spec) error {
	env := hs.Env[:0:0]
	for _, kv := range hs.Env {
		if !strings.HasPrefix(kv, "BEADS_DIR=") {
			env = append(env, kv)
		}
	}
	hs.Env = env
	pf := r.promptFile()
	for _, a := range hs.Argv {
		if strings.Contains(a, pf) {
			b, err := os.ReadFile(pf)
			if err != nil {
				return fmt.Errorf("reading the prompt file for the agent's host: %w", err)
			}
			hs.Files = append(hs.Files, host.File{Path: pf, Data: string(b)})
			break
		}
	}
	return nil
}

// adoption is a live agent host found at start for an agent of the
// previous engine, connected and ready to carry on.
type adoption struct {
	cl   *host.Client
	meta host.Meta
}

// findHosts connects to the live hosts of this instance (Recover). A host
// of another protocol version is stopped, its agent's work left in its
// worktree, and said so.
func (e *Engine) findHosts(ctx context.Context) map[string]adoption {
	rn := e.runner()
	if rn == nil {
		return nil
	}
	ms, err := rn.List(ctx)
	if err != nil {
		e.startAlerts = append(e.startAlerts, "listing agent hosts: "+err.Error())
		return nil
	}
	found := map[string]adoption{}
	for _, m := range ms {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		cl, err := rn.Connect(cctx, m)
		if err == nil {
			err = cl.Wait4Info(cctx)
		}
		cancel()
		var ev host.ErrVersion
		if err != nil {
			if errors.As(err, &ev) {
				e.startAlerts = append(e.startAlerts, fmt.Sprintf("agent %s: %v; stopping it, its work stays in its worktree", m.AgentID, err))
			} else {
				e.startAlerts = append(e.startAlerts, fmt.Sprintf("agent %s: its host did not answer (%v); stopping it", m.AgentID, err))
			}
			sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
			_ = rn.Stop(sctx, m)
			cancel()
			continue
		}
		found[m.AgentID] = adoption{cl: cl, meta: m}
	}
	return found
}

// envValue is the value of key in env ("" when absent; the last wins).
func envValue(env []string, key string) string {
	v := ""
	for _, kv := range env {
		if k, val, ok := strings.Cut(kv, "="); ok && k == key {
			v = val
		}
	}
	return v
}

// adoptedKey is the signal key the adopted agent was started with.
func adoptedKey(cl *host.Client) string { return envValue(cl.Info().Spec.Env, signal.EnvKey) }

// adopt carries on with the previous engine's agent in its host: the same
// process, iteration it, read from here on like a process just started.
func (r *agentRun) adopt(t beads.Task, wt worktree.Worktree, it, gen int, det *signal.Detector) agentProc {
	cl := r.adopted
	r.adopted = nil
	hp := newHostedProc(cl)
	if cl.Info().Spec.Git != nil {
		r.relay(hp, wt)
	}
	r.proc.Store(hp)
	pid, pstart := cl.Pid(), cl.StartTime()
	r.update(func(s *State, a *AgentState) {
		a.Title, a.Worktree, a.Branch, a.Type = t.Title, wt.Dir, wt.Branch, r.profileName
		a.PID, a.PStart, a.Status, a.Iteration = pid, pstart, AgentRunning, it
		if tr := s.run(r.taskID); tr != nil {
			tr.Iterations, tr.Open = it, true
		}
		r.e.started(r.taskID)
		r.e.emit(Event{Kind: EvRecovered, Agent: r.id, Task: r.taskID, Text: "re-adopted the live agent from its host",
			Fields: map[string]any{"pid": pid, "iteration": it}})
	})
	r.follow(hp, wt, it, gen, det, cl.Info().Started)
	if s := r.adoptedSig; s != nil {
		r.adoptedSig = nil
		go r.send(turnEvent{sig: s, gen: -1, source: "signal"})
	}
	return hp
}

// adoptHosts finds the live hosts of this instance and keeps those of the
// previous engine's agents (old may be nil): their iteration is not given
// back, their task not released, their process not ended. The rest are
// stopped: nobody can judge their turn.
func (e *Engine) adoptHosts(ctx context.Context, old *State) map[string]*host.Client {
	hosts := e.findHosts(ctx)
	adopted := map[string]*host.Client{} // task → its agent's host
	if old != nil {
		for id, a := range old.Agents {
			// A pid not yet recorded (the engine died between the start
			// and its record) is the host's own.
			if h, ok := hosts[id]; ok && (a.PID == 0 || h.cl.Pid() == a.PID) {
				adopted[a.TaskID] = h.cl
				delete(hosts, id)
			}
		}
	}
	for id, h := range hosts {
		h.cl.Close()
		sctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		_ = e.runner().Stop(sctx, h.meta)
		cancel()
		e.emit(Event{Kind: EvRecovered, Agent: id, Text: "stopped an agent host the state did not know; worktree kept"})
	}
	return adopted
}
