package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/unixsock"
)

// Engine is what the server serves; *orchestrator.Engine implements it.
type Engine interface {
	Changed() <-chan struct{}
	Snapshot() orchestrator.Snapshot
	Subscribe() <-chan orchestrator.Event
	Do(ctx context.Context, c orchestrator.Command) error
	Screen(agentID string) *term.Emulator
	Input(agentID string) io.Writer
	Resize(agentID string, cols, rows int)
	Checkpoints(ctx context.Context) ([]merge.Checkpoint, error)
	Dependents(ctx context.Context, taskID string) ([]string, error)
	TaskDiff(ctx context.Context, taskID string, stat bool) (orchestrator.TaskDiff, error)
	ChangeTask(ctx context.Context, op orchestrator.TaskOp) (beads.Task, error)
}

// DefaultInterval is how long terminal output is gathered before it is
// sent: every agent's output since the last batch in one write, not one
// per PTY read. It is the TUI's frame interval: the TUI draws each batch
// as it arrives, so it wakes once per frame rather than for batches it
// could not show apart (at 20 ms, half again as many wake-ups for the
// same frames).
const DefaultInterval = 33 * time.Millisecond

// maxQueued is how much a client may fall behind before it is dropped (a
// suspended TUI must not grow the engine without bound).
const maxQueued = 64 << 20

// Server serves one engine to any number of clients.
type Server struct {
	Eng Engine
	// Stop is called on a client's stop request: it starts the engine's
	// shutdown (the quit path) and returns without waiting for it.
	Stop func()
	Log  *slog.Logger
	// Interval batches terminal output (default DefaultInterval).
	Interval time.Duration
	// OnChange, when set, runs after every engine change (the server
	// takes the engine's one Changed channel).
	OnChange func()

	mu     sync.Mutex
	conns  map[*conn]struct{}
	closed bool

	// noScreens: answer screens as an engine before it did (tests).
	noScreens bool
	// onHold is called when a connection's writer starts waiting out the
	// batching interval (tests).
	onHold func()

	snapMu  sync.Mutex
	snapGen uint64 // bumped on every engine change
	snapAt  uint64 // the generation snapJS encodes
	snapJS  []byte
	snapID  uint64 // bumped when snapJS's bytes change
}

// Serve accepts clients on ln until ctx ends or Close; it returns once the
// listener is closed.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.Interval <= 0 {
		s.Interval = DefaultInterval
	}
	if s.Log == nil {
		s.Log = slog.New(slog.DiscardHandler)
	}
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go s.fanOut(ctx)
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		go s.serve(ctx, nc.(*net.UnixConn))
	}
}

// Close drops every client (they see the engine end).
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true
	cs := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		cs = append(cs, c)
	}
	s.mu.Unlock()
	for _, c := range cs {
		c.close()
	}
}

// fanOut hands every engine change and event to the clients: the engine
// has one Changed channel and the server one subscription.
func (s *Server) fanOut(ctx context.Context) {
	events := s.Eng.Subscribe()
	for {
		select {
		case <-ctx.Done():
			return
		case <-s.Eng.Changed():
			s.snapMu.Lock()
			s.snapGen++
			s.snapMu.Unlock()
			s.each(func(c *conn) {
				if c.role == RoleTUI {
					c.snapDue()
				}
			})
			if s.OnChange != nil {
				s.OnChange()
			}
		case ev := <-events:
			b, err := appendMsg(nil, &Msg{T: "event", Event: &ev})
			if err != nil {
				s.Log.Warn("an event could not be encoded", "kind", ev.Kind, "err", err)
				continue
			}
			s.each(func(c *conn) {
				if c.role == RoleTUI || c.role == RoleEvents {
					c.send(b)
				}
			})
		}
	}
}

func (s *Server) each(fn func(*conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		fn(c)
	}
}

// snapshot is the latest snapshot framed, encoded once per change for all
// clients, and an id that changes only with its bytes: an engine change
// that left the snapshot as it was (an agent's resize, a read) is not
// sent again, where a TUI would draw its whole screen for it.
func (s *Server) snapshot() ([]byte, uint64) {
	s.snapMu.Lock()
	defer s.snapMu.Unlock()
	if s.snapJS == nil || s.snapAt != s.snapGen {
		snap := s.Eng.Snapshot()
		b, err := appendMsg(nil, &Msg{T: "snap", Snap: &snap})
		if err != nil {
			s.Log.Error("the snapshot could not be encoded", "err", err)
			return nil, 0
		}
		if !bytes.Equal(b, s.snapJS) {
			s.snapJS = b
			s.snapID++
		}
		s.snapAt = s.snapGen
	}
	return s.snapJS, s.snapID
}

