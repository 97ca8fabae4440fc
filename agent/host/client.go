package host

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

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"golang.org/x/sys/unix"
)

// Client is an engine's connection to one host. It has the methods of a
// ptyproc.Proc that the engine uses, so an agent in a host is driven like
// one in the engine's own process.
type Client struct {
	c    net.Conn
	wmu  sync.Mutex // one frame at a time
	info Info

	out    chan []byte
	recent ptyproc.Recent
	done   chan struct{}
	exit   Exit
	lost   error // the connection broke before the exit

	started chan struct{} // closed once Info arrived
	errs    chan string
	states  chan []byte

	// First is the screen as the host had it when this client connected
	// (size and the bytes that rebuild it), nil before the agent started.
	firstW, firstH int
	firstOff       int64
	first          []byte
	closeOnce      sync.Once

	tr  atomic.Pointer[tracker] // the engine's emulator, once Track ran
	cad cadence                 // its checkpoints' (set before Track)

	smu      sync.Mutex
	onSignal func(signal.Envelope) error // relayed signals (OnSignal)
	parked   []relayedSignal             // relayed before OnSignal

	// pty is the agent's terminal when the host handed it over (fMaster):
	// this process reads and writes it, as ptyproc.Start's own.
	pty atomic.Pointer[ptyproc.Proc]
	fds *fdConn
}

// Dial connects to the host listening at path and says hello. A host of
// another protocol version gives an ErrVersion.
func Dial(ctx context.Context, path, binary string) (*Client, error) {
	return dial(ctx, path, binary, false)
}

// dial is Dial; relay asks the host to keep reading the terminal itself
// and send the output.
func dial(ctx context.Context, path, binary string, relay bool) (*Client, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return nil, err
	}
	return handshake(ctx, c, path, binary, relay)
}

// Handshake says hello to a host over c, however the connection is
// carried (a Unix socket, or a pod exec's stream to one), and returns the
// engine's client on it. It takes c over, closing it on failure.
// An engine on the host's machine (c a Unix socket) takes the agent's
// terminal itself; elsewhere the host relays the output.
func Handshake(ctx context.Context, c net.Conn, path, binary string) (*Client, error) {
	return handshake(ctx, c, path, binary, false)
}

func handshake(ctx context.Context, c net.Conn, path, binary string, relay bool) (*Client, error) {
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	} else {
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	}
	uc, ok := c.(*net.UnixConn)
	relay = relay || !ok
	if err := writeJSON(c, fHello, hello{Version: Version, Role: "engine", Binary: binary, Relay: relay}); err != nil {
		c.Close()
		return nil, err
	}
	var fds *fdConn
	var r io.Reader = c
	if !relay {
		fds = &fdConn{c: uc, oob: make([]byte, unix.CmsgSpace(4*4))}
		r = fds
	}
	br := bufio.NewReaderSize(r, 64<<10)
	typ, b, err := readFrame(br, nil)
	if err != nil || typ != fHello {
		c.Close()
		return nil, fmt.Errorf("agent host at %s did not answer hello: %v", path, err)
	}
	var h hello
	if err := json.Unmarshal(b, &h); err != nil {
		c.Close()
		return nil, err
	}
	if h.Version != Version {
		c.Close()
		return nil, ErrVersion{Host: h.Version, Engine: Version}
	}
	_ = c.SetDeadline(time.Time{})
	cl := &Client{c: c, out: make(chan []byte, 256), done: make(chan struct{}),
		started: make(chan struct{}), errs: make(chan string, 4), states: make(chan []byte, 4), fds: fds, cad: defaultCadence()}
	go cl.read(br)
	return cl, nil
}

// StopHost asks the host at path, of whatever protocol version, to stop
// its agent (with its grace) and end. It returns once the host has.
func StopHost(ctx context.Context, path string) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", path)
	if err != nil {
		return err
	}
	defer c.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = c.SetDeadline(dl)
	}
	if err := writeJSON(c, fHello, hello{Version: Version, Role: "stop"}); err != nil {
		return err
	}
	if _, _, err := readFrame(c, nil); err != nil {
		return err
	}
	// The host closes the connection once its agent has ended.
	var b [1]byte
	_, _ = c.Read(b[:])
	return nil
}

// Start asks the host to start the agent and waits for it to run.
func (cl *Client) Start(ctx context.Context, sp Spec) error {
	if err := cl.send(fStart, mustJSON(sp)); err != nil {
		return err
	}
	return cl.Wait4Info(ctx)
}

