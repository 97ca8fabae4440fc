package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// ErrNoEngine says no engine listens for the repository.
var ErrNoEngine = errors.New("no Chorus engine is running for this repository")

// Client is a front end's handle on an engine in another process. It has
// the methods of ui.Engine; each may block on the engine.
type Client struct {
	nc  net.Conn
	pid int

	wmu sync.Mutex
	w   *bufio.Writer

	mu      sync.Mutex
	snap    orchestrator.Snapshot
	hasSnap chan struct{} // closed at the first snapshot
	gotSnap bool
	subs    []chan orchestrator.Event
	pending map[uint64]chan *Msg
	nextID  uint64
	screens map[string]*term.Emulator
	// fetching: screens asked for at the start, not yet taken by Screen
	fetching map[string]fetch
	// all: every agent's screen, asked for with the hello (a TUI's);
	// allOnce waits for its answer.
	all     *fetch
	allOnce sync.Once
	err     error

	changed chan struct{}
	done    chan struct{}

	outFrames atomic.Int64 // output frames received (tests)
}

type fetch struct {
	id uint64
	ch chan *Msg
}

// Dial connects to the engine listening on path as role, and checks the
// protocol version both ways. With no engine there it returns an error
// wrapping ErrNoEngine.
func Dial(ctx context.Context, path, role string) (*Client, error) {
	var d net.Dialer
	nc, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("%w (%v)", ErrNoEngine, err)
	}
	c := &Client{nc: nc, w: bufio.NewWriterSize(nc, 64<<10), pending: map[uint64]chan *Msg{}, screens: map[string]*term.Emulator{}, fetching: map[string]fetch{},
		hasSnap: make(chan struct{}), changed: make(chan struct{}, 1), done: make(chan struct{})}
	r := bufio.NewReaderSize(quiet(nc), connBuffer)
	if err := c.handshake(r, role); err != nil {
		nc.Close()
		return nil, err
	}
	go c.read(r)
	if role == RoleTUI {
		// The first snapshot comes right after the hello: a front end
		// never sees an empty engine.
		select {
		case <-c.hasSnap:
			if c.all == nil {
				c.prefetch()
			}
		case <-c.done:
			return nil, c.Err()
		case <-ctx.Done():
			nc.Close()
			return nil, ctx.Err()
		}
	}
	return c, nil
}