// conn is one client. Everything it is sent goes through one ordered
// queue; a writer goroutine flushes it at most once per interval, so a
// busy agent's output reaches the client in a few large frames.
type conn struct {
	s    *Server
	nc   *net.UnixConn
	role string

	mu     sync.Mutex
	queue  []item
	open   map[string]int // agent → index of its growing output item
	size   int
	snap   bool // a snapshot is due
	urgent bool // an answer is queued: send without waiting
	closed bool
	wake   chan struct{}
	hurry  chan struct{} // a frame a client waits for is queued
	done   chan struct{}
	taps   map[string]func() // agent → detach
	inputs map[string]io.Writer
}

// item is one queued frame, or an agent's output still growing.
type item struct {
	frame []byte
	agent string
	out   []byte
}

func (s *Server) serve(ctx context.Context, nc *net.UnixConn) {
	c := &conn{s: s, nc: nc, open: map[string]int{}, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{}),
		taps: map[string]func(){}, inputs: map[string]io.Writer{}}
	defer c.close()
	r := bufio.NewReaderSize(nc, 64<<10)
	hello, err := c.handshake(r)
	if err != nil {
		s.Log.Info("client refused", "err", err)
		return
	}
	c.role = hello.Role
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
	go c.writer()
	if c.role == RoleTUI {
		c.snapDue()
	}
	var buf []byte
	for {
		var kind byte
		var p []byte
		kind, p, err = readFrame(r, buf)
		buf = p
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.Log.Info("client dropped", "err", err)
			}
			return
		}
		if kind != frameMsg {
			continue
		}
		var m Msg
		if err := json.Unmarshal(p, &m); err != nil {
			s.Log.Info("client sent a bad message", "err", err)
			return
		}
		c.handle(ctx, &m)
	}
}

