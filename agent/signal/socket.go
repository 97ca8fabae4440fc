package signal

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/unixsock"
)

// The transport. `chorus signal` hands its envelope to the engine over a
// Unix socket, .chorus/engine/signal.sock (0600, in a 0700 folder). The
// kernel tells the engine which process is at the other end (SO_PEERCRED
// on Linux, LOCAL_PEERPID on macOS): the engine takes a signal only from
// a process in an agent's own process tree, and for that agent, whatever
// key or agent id the envelope carries. A key can be read from another
// process's environment (/proc/<pid>/environ); a place in the process
// tree cannot be forged. The engine's answer goes back on the same
// connection, so the sender learns at once that its signal was taken or
// why it was refused. There is no other way in: nothing waits for an
// engine that is not running (a new engine would refuse it anyway).

// SocketPath is where the engine of the .chorus directory chorusDir
// takes signals: engine/signal.sock inside it, or, when that path is too
// long for a Unix socket, a file named after it in a per-user folder
// under the temp dir.
func SocketPath(chorusDir string) string {
	p := filepath.Join(chorusDir, "engine", "signal.sock")
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(chorusDir))
	return filepath.Join(os.TempDir(), "chorus-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8])+"-signal.sock")
}

// maxSocketPath is below the shortest sun_path limit (104 bytes on macOS).
const maxSocketPath = 100

// sendTimeout bounds a sender's exchange with the engine, and the time
// the engine gives a connection to say what it has to say.
const sendTimeout = 30 * time.Second

// held are the signal sockets this process listens on, each with a
// channel closed once its listener is: an engine started right after
// another in the same process (planning, then implementation) waits for
// the first one's socket to go rather than take it for another engine's.
var held sync.Map // path → chan struct{}

// heldListener closes its done channel once closed.
type heldListener struct {
	net.Listener
	once sync.Once
	done chan struct{}
	path string
}

func (l *heldListener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() {
		held.CompareAndDelete(l.path, l.done)
		close(l.done)
	})
	return err
}

// Listen takes the signal socket at path: its folder made private (0700,
// ours), a socket left by an engine that died removed, one that another
// engine still serves left alone (an error).
func Listen(path string) (net.Listener, error) {
	if prev, ok := held.Load(path); ok {
		select {
		case <-prev.(chan struct{}):
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("this process still takes signals on %s", path)
		}
	}
	ln, err := unixsock.Listen(path, "an engine that takes signals")
	if err != nil {
		return nil, err
	}
	hl := &heldListener{Listener: ln, done: make(chan struct{}), path: path}
	held.Store(path, hl.done)
	return hl, nil
}

// Peer is the process that sent an envelope, as the kernel says.
type Peer struct {
	PID int
}

// Judge decides on an envelope from peer: nil takes it, an error refuses
// it with a reason the sender is shown.
type Judge func(ctx context.Context, env Envelope, peer Peer) error

// Serve takes envelopes on ln until ctx ends (then it closes ln), each
// connection on its own goroutine, so a sender that says nothing holds
// up no other (and is dropped after sendTimeout). An envelope that is
// malformed, too big or from another user is refused before judge sees
// it.
func Serve(ctx context.Context, ln net.Listener, judge Judge) {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go serveConn(ctx, c.(*net.UnixConn), judge)
	}
}

