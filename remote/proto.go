// Package remote carries the engine to front ends in other processes: a
// versioned protocol over a Unix socket under .chorus/, the server that
// runs beside the engine, and a client with the methods the TUI needs
// (Snapshot, Changed, Subscribe, Do, Screen, Input, Resize and the
// queries). Agent terminals travel as their screen's state in a binary
// frame, then the PTY bytes, batched per agent per short interval; the
// history, packed, only when the front end first scrolls back.
package remote

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Version is the protocol's version. A client and an engine of different
// versions refuse each other in the handshake, saying which is which.
// Bump it on any change a peer of the other version would misread.
// docs/protocol.md describes it.
//
// 2: the cli role, the task and snapshot requests, error codes.
// 3: a screen's state in binary frames, the screen (S) before the history (H).
// 4: the history only when asked for (history).
const Version = 4

// Roles a client announces in its hello.
const (
	RoleTUI    = "tui"    // snapshots, events, screens, commands
	RoleEvents = "events" // events only
	RoleStop   = "stop"   // just the stop request
	RoleCLI    = "cli"    // requests only: commands, task changes, snapshots
)

// Frame kinds: a JSON message, output of one agent's terminal, and an
// agent terminal's state in two parts (docs/protocol.md).
const (
	frameMsg     byte = 'M'
	frameOut     byte = 'O'
	frameScreen  byte = 'S'
	frameHistory byte = 'H'
)

// maxFrame bounds one frame; a bigger one means a broken peer.
const maxFrame = 256 << 20

// Msg is every JSON frame. T says what it is:
//
//	hello   both ways first: Version, Role (client), PID (engine), Err
//	req     client → engine: ID, Op (do, task, snapshot, screen,
//	        checkpoints, dependents, diff, stop) and its arguments
//	resp    engine → client: ID, Err (with Code for errors a client
//	        branches on), Result; for screen, after its S frame, Agent,
//	        Cols, Rows
//	input   client → engine: Agent, Data typed into its terminal
//	resize  client → engine: resize Agent's terminal; engine → client:
//	        Agent's terminal was resized (in order with its output)
//	unwatch client → engine: stop sending Agent's output
//	history client → engine: send Agent's history (an H frame)
//	snap    engine → client: Snap, the latest snapshot
//	event   engine → client: Event
type Msg struct {
	T       string                 `json:"t"`
	ID      uint64                 `json:"id,omitempty"`
	Op      string                 `json:"op,omitempty"`
	Version int                    `json:"version,omitempty"`
	Role    string                 `json:"role,omitempty"`
	PID     int                    `json:"pid,omitempty"`
	Err     string                 `json:"err,omitempty"`
	Code    string                 `json:"code,omitempty"`
	Cmd     *orchestrator.Command  `json:"cmd,omitempty"`
	TaskOp  *orchestrator.TaskOp   `json:"taskOp,omitempty"`
	Event   *orchestrator.Event    `json:"event,omitempty"`
	Snap    *orchestrator.Snapshot `json:"snap,omitempty"`
	Agent   string                 `json:"agent,omitempty"`
	Task    string                 `json:"task,omitempty"`
	Stat    bool                   `json:"stat,omitempty"`
	Cols    int                    `json:"cols,omitempty"`
	Rows    int                    `json:"rows,omitempty"`
	Data    []byte                 `json:"data,omitempty"`
	Result  json.RawMessage        `json:"result,omitempty"`
}

// frameHeader is kind + big-endian length.
const frameHeader = 5

func appendMsg(b []byte, m *Msg) ([]byte, error) {
	p, err := json.Marshal(m)
	if err != nil {
		return b, err
	}
	return appendFrame(b, frameMsg, p), nil
}

func appendFrame(b []byte, kind byte, payload []byte) []byte {
	b = append(b, kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(len(payload)))
	return append(b, payload...)
}

// connBuffer is a connection's buffer each way: a batch of output fits,
// and frames larger (an attach's screens and histories) are read and
// written past it, into and from buffers of their own.
const connBuffer = 32 << 10

// appendOut frames output of agent: a one-byte id length, the id, the bytes.
func appendOut(b []byte, agent string, data []byte) []byte {
	return appendAgentFrame(b, frameOut, agent, data)
}

// appendAgentFrame frames data of agent: a one-byte id length, the id,
// the data.
func appendAgentFrame(b []byte, kind byte, agent string, data []byte) []byte {
	n := 1 + len(agent) + len(data)
	b = append(b, kind, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(b[len(b)-4:], uint32(n))
	b = append(b, byte(len(agent)))
	b = append(b, agent...)
	return append(b, data...)
}

// screenHeader is a screen frame's fixed part: columns, rows and the
// history's limit as big-endian uint32s, the rows ever pushed into the
// history as a big-endian uint64.
const screenHeader = 20

// appendScreen frames the screen part of an agent terminal's state.
func appendScreen(b []byte, agent string, p term.Parts) []byte {
	var h [screenHeader]byte
	binary.BigEndian.PutUint32(h[0:], uint32(p.W))
	binary.BigEndian.PutUint32(h[4:], uint32(p.H))
	binary.BigEndian.PutUint32(h[8:], uint32(p.Scrollback))
	binary.BigEndian.PutUint64(h[12:], p.Pushed)
	return appendAgentFrame(b, frameScreen, agent, append(h[:], p.Screen...))
}

// splitScreen parses a screen frame's data (after splitAgent).
func splitScreen(d []byte) (term.Parts, error) {
	if len(d) < screenHeader {
		return term.Parts{}, errors.New("a short screen frame")
	}
	p := term.Parts{W: int(binary.BigEndian.Uint32(d)), H: int(binary.BigEndian.Uint32(d[4:])),
		Scrollback: int(binary.BigEndian.Uint32(d[8:])), Pushed: binary.BigEndian.Uint64(d[12:]), Screen: d[screenHeader:]}
	if p.W < 1 || p.H < 1 || p.W > 1<<16 || p.H > 1<<16 {
		return term.Parts{}, fmt.Errorf("a screen of %dx%d: the peer does not speak this protocol", p.W, p.H)
	}
	return p, nil
}

// readFrame reads one frame into buf (grown as needed).
func readFrame(r *bufio.Reader, buf []byte) (byte, []byte, error) {
	var h [frameHeader]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, buf, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, buf, fmt.Errorf("a frame of %d bytes: the peer does not speak this protocol", n)
	}
	if cap(buf) < int(n) {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, buf, err
	}
	switch h[0] {
	case frameMsg, frameOut, frameScreen, frameHistory:
	default:
		return 0, buf, fmt.Errorf("a frame of kind %q: the peer does not speak this protocol", h[0])
	}
	return h[0], buf, nil
}

// splitAgent parses a frame of one agent's (O, S, H).
func splitAgent(p []byte) (agent string, data []byte, err error) {
	if len(p) < 1 || len(p) < 1+int(p[0]) {
		return "", nil, errors.New("a short agent frame")
	}
	n := int(p[0])
	return string(p[1 : 1+n]), p[1+n:], nil
}

// versionError is what either side says about a peer of another version.
func versionError(engine, client, pid int) error {
	return fmt.Errorf("the running Chorus engine (pid %d) speaks protocol version %d and this chorus speaks %d: they come from different builds. "+
		"Stop the engine with the chorus that started it (`chorus stop --wait`), or end pid %d (its agents are recovered at the next start), then run chorus again",
		pid, engine, client, pid)
}