// handshake reads the client's hello and answers it; a client of another
// user or another protocol version is refused with the reason.
func (c *conn) handshake(r *bufio.Reader) (*Msg, error) {
	refuse := func(err error) (*Msg, error) {
		b, _ := appendMsg(nil, &Msg{T: "hello", Version: Version, PID: os.Getpid(), Err: err.Error()})
		_, _ = c.nc.Write(b)
		return nil, err
	}
	if uid, err := unixsock.PeerUID(c.nc); err != nil {
		return refuse(fmt.Errorf("reading the peer's credentials: %w", err))
	} else if uid != os.Getuid() {
		return refuse(fmt.Errorf("this Chorus engine belongs to user %d; user %d may not attach to it", os.Getuid(), uid))
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	kind, p, err := readFrame(r, nil)
	_ = c.nc.SetReadDeadline(time.Time{})
	if err != nil {
		return nil, err
	}
	var m Msg
	if kind != frameMsg || json.Unmarshal(p, &m) != nil || m.T != "hello" {
		return refuse(errors.New("the first message was not a hello: not a Chorus client"))
	}
	if m.Version != Version {
		return refuse(versionError(Version, m.Version, os.Getpid()))
	}
	switch m.Role {
	case RoleTUI, RoleEvents, RoleStop, RoleCLI:
	default:
		return refuse(fmt.Errorf("unknown role %q", m.Role))
	}
	b, _ := appendMsg(nil, &Msg{T: "hello", Version: Version, PID: os.Getpid()})
	if _, err := c.nc.Write(b); err != nil {
		return nil, err
	}
	return &m, nil
}

// handle acts on one message. Requests that wait on the engine run on
// their own goroutines so that typing and resizes keep flowing.
func (c *conn) handle(ctx context.Context, m *Msg) {
	e := c.s.Eng
	switch m.T {
	case "input":
		w := c.inputs[m.Agent]
		if w == nil {
			w = e.Input(m.Agent)
			c.inputs[m.Agent] = w
		}
		_, _ = w.Write(m.Data)
	case "resize":
		e.Resize(m.Agent, m.Cols, m.Rows)
	case "unwatch":
		c.unwatch(m.Agent)
	case "history":
		c.history(m.Agent)
	case "req":
		switch {
		case m.Op == "screen":
			c.watch(m.ID, m.Agent, nil)
			return
		case m.Op == "screens" && !c.s.noScreens:
			c.watchAll(m.ID)
			return
		}
		go c.reply(ctx, m)
	}
}

func (c *conn) reply(ctx context.Context, m *Msg) {
	e := c.s.Eng
	resp := &Msg{T: "resp", ID: m.ID}
	var result any
	var err error
	switch m.Op {
	case "do":
		if m.Cmd == nil {
			err = errors.New("no command")
		} else {
			err = e.Do(ctx, *m.Cmd)
		}
	case "task":
		if m.TaskOp == nil {
			err = errors.New("no task operation")
		} else {
			var t beads.Task
			if t, err = e.ChangeTask(ctx, *m.TaskOp); err == nil && t.ID != "" {
				result = t
			}
		}
	case "snapshot":
		result = e.Snapshot()
	case "checkpoints":
		result, err = e.Checkpoints(ctx)
	case "dependents":
		result, err = e.Dependents(ctx, m.Task)
	case "diff":
		result, err = e.TaskDiff(ctx, m.Task, m.Stat)
	case "stop":
		if c.s.Stop == nil {
			err = errors.New("this engine cannot be stopped from a client")
		} else {
			c.s.Log.Info("stop requested by a client")
			c.s.Stop()
		}
	default:
		err = fmt.Errorf("unknown request %q (a newer chorus?)", m.Op)
	}
	if err != nil {
		resp.Err, resp.Code = err.Error(), errCode(err)
	} else if result != nil {
		resp.Result, err = json.Marshal(result)
		if err != nil {
			resp.Err = err.Error()
		}
	}
	b, err := appendMsg(nil, resp)
	if err != nil {
		c.s.Log.Error("a reply could not be encoded", "op", m.Op, "err", err)
		return
	}
	c.sendNow(b)
}

// watchAll answers a screens request: every agent's screen, as watch
// sends it, then one answer once all of them are queued. A TUI sends it
// with its hello, so the screens follow the first snapshot without a
// round trip for each agent's.
func (c *conn) watchAll(id uint64) {
	agents := c.s.Eng.Snapshot().Agents
	var left atomic.Int64
	left.Store(int64(len(agents)) + 1) // + this loop
	done := func() {
		if left.Add(-1) == 0 {
			b, _ := appendMsg(nil, &Msg{T: "resp", ID: id})
			c.sendNow(b)
		}
	}
	for agent := range agents {
		c.watch(0, agent, done)
	}
	done()
}

// watch answers a screen request with the agent's emulator state and
// then streams its output. The reply is queued before the tap exists, so
// it reaches the client before any output it does not contain. With id
// 0 (part of a screens request) no answer follows the screen; then, if
// set, runs once the screen is queued or the agent is found gone.
func (c *conn) watch(id uint64, agent string, then func()) {
	c.unwatch(agent)
	emu := c.s.Eng.Screen(agent)
	if emu == nil {
		if id != 0 {
			b, _ := appendMsg(nil, &Msg{T: "resp", ID: id, Agent: agent, Err: "no such agent"})
			c.send(b)
		}
		if then != nil {
			then()
		}
		return
	}
	tap := &term.Tap{
		Output: func(p []byte) { c.output(agent, p) },
		Resize: func(w, h int) {
			b, _ := appendMsg(nil, &Msg{T: "resize", Agent: agent, Cols: w, Rows: h})
			c.mu.Lock()
			delete(c.open, agent) // later output goes after the resize
			c.mu.Unlock()
			c.send(b)
		},
	}
	detach := emu.AttachPartsAtRest(tap, func(p term.Parts) {
		// The screen, then the answer: the copy exists when Screen
		// returns. The history waits until the client asks for it.
		b := appendScreen(nil, agent, p)
		if id != 0 {
			b, _ = appendMsg(b, &Msg{T: "resp", ID: id, Agent: agent, Cols: p.W, Rows: p.H})
		}
		c.sendNow(b)
		if then != nil {
			then()
		}
	})
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		detach()
		return
	}
	c.taps[agent] = detach
	c.mu.Unlock()
}

// history sends a watched agent's history, in order with its output.
func (c *conn) history(agent string) {
	c.mu.Lock()
	watched := c.taps[agent] != nil
	c.mu.Unlock()
	emu := c.s.Eng.Screen(agent)
	if !watched || emu == nil {
		return
	}
	emu.History(func(p []byte) {
		c.mu.Lock()
		delete(c.open, agent) // later output goes after it
		c.mu.Unlock()
		c.send(appendAgentFrame(nil, frameHistory, agent, p))
	})
}

func (c *conn) unwatch(agent string) {
	c.mu.Lock()
	detach := c.taps[agent]
	delete(c.taps, agent)
	delete(c.open, agent)
	c.mu.Unlock()
	if detach != nil {
		detach()
	}
}