func serveConn(ctx context.Context, c *net.UnixConn, judge Judge) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(sendTimeout))
	reply := func(err error) {
		msg := "ok"
		if err != nil {
			msg = "refused: " + oneLine(err.Error())
		}
		_, _ = io.WriteString(c, msg+"\n")
	}
	pid, uid, err := peerCred(c)
	if err != nil {
		reply(fmt.Errorf("the sender's process could not be identified: %v", err))
		return
	}
	if uid != os.Getuid() {
		reply(fmt.Errorf("the sender runs as user %d, not as the engine's user", uid))
		return
	}
	line, err := bufio.NewReaderSize(io.LimitReader(c, maxEnvelope+1), 4096).ReadBytes('\n')
	if len(line) > maxEnvelope {
		reply(fmt.Errorf("more than the %d bytes a signal may have", maxEnvelope))
		return
	}
	if err != nil && !errors.Is(err, io.EOF) {
		reply(fmt.Errorf("reading the signal: %v", err))
		return
	}
	var env Envelope
	if err := json.Unmarshal(line, &env); err != nil {
		reply(fmt.Errorf("not a signal envelope: %v", err))
		return
	}
	if env.Signal.Type == "" {
		reply(errors.New("no signal type"))
		return
	}
	reply(judge(ctx, env, Peer{PID: pid}))
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// ErrRefused is wrapped by Send's error when the engine refused the
// signal; the message says why.
var ErrRefused = errors.New("signal refused")

// Send delivers a signal from an agent to the engine of the .chorus
// directory from.Dir, signed with from.Key, and waits for the engine to
// take it or refuse it (an error wrapping ErrRefused, saying why).
func Send(from Sender, s Signal) error {
	return send(from, Envelope{Signal: s})
}

// SendQuestion delivers the NEEDS_HELP of `chorus ask`: q's text is the
// payload, its id and options travel beside it (under the same MAC).
func SendQuestion(from Sender, q Question) error {
	return send(from, Envelope{Signal: Signal{Type: NeedsHelp, Payload: q.Text}, Question: &q})
}

func send(from Sender, e Envelope) error {
	if from.Dir == "" {
		return errors.New("signal: no Chorus directory")
	}
	if st, err := os.Stat(from.Dir); err != nil || !st.IsDir() {
		return fmt.Errorf("signal: Chorus directory %s not found", from.Dir)
	}
	id, err := newID()
	if err != nil {
		return err
	}
	cwd, _ := os.Getwd()
	e.ID, e.AgentID, e.TaskID, e.Time, e.PID, e.Dir = id, from.AgentID, from.TaskID, time.Now().UTC(), os.Getpid(), cwd
	if from.Key != "" {
		e.Sign(from.Key)
	}
	b, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if !from.Hosted {
		return sendOnce(from, b)
	}
	// An agent in an agent host outlives its engine: while the engine is
	// down (killed, restarting, upgraded) the signal waits for the next
	// one rather than fail the agent's turn.
	deadline := time.Now().Add(hostedWait)
	wait := 100 * time.Millisecond
	for {
		err := sendOnce(from, b)
		var unreachable *unreachableError
		if err == nil || !errors.As(err, &unreachable) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(wait)
		wait = min(2*wait, 2*time.Second)
	}
}

// hostedWait bounds how long a hosted agent's signal waits for an engine.
const hostedWait = 10 * time.Minute

// unreachableError is an engine that did not take the signal at all
// (none listening, or it died before answering).
type unreachableError struct{ err error }

func (u *unreachableError) Error() string { return u.err.Error() }
func (u *unreachableError) Unwrap() error { return u.err }

func sendOnce(from Sender, b []byte) error {
	path := SocketPath(from.Dir)
	c, err := net.DialTimeout("unix", path, sendTimeout)
	if err != nil {
		return &unreachableError{fmt.Errorf("signal: no Chorus engine takes signals at %s (is Chorus running?): %w", path, err)}
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(sendTimeout))
	if _, err := c.Write(append(b, '\n')); err != nil {
		return &unreachableError{fmt.Errorf("signal: sending to the engine: %w", err)}
	}
	ans, err := bufio.NewReader(io.LimitReader(c, 4096)).ReadString('\n')
	ans = strings.TrimSpace(ans)
	switch {
	case ans == "ok":
		return nil
	case strings.HasPrefix(ans, "refused: "):
		return fmt.Errorf("%w: %s", ErrRefused, strings.TrimPrefix(ans, "refused: "))
	case err != nil:
		return &unreachableError{fmt.Errorf("signal: no answer from the engine: %w", err)}
	}
	return fmt.Errorf("signal: unexpected answer from the engine: %q", ans)
}