// Wait4Info waits until the host has said which agent it runs.
func (cl *Client) Wait4Info(ctx context.Context) error {
	select {
	case <-cl.started:
		return nil
	case e := <-cl.errs:
		return errors.New(e)
	case <-cl.done:
		return fmt.Errorf("agent host ended: %v", cl.lost)
	case <-ctx.Done():
		return ctx.Err()
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

func (cl *Client) read(br *bufio.Reader) {
	defer close(cl.out)
	first := true
	for {
		// A fresh payload each time: output is handed on without a copy.
		typ, b, err := readFrame(br, nil)
		if err != nil {
			if p := cl.pty.Load(); p != nil {
				// The host is gone: its terminal is let go of.
				p.Release()
				<-p.Done()
			}
			cl.lost = fmt.Errorf("connection to the agent host lost: %w", err)
			cl.exit = Exit{Code: -1}
			cl.finish()
			return
		}
		switch typ {
		case fInfo:
			_ = json.Unmarshal(b, &cl.info)
		case fMaster:
			if err := cl.takeTerminal(); err != nil {
				cl.lost = err
				cl.c.Close()
			}
		case fState:
			w, h, off, st, ok := parseState(b)
			if !ok {
				continue
			}
			if first {
				first = false
				cl.firstW, cl.firstH, cl.firstOff, cl.first = w, h, off, st
				close(cl.started)
				continue
			}
			select {
			case cl.states <- b:
			default:
			}
		case fOutput:
			if cl.pty.Load() != nil {
				continue // none comes to an engine holding the terminal
			}
			cl.recent.Add(b)
			cl.out <- b
		case fExit:
			_ = json.Unmarshal(b, &cl.exit)
			if p := cl.pty.Load(); p != nil {
				// What the agent wrote last is read here first.
				p.Exited(cl.exit.Code)
				<-p.Done()
			}
			_ = cl.send(fBye, nil)
			cl.finish()
			cl.c.Close()
			return
		case fSignal:
			cl.relayed(b)
		case fError:
			select {
			case cl.errs <- string(b):
			default:
			}
		}
	}
}

// takeTerminal takes the terminal the host passed with fMaster.
func (cl *Client) takeTerminal() error {
	if cl.fds == nil {
		return errors.New("agent host: a terminal came over a connection that cannot carry it")
	}
	fd, ok := cl.fds.take()
	if !ok {
		return errors.New("agent host: the terminal's descriptor did not arrive")
	}
	in := cl.info
	p, err := ptyproc.Adopt(fd, ptyproc.Spec{LogPath: in.Spec.LogPath}, in.Pid, in.StartTime, in.Started)
	if err != nil {
		return fmt.Errorf("agent host: taking the terminal: %w", err)
	}
	cl.pty.Store(p)
	return nil
}

// fdConn reads a Unix connection keeping the descriptors that come with
// its bytes (SCM_RIGHTS), in order.
type fdConn struct {
	c   *net.UnixConn
	oob []byte
	mu  sync.Mutex
	fds []int
}

func (f *fdConn) Read(b []byte) (int, error) {
	n, oobn, _, _, err := f.c.ReadMsgUnix(b, f.oob)
	if oobn > 0 {
		if msgs, perr := unix.ParseSocketControlMessage(f.oob[:oobn]); perr == nil {
			for i := range msgs {
				if fds, err := unix.ParseUnixRights(&msgs[i]); err == nil {
					f.mu.Lock()
					f.fds = append(f.fds, fds...)
					f.mu.Unlock()
				}
			}
		}
	}
	if n < 0 {
		n = 0
	}
	if n == 0 && err == nil && len(b) > 0 {
		err = io.EOF // ReadMsgUnix says nothing of the end of a stream
	}
	return n, err
}

func (f *fdConn) take() (int, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.fds) == 0 {
		return -1, false
	}
	fd := f.fds[0]
	f.fds = f.fds[1:]
	return fd, true
}

func (cl *Client) finish() { cl.closeOnce.Do(func() { close(cl.done) }) }

func (cl *Client) send(typ byte, b []byte) error {
	cl.wmu.Lock()
	defer cl.wmu.Unlock()
	return writeFrame(cl.c, typ, b)
}

// Info is what the host said about its agent (valid once started).
func (cl *Client) Info() Info { return cl.info }

// Screen is the agent's screen as the host had it when this client
// connected: its size and the bytes that rebuild it in a fresh emulator.
func (cl *Client) Screen() (w, h int, state []byte) { return cl.firstW, cl.firstH, cl.first }

// Write types b into the agent's terminal.
func (cl *Client) Write(b []byte) (int, error) {
	select {
	case <-cl.done:
		return 0, errors.New("agent host: the agent has exited")
	default:
	}
	if p := cl.pty.Load(); p != nil {
		return p.Write(b)
	}
	if err := cl.send(fInput, b); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Resize sets the agent's terminal size (the host's emulator too).
// When the engine's emulator is tracked (Track), the host places the
// resize where that emulator took it.
func (cl *Client) Resize(cols, rows uint16) error {
	z := size{Cols: cols, Rows: rows, At: -1}
	if t := cl.tr.Load(); t != nil {
		z.At, z.Seq = t.resized(int(cols), int(rows))
	}
	if p := cl.pty.Load(); p != nil {
		// Set here; the host places it among the output for its screen.
		if err := p.Resize(cols, rows); err != nil {
			return err
		}
		z.Applied = true
	}
	return cl.send(fResize, mustJSON(z))
}

// Output delivers the agent's output from the moment of connecting; it is
// closed after the exit (or the connection's loss). Valid once the agent
// started (Start, Wait4Info).
func (cl *Client) Output() <-chan []byte {
	if p := cl.pty.Load(); p != nil {
		return p.Output()
	}
	return cl.out
}

// Done is closed once the exit arrived, after the last output.
func (cl *Client) Done() <-chan struct{} { return cl.done }

// Wait returns the exit code (-1 when the host was lost or the agent
// killed by a signal). A lost host is the error.
func (cl *Client) Wait() (int, error) {
	<-cl.done
	return cl.exit.Code, cl.lost
}

// Exit is the host's report of the exit (valid after Done).
func (cl *Client) Exit() Exit {
	<-cl.done
	return cl.exit
}

// Pid is the agent process's id (its group's too).
func (cl *Client) Pid() int { return cl.info.Pid }

// StartTime is the agent process's start time (see ptyproc.StartTimeOf).
func (cl *Client) StartTime() uint64 { return cl.info.StartTime }

// Type types text into the agent and confirms it (ptyproc.Type).
func (cl *Client) Type(ctx context.Context, text string, opts ptyproc.TypeOptions) error {
	if p := cl.pty.Load(); p != nil {
		return p.Type(ctx, text, opts)
	}
	return ptyproc.Type(ctx, cl, &cl.recent, cl.done, text, opts)
}

// Stop ends the agent (SIGTERM to its group, SIGKILL after grace) and
// returns once its exit has arrived. Before the agent has started it
// ends the host, or the agent whose start it was waiting for.
func (cl *Client) Stop(grace time.Duration) {
	select {
	case <-cl.started:
	default:
		_ = cl.send(fStop, mustJSON(stopReq{GraceMs: grace.Milliseconds()}))
		cl.c.Close()
		<-cl.done
		return
	}
	if err := cl.send(fStop, mustJSON(stopReq{GraceMs: grace.Milliseconds()})); err != nil {
		cl.c.Close()
	}
	<-cl.done
}

// Snapshot asks the host for the agent's screen now.
func (cl *Client) Snapshot(ctx context.Context) (w, h int, state []byte, err error) {
	if err := cl.send(fSnap, nil); err != nil {
		return 0, 0, nil, err
	}
	select {
	case b := <-cl.states:
		w, h, _, st, _ := parseState(b)
		return w, h, st, nil
	case <-cl.done:
		return 0, 0, nil, errors.New("agent host: the agent has exited")
	case <-ctx.Done():
		return 0, 0, nil, ctx.Err()
	}
}

// Close drops the connection without stopping the agent: the host waits
// for an engine to connect again (as when the engine dies). A terminal
// this client reads is let go of first: the host reads it once the
// connection is closed, and the two must not both read.
func (cl *Client) Close() error {
	if p := cl.pty.Load(); p != nil {
		p.Release()
		<-p.Done()
	}
	return cl.c.Close()
}

// Direct reports whether this client reads the agent's terminal itself
// (the host handed it over) rather than receiving its output from the
// host.
func (cl *Client) Direct() bool { return cl.pty.Load() != nil }