// output appends an agent's bytes to its growing item (under the
// emulator's lock: quick).
func (c *conn) output(agent string, p []byte) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	if i, ok := c.open[agent]; ok {
		c.queue[i].out = append(c.queue[i].out, p...)
	} else {
		c.open[agent] = len(c.queue)
		c.queue = append(c.queue, item{agent: agent, out: append([]byte(nil), p...)})
	}
	c.size += len(p)
	over := c.size > maxQueued
	c.mu.Unlock()
	if over {
		c.s.Log.Warn("a client fell too far behind; dropping it")
		go c.close()
		return
	}
	c.poke()
}

func (c *conn) send(frame []byte) { c.queueFrame(frame, false) }

// sendNow queues a frame a client waits for: the writer sends it without
// waiting out the batching interval.
func (c *conn) sendNow(frame []byte) { c.queueFrame(frame, true) }

func (c *conn) queueFrame(frame []byte, now bool) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.queue = append(c.queue, item{frame: frame})
	c.size += len(frame)
	c.urgent = c.urgent || now
	c.mu.Unlock()
	if now {
		select {
		case c.hurry <- struct{}{}:
		default:
		}
	}
	c.poke()
}

func (c *conn) snapDue() {
	c.mu.Lock()
	c.snap = true
	c.mu.Unlock()
	c.poke()
}

func (c *conn) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// writer sends the queue, at most once per point of the interval's grid.
func (c *conn) writer() {
	defer c.close()
	// A batch of output fits; a frame larger than the buffer (an
	// attach's screens and histories) goes to the socket past it,
	// uncopied, so the connection keeps no attach-sized buffer.
	w := bufio.NewWriterSize(quiet(c.nc), connBuffer)
	timer := time.NewTimer(0)
	<-timer.C
	var last time.Time
	var buf []byte
	var sent uint64 // the snapshot id last written
	for {
		select {
		case <-c.wake:
		case <-c.done:
			return
		}
		c.mu.Lock()
		urgent := c.urgent
		c.urgent = false
		c.mu.Unlock()
		// The agents' readers take their output on a grid of Interval
		// (ptyproc's), so a batch is due at the first point of it half an
		// interval after the last: the readers wake the process then
		// anyway, where a timer an interval after the last write was one
		// more wake-up (and one more of the runtime's monitor) a frame.
		if due := onGrid(last.Add(c.s.Interval/2), c.s.Interval); !urgent && time.Now().Before(due) {
			timer.Reset(time.Until(due))
			if c.s.onHold != nil {
				c.s.onHold()
			}
			// A frame a client waits for (sendNow) ends the wait: an
			// attach's screens, queued just after a snapshot was sent,
			// waited out the interval (about 40 ms of a 20 ms attach).
			// Output does not: it waits for the grid point as before.
			select {
			case <-timer.C:
			case <-c.hurry:
				timer.Stop()
			case <-c.done:
				return
			}
		}
		// The first reader's output woke the writer; the other readers of
		// this grid point are ready to run. Yielding lets them hand over
		// theirs first (on one processor, everything runnable runs before
		// the writer again), so one write carries the whole point.
		runtime.Gosched()
		last = time.Now()
		c.mu.Lock()
		q, snap := c.queue, c.snap
		c.queue, c.snap, c.size, c.urgent = nil, false, 0, false
		clear(c.open)
		// What poked while the writer waited is in q: a stale poke
		// would only wake it for an empty flush.
		select {
		case <-c.wake:
		default:
		}
		select {
		case <-c.hurry:
		default:
		}
		c.mu.Unlock()
		for _, it := range q {
			b := it.frame
			if b == nil {
				buf = appendOut(buf[:0], it.agent, it.out)
				b = buf
			}
			if _, err := w.Write(b); err != nil {
				return
			}
		}
		if cap(buf) > connBuffer {
			buf = nil // a burst's: not kept for the connection's life
		}
		if snap {
			if b, id := c.s.snapshot(); id != sent {
				if _, err := w.Write(b); err != nil {
					return
				}
				sent = id
			}
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

// onGrid is the first point of a grid of step d at or after t.
func onGrid(t time.Time, d time.Duration) time.Time {
	if g := t.Truncate(d); !g.Equal(t) {
		return g.Add(d)
	}
	return t
}

func (c *conn) close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	taps := c.taps
	c.taps = map[string]func(){}
	c.queue = nil
	close(c.done)
	c.mu.Unlock()
	for _, d := range taps {
		d()
	}
	c.nc.Close()
}