func (c *Client) handshake(r *bufio.Reader, role string) error {
	if err := c.send(&Msg{T: "hello", Version: Version, Role: role}); err != nil {
		return err
	}
	if role == RoleTUI {
		// Sent before the hello's answer: the engine has the screens on
		// their way with its first snapshot. An engine that refuses the
		// hello may have closed the connection already: its answer says
		// why, not this write.
		if id, ch, err := c.start(&Msg{Op: "screens"}); err == nil {
			c.all = &fetch{id, ch}
		}
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	defer c.nc.SetReadDeadline(time.Time{})
	kind, p, err := readFrame(r, nil)
	if err != nil {
		return fmt.Errorf("the engine did not answer the handshake: %w", err)
	}
	var m Msg
	if kind != frameMsg || json.Unmarshal(p, &m) != nil || m.T != "hello" {
		return errors.New("the socket's other end is not a Chorus engine")
	}
	if m.Version != Version {
		return versionError(m.Version, Version, m.PID)
	}
	if m.Err != "" {
		return fmt.Errorf("the engine refused: %s", m.Err)
	}
	c.pid = m.PID
	return nil
}

// PID is the engine process's id.
func (c *Client) PID() int { return c.pid }

// Done is closed when the connection ends (the engine stopped, or Close).
func (c *Client) Done() <-chan struct{} { return c.done }

// Err is why the connection ended (nil while it is up; io.EOF when the
// engine closed it).
func (c *Client) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// Close ends the connection; the engine goes on.
func (c *Client) Close() error { return c.nc.Close() }

func (c *Client) send(m *Msg) error {
	b, err := appendMsg(nil, m)
	if err != nil {
		return err
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if _, err := c.w.Write(b); err != nil {
		return err
	}
	return c.w.Flush()
}

// read is the one reader: frames are handled in the order sent, so a
// screen's state is in place before its output arrives.
func (c *Client) read(r *bufio.Reader) {
	var buf []byte
	var err error
	defer func() {
		c.mu.Lock()
		if err == nil {
			err = io.EOF
		}
		c.err = err
		for id, ch := range c.pending {
			close(ch)
			delete(c.pending, id)
		}
		c.mu.Unlock()
		close(c.done)
		c.poke()
	}()
	for {
		var kind byte
		var p []byte
		kind, p, err = readFrame(r, buf)
		buf = p
		if err != nil {
			return
		}
		if cap(buf) > connBuffer {
			// An attach's screen or history: read into a buffer of its
			// own, not kept for the connection's life.
			buf = nil
		}
		if kind != frameMsg {
			if err = c.agentFrame(kind, p); err != nil {
				return
			}
			continue
		}
		m := new(Msg)
		if err = json.Unmarshal(p, m); err != nil {
			return
		}
		c.handle(m)
	}
}

func (c *Client) handle(m *Msg) {
	switch m.T {
	case "snap":
		if m.Snap == nil {
			return
		}
		c.mu.Lock()
		c.snap = *m.Snap
		// Terminals of agents gone from the engine are let go.
		var gone []string
		for id := range c.screens {
			if _, ok := m.Snap.Agents[id]; !ok {
				gone = append(gone, id)
				delete(c.screens, id)
				delete(c.fetching, id)
			}
		}
		if !c.gotSnap {
			c.gotSnap = true
			close(c.hasSnap)
		}
		c.mu.Unlock()
		for _, id := range gone {
			go c.send(&Msg{T: "unwatch", Agent: id})
		}
		c.poke()
	case "event":
		if m.Event == nil {
			return
		}
		c.mu.Lock()
		for _, ch := range c.subs {
			select {
			case ch <- *m.Event:
			default:
			}
		}
		c.mu.Unlock()
	case "resize":
		c.mu.Lock()
		emu := c.screens[m.Agent]
		c.mu.Unlock()
		if emu != nil {
			emu.Resize(m.Cols, m.Rows)
		}
	case "resp":
		c.mu.Lock()
		ch := c.pending[m.ID]
		delete(c.pending, m.ID)
		c.mu.Unlock()
		if ch != nil {
			ch <- m
		}
	}
}

// agentFrame applies a frame of one agent's terminal: its output, its
// screen (the copy is made then, before the answer to Screen is read),
// or its history, asked for when the copy's is first wanted.
func (c *Client) agentFrame(kind byte, p []byte) error {
	agent, data, err := splitAgent(p)
	if err != nil {
		return err
	}
	if kind == frameScreen {
		p, err := splitScreen(data)
		if err != nil {
			return err
		}
		emu := term.FromParts(p)
		// The history stays with the engine until someone scrolls.
		emu.OnWantHistory(func() { go c.send(&Msg{T: "history", Agent: agent}) })
		c.mu.Lock()
		c.screens[agent] = emu
		c.mu.Unlock()
		return nil
	}
	c.mu.Lock()
	emu := c.screens[agent]
	c.mu.Unlock()
	if emu == nil {
		return nil
	}
	if kind == frameHistory {
		return emu.LoadHistory(data)
	}
	c.outFrames.Add(1)
	_, _ = emu.Write(data)
	return nil
}

func (c *Client) poke() {
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

var errClosedBeforeAnswer = errors.New("the engine is gone: the connection closed before it answered")

// call sends a request and waits for its reply.
func (c *Client) call(ctx context.Context, m *Msg) (*Msg, error) {
	id, ch, err := c.start(m)
	if err != nil {
		return nil, err
	}
	return c.wait(ctx, id, ch)
}

// start sends a request; wait receives its reply.
func (c *Client) start(m *Msg) (uint64, chan *Msg, error) {
	ch := make(chan *Msg, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return 0, nil, fmt.Errorf("the engine is gone: %w", err)
	}
	c.nextID++
	m.T, m.ID = "req", c.nextID
	c.pending[m.ID] = ch
	c.mu.Unlock()
	if err := c.send(m); err != nil {
		c.mu.Lock()
		delete(c.pending, m.ID)
		c.mu.Unlock()
		return 0, nil, fmt.Errorf("the engine is gone: %w", err)
	}
	return m.ID, ch, nil
}

func (c *Client) wait(ctx context.Context, id uint64, ch chan *Msg) (*Msg, error) {
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errClosedBeforeAnswer
		}
		if r.Err != "" {
			return r, decodeError(r.Err, r.Code)
		}
		return r, nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return nil, ctx.Err()
	}
}

// prefetch asks for the screens of every agent in the first snapshot at
// once, so a TUI attaching to many agents waits one round trip for all
// of them rather than one each.
func (c *Client) prefetch() {
	c.mu.Lock()
	var ids []string
	for id := range c.snap.Agents {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		rid, ch, err := c.start(&Msg{Op: "screen", Agent: id})
		if err != nil {
			return
		}
		c.mu.Lock()
		c.fetching[id] = fetch{rid, ch}
		c.mu.Unlock()
	}
}

// awaitAll waits for the answer to the screens request sent with the
// hello, once. An engine that does not know the request answers with an
// error: every agent's screen is then asked for at once (prefetch).
func (c *Client) awaitAll() {
	if c.all == nil {
		return
	}
	c.allOnce.Do(func() {
		if _, err := c.wait(context.Background(), c.all.id, c.all.ch); err != nil && c.Err() == nil {
			c.prefetch()
		}
	})
}

func (c *Client) result(ctx context.Context, m *Msg, v any) error {
	r, err := c.call(ctx, m)
	if err != nil {
		return err
	}
	if len(r.Result) == 0 {
		return nil
	}
	return json.Unmarshal(r.Result, v)
}

// Changed fires (coalesced) when a new snapshot arrived, and once when the
// connection ends.
func (c *Client) Changed() <-chan struct{} { return c.changed }

// Snapshot is the latest snapshot the engine sent.
func (c *Client) Snapshot() orchestrator.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap
}

