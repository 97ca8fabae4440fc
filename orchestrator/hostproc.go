package orchestrator

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
)

// hostedProc is an agent in an agent host as the supervisor drives it:
// one agent across the connections to its host. A connection that breaks
// while the host lives (a dropped exec stream to a pod) is replaced by a
// new one and the agent carries on; only the agent's exit, or its host
// gone, ends it.
type hostedProc struct {
	c        atomic.Pointer[host.Client]
	stopping atomic.Bool
	done     chan struct{}
	once     sync.Once
	code     int
	err      error
	lost     string // why the host was lost, when it was

	// A host far from the hub (remotework.go): onClient readies each
	// connection (its relayed signals), follow brings the work the host
	// pushed into the task's worktree once the agent ended.
	onClient   func(*host.Client)
	follow     func()
	followOnce sync.Once
}

func newHostedProc(cl *host.Client) *hostedProc {
	hp := &hostedProc{done: make(chan struct{})}
	hp.c.Store(cl)
	return hp
}

func (hp *hostedProc) cur() *host.Client              { return hp.c.Load() }
func (hp *hostedProc) Write(b []byte) (int, error)    { return hp.cur().Write(b) }
func (hp *hostedProc) Resize(cols, rows uint16) error { return hp.cur().Resize(cols, rows) }
func (hp *hostedProc) Output() <-chan []byte          { return hp.cur().Output() }
func (hp *hostedProc) Done() <-chan struct{}          { return hp.done }
func (hp *hostedProc) Pid() int                       { return hp.cur().Pid() }
func (hp *hostedProc) StartTime() uint64              { return hp.cur().StartTime() }
func (hp *hostedProc) Info() host.Info                { return hp.cur().Info() }
func (hp *hostedProc) finish(code int, err error, lost string) {
	hp.once.Do(func() { hp.code, hp.err, hp.lost = code, err, lost; close(hp.done) })
}

// Wait returns the agent's end once known, the work a far host pushed
// followed first.
func (hp *hostedProc) Wait() (int, error) {
	<-hp.done
	if hp.follow != nil {
		hp.followOnce.Do(hp.follow)
	}
	return hp.code, hp.err
}

func (hp *hostedProc) Type(ctx context.Context, text string, opts ptyproc.TypeOptions) error {
	return hp.cur().Type(ctx, text, opts)
}

// Stop ends the agent and returns once its end is known (the pump, which
// reconnects no more once stopping, finishes it).
func (hp *hostedProc) Stop(grace time.Duration) {
	hp.stopping.Store(true)
	hp.cur().Stop(grace)
	<-hp.done
}

// reconnectWait bounds the search for a host that still lives.
const reconnectWait = time.Minute

// hostConnEnded follows hp's current connection, which ended: after the
// agent's exit (or a stop) hp is finished; when only the connection broke
// and the host lives (its runner says so, host.Ender, or still lists it),
// a new connection takes its place and the engine's screen is rebuilt
// from the host's, so the caller reads on (true); when the host is gone
// (a pod deleted or evicted, a node lost, a host process killed) or
// cannot be reached again, hp is finished with why, and a host that may
// still live is stopped, so the task's next run is alone with its work.
func (r *agentRun) hostConnEnded(hp *hostedProc) bool {
	cl := hp.cur()
	code, err := cl.Wait()
	if err == nil || hp.stopping.Load() || r.ctx.Err() != nil {
		hp.finish(code, err, "")
		return false
	}
	in := cl.Info()
	in.Meta.AgentID, in.Meta.TaskID = r.id, r.taskID
	rn := r.hostRunner
	ctx, cancel := context.WithTimeout(r.ctx, reconnectWait)
	defer cancel()
	end := host.Ending{Gone: true, Why: "the connection to the agent host was lost"}
	if en, ok := rn.(host.Ender); ok && rn != nil {
		end = en.Ended(ctx, in)
	} else if rn != nil {
		end.Why += " and the host is no longer listed"
		if ms, lerr := rn.List(ctx); lerr == nil {
			for _, m := range ms {
				if m.AgentID == r.id {
					in.Meta, end = m, host.Ending{Why: "the connection to the agent host was lost; the host still runs"}
				}
			}
		}
	}
	if !end.Gone {
		started := time.Now()
		ncl, cerr := rn.Connect(ctx, in.Meta)
		if cerr == nil {
			if cerr = ncl.Wait4Info(ctx); cerr != nil {
				ncl.Close()
			}
		}
		if cerr == nil && !hp.stopping.Load() {
			if hp.onClient != nil {
				hp.onClient(ncl)
			}
			r.rebuildScreen(ncl)
			hp.c.Store(ncl)
			// A resize made while no connection carried it reaches the
			// agent now.
			if cols, rows := r.dims(); cols >= 2 && rows >= 2 {
				_ = ncl.Resize(uint16(cols), uint16(rows))
			}
			r.event(EvRecovered, "reconnected to the agent's host: "+end.Why,
				map[string]any{"reconnected": true, "ms": time.Since(started).Milliseconds()})
			return true
		}
		if cerr == nil {
			ncl.Close()
		}
		if r.ctx.Err() != nil {
			// The engine is stopping: its hosts wait for the next one.
			hp.finish(code, err, "")
			return false
		}
		end.Why += "; reconnecting failed: " + errText(cerr)
		sctx, scancel := context.WithTimeout(context.Background(), 30*time.Second)
		if serr := rn.Stop(sctx, in.Meta); serr != nil {
			end.Why += "; stopping it: " + serr.Error()
		} else {
			end.Why += "; stopped it to run the task again"
		}
		scancel()
	}
	hp.finish(code, err, end.Why)
	return false
}

func errText(err error) string {
	if err == nil {
		return "stopping"
	}
	return err.Error()
}

// rebuildScreen makes the agent's screen the host's, as a reconnected
// client found it: written as bytes (a front end's copy hears them too),
// the screen cleared and redrawn, the history this engine kept left as
// it is (what scrolled off while disconnected stays in the agent's log).
func (r *agentRun) rebuildScreen(cl *host.Client) {
	w, h, st := cl.Screen()
	if w < 2 || h < 2 {
		return
	}
	tmp := term.New(w, h, term.WithScrollback(0))
	_, _ = tmp.Write(st)
	var parts term.Parts
	tmp.AttachParts(&term.Tap{}, func(p term.Parts) { parts = p })()
	// Back to the main screen, cleared, then the host's screens drawn.
	_, _ = r.screen.Write(append([]byte("\x1b[?1049l\x1b[0m\x1b[H\x1b[2J"), parts.Screen...))
}
