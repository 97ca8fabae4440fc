// Package host runs one agent in a process of its own, the agent host,
// which outlives the engine: it owns the agent's PTY and process group
// (through ptyproc), its output log and what rebuilds its screen and
// scrollback (the engine's checkpoints and the output since, see
// mirror), and serves them on a Unix socket with a versioned stream
// protocol. An engine that dies and starts again (or a
// newer binary speaking the same version) connects again and carries on
// with the same process; a host whose engine does not come back within
// its orphan time stops its agent, leaving the worktree as it is.
//
// Runner is how the engine starts, finds and reaches hosts; Local runs
// them as local processes.
package host

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Version is the protocol's version. The hello frame's layout never
// changes, so two sides of different versions can always tell each other
// apart, and an engine can always ask a host of another version to stop.
//
// 3: the host hands the terminal's master side to an engine on the same
// machine (fMaster), which reads and writes it itself.
const Version = 3

// Frame types. A frame is its type byte, its payload's length (4 bytes,
// big-endian) and the payload.
const (
	fHello  byte = 'H' // both ways first: hello (JSON)
	fStart  byte = 'S' // engine → host: Spec (JSON); answered by fInfo
	fInput  byte = 'I' // engine → host: bytes typed into the terminal
	fResize byte = 'R' // engine → host: size (JSON)
	fStop   byte = 'X' // engine → host: stopReq (JSON); the exit follows
	fSnap   byte = 'N' // engine → host: a screen snapshot, answered by fState
	fBye    byte = 'B' // engine → host: the exit was taken; the host may end
	// engine → host: its emulator's state at an output offset (see
	// checkpointFrame), so the host need not parse while it is connected
	fCheckpoint byte = 'C'
	fPosition   byte = 'P' // engine → host: how far its emulator has read (positionFrame)
	fInfo       byte = 'F' // host → engine: Info (JSON)
	// host → engine: the terminal's master side, passed with the frame
	// (SCM_RIGHTS); the engine reads it from the offset of the fState
	// that follows, and no fOutput comes
	fMaster byte = 'M'
	fState  byte = 'T' // host → engine: size, output offset (stateFrame) + emulator state bytes
	fOutput byte = 'O' // host → engine: terminal output
	fExit   byte = 'E' // host → engine: Exit (JSON), after the last output
	fError  byte = 'Z' // host → engine: a refusal (text)
)

// maxFrame bounds one frame's payload: a reader never allocates more.
const maxFrame = 64 << 20

type hello struct {
	Version int    `json:"version"`
	Role    string `json:"role"` // "engine" or "stop"
	Binary  string `json:"binary,omitempty"`
	// Relay: the engine cannot take the terminal's descriptor (it is
	// elsewhere): the host reads and sends the output.
	Relay bool `json:"relay,omitempty"`
}

type size struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
	// At is the output offset at which the engine's emulator took this
	// size (-1: unknown, now), Seq its number among the engine's resizes.
	At  int64  `json:"at"`
	Seq uint64 `json:"seq,omitempty"`
	// Applied: the engine set the terminal's size itself (it holds the
	// descriptor); the host only records it.
	Applied bool `json:"applied,omitempty"`
}

type stopReq struct {
	GraceMs int64 `json:"graceMs"`
}

// Exit is how the agent ended.
type Exit struct {
	Code    int     `json:"code"`
	Dropped int64   `json:"dropped,omitempty"` // output bytes the host could not keep for the engine
	HostCPU float64 `json:"hostCPU,omitempty"` // the host's own CPU seconds, for benchmarks
}

// ErrVersion says a host speaks another protocol version.
type ErrVersion struct{ Host, Engine int }

func (e ErrVersion) Error() string {
	return fmt.Sprintf("the agent host speaks protocol version %d and this chorus speaks %d: it cannot be re-adopted", e.Host, e.Engine)
}

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	var h [5]byte
	h[0] = typ
	binary.BigEndian.PutUint32(h[1:], uint32(len(payload)))
	if len(payload) < 4096 {
		// One write: small frames are the common case.
		b := make([]byte, 0, 5+len(payload))
		b = append(append(b, h[:]...), payload...)
		_, err := w.Write(b)
		return err
	}
	if _, err := w.Write(h[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

func writeJSON(w io.Writer, typ byte, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFrame(w, typ, b)
}

// readFrame reads one frame; buf is reused when large enough.
func readFrame(r io.Reader, buf []byte) (byte, []byte, error) {
	typ, n, err := readHeader(r)
	if err != nil {
		return 0, nil, err
	}
	b, err := readBody(r, n, buf)
	return typ, b, err
}

// readHeader reads a frame's type and the length of its payload.
func readHeader(r io.Reader) (byte, int64, error) {
	var h [5]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return 0, 0, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if n > maxFrame {
		return 0, 0, fmt.Errorf("agent host: frame of %d bytes is over the limit", n)
	}
	return h[0], int64(n), nil
}

// readBody reads n bytes of payload; buf is reused when large enough.
func readBody(r io.Reader, n int64, buf []byte) ([]byte, error) {
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(r, buf); err != nil {
		return nil, noEOF(err)
	}
	return buf, nil
}

// noEOF: a frame cut short is unexpected, not the stream's clean end.
func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}