// Subscribe returns the engine's events from now on; a slow reader loses
// events rather than stall the connection.
func (c *Client) Subscribe() <-chan orchestrator.Event {
	ch := make(chan orchestrator.Event, 1024)
	c.mu.Lock()
	c.subs = append(c.subs, ch)
	c.mu.Unlock()
	return ch
}

// Do sends a command and returns the engine's answer.
func (c *Client) Do(ctx context.Context, cmd orchestrator.Command) error {
	_, err := c.call(ctx, &Msg{Op: "do", Cmd: &cmd})
	return err
}

// Screen returns this process's copy of an agent's terminal: the engine's
// state at the first call, kept up to date by its output (nil for an
// unknown agent).
func (c *Client) Screen(agentID string) *term.Emulator {
	c.mu.Lock()
	emu := c.screens[agentID]
	c.mu.Unlock()
	if emu != nil {
		return emu
	}
	c.awaitAll()
	c.mu.Lock()
	emu = c.screens[agentID]
	c.mu.Unlock()
	if emu != nil {
		return emu
	}
	c.mu.Lock()
	f, ok := c.fetching[agentID]
	delete(c.fetching, agentID)
	c.mu.Unlock()
	var err error
	if ok {
		_, err = c.wait(context.Background(), f.id, f.ch)
	} else {
		_, err = c.call(context.Background(), &Msg{Op: "screen", Agent: agentID})
	}
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.screens[agentID]
}

// Input returns a writer to an agent's terminal.
func (c *Client) Input(agentID string) io.Writer { return input{c, agentID} }

type input struct {
	c     *Client
	agent string
}

func (w input) Write(p []byte) (int, error) {
	if err := w.c.send(&Msg{T: "input", Agent: w.agent, Data: p}); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Resize asks the engine to resize an agent's terminal; this copy follows
// when the engine says it did, in order with the output.
func (c *Client) Resize(agentID string, cols, rows int) {
	_ = c.send(&Msg{T: "resize", Agent: agentID, Cols: cols, Rows: rows})
}

// ChangeTask has the engine change the task store (the one writer while
// it runs) and returns the task as it is afterwards.
func (c *Client) ChangeTask(ctx context.Context, op orchestrator.TaskOp) (beads.Task, error) {
	var t beads.Task
	err := c.result(ctx, &Msg{Op: "task", TaskOp: &op}, &t)
	return t, err
}

// Current asks the engine for its state now: for clients that do not
// follow its snapshots (the cli role).
func (c *Client) Current(ctx context.Context) (orchestrator.Snapshot, error) {
	var s orchestrator.Snapshot
	err := c.result(ctx, &Msg{Op: "snapshot"}, &s)
	return s, err
}

// Checkpoints lists the merge checkpoints.
func (c *Client) Checkpoints(ctx context.Context) ([]merge.Checkpoint, error) {
	var v []merge.Checkpoint
	err := c.result(ctx, &Msg{Op: "checkpoints"}, &v)
	return v, err
}

// Dependents lists the tasks that depend on taskID.
func (c *Client) Dependents(ctx context.Context, taskID string) ([]string, error) {
	var v []string
	err := c.result(ctx, &Msg{Op: "dependents", Task: taskID}, &v)
	return v, err
}

// TaskDiff returns a task's change.
func (c *Client) TaskDiff(ctx context.Context, taskID string, stat bool) (orchestrator.TaskDiff, error) {
	var v orchestrator.TaskDiff
	err := c.result(ctx, &Msg{Op: "diff", Task: taskID, Stat: stat}, &v)
	return v, err
}

// Stop asks the engine to shut down as quitting does: agents stopped,
// their work committed, their tasks back to open. With wait it returns
// once the engine has finished (its connection closed).
func (c *Client) Stop(ctx context.Context, wait bool) error {
	// An engine with nothing to wind down may be gone before its answer
	// is written: that is the stop asked for, not a failure.
	if _, err := c.call(ctx, &Msg{Op: "stop"}); err != nil && !errors.Is(err, errClosedBeforeAnswer) {
		return err
	}
	if !wait {
		return nil
	}
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
