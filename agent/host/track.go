package host

import (
	"encoding/binary"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
)

// cadence is how often the engine's emulator state goes to the host:
// once the output grew by ckBytes, or every after it changed at all
// (looked at every poll). A checkpoint costs one render of the screen and
// its history; between two the host keeps at most the raw output. A
// Client's own, so a test's faster one touches no other client.
type cadence struct {
	ckBytes int64
	every   time.Duration
	// everyDirect is every for an engine holding the terminal: the host
	// takes what came after a checkpoint from the log, so time alone
	// calls for one seldom.
	everyDirect time.Duration
	poll        time.Duration
	// posBytes of output read make the engine say where it has read to,
	// so a host whose tail overflows can parse up to there.
	posBytes int64
}

// defaultCkBytes is the default cadence's ckBytes (the host's tail cap
// is sized by it).
const defaultCkBytes = 4 << 20

func defaultCadence() cadence {
	return cadence{ckBytes: defaultCkBytes, every: 5 * time.Second, everyDirect: 30 * time.Second,
		poll: 250 * time.Millisecond, posBytes: 1 << 20}
}

// tracker follows the engine's emulator for its client: the output bytes
// written to it and its resizes, counted under the emulator's lock (a
// tap), so a checkpoint names the exact stream offset it holds.
type tracker struct {
	cl  *Client
	emu *term.Emulator
	cad cadence

	mu   sync.Mutex
	n    int64  // bytes written to emu since Track
	seq  uint64 // resizes of emu since Track
	rw   int    // the last resize: its size, offset, and whether Resize sent it
	rh   int
	rat  int64
	sent bool
	ckN  int64 // n at the last checkpoint
	posN int64 // n at the last position sent
	kick chan struct{}
}

// Track makes emu the copy of the agent's terminal the host relies on, so
// the host parses nothing while this client is connected. Call it before
// reading Output; from then on emu must be written with Output's chunks
// only, in order (its resizes are heard by a tap and placed by Resize).
// emu's state goes to the host at once and then as its output grows; the
// returned func stops that.
func (cl *Client) Track(emu *term.Emulator) (stop func()) {
	t := &tracker{cl: cl, emu: emu, cad: cl.cad, kick: make(chan struct{}, 1)}
	detach := emu.AttachParts(&term.Tap{
		Output: func(p []byte) {
			t.mu.Lock()
			t.n += int64(len(p))
			due := t.n-t.ckN >= t.cad.ckBytes
			t.mu.Unlock()
			if due {
				// A flood: the checkpoint need not wait for the poll.
				select {
				case t.kick <- struct{}{}:
				default:
				}
			}
		},
		Resize: func(w, h int) {
			t.mu.Lock()
			t.seq++
			t.rw, t.rh, t.rat, t.sent = w, h, t.n, false
			t.mu.Unlock()
		},
	}, func(term.Parts) {})
	cl.tr.Store(t)
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t.loop(quit)
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(quit)
			<-done
			cl.tr.CompareAndSwap(t, nil)
			detach()
		})
	}
}

func (t *tracker) loop(quit <-chan struct{}) {
	t.checkpoint()
	last := time.Now()
	// Each look falls on the agents' readers' grid, where the process
	// wakes anyway: a ticker of its own was one more wake-up (and one more
	// of the runtime's monitor thread) per look per agent.
	tick := time.NewTimer(time.Until(ptyproc.OnGrid(time.Now().Add(t.cad.poll))))
	defer tick.Stop()
	for {
		select {
		case <-quit:
			return
		case <-t.cl.done:
			return
		case <-tick.C:
			tick.Reset(time.Until(ptyproc.OnGrid(time.Now().Add(t.cad.poll))))
		case <-t.kick:
		}
		t.mu.Lock()
		grown, n, seq := t.n-t.ckN, t.n, t.seq
		moved := n-t.posN >= t.cad.posBytes
		if moved {
			t.posN = n
		}
		t.mu.Unlock()
		every := t.cad.every
		if t.cl.Direct() {
			every = t.cad.everyDirect
		}
		if (grown >= t.cad.ckBytes || grown > 0 && time.Since(last) >= every) && t.checkpoint() {
			last = time.Now()
		} else if moved {
			var b [16]byte
			binary.BigEndian.PutUint64(b[:], uint64(t.cl.firstOff+n))
			binary.BigEndian.PutUint64(b[8:], seq)
			_ = t.cl.send(fPosition, b[:])
		}
	}
}

// checkpoint sends emu's state with the offset and resize count it
// holds, when its input is at rest.
func (t *tracker) checkpoint() bool {
	var (
		at   int64
		seq  uint64
		p    term.Parts
		hist []byte
	)
	// The state is rendered under the emulator's lock, where the tap
	// counts too: the two agree. Amid a sequence there is none: the
	// next poll tries again.
	if !t.emu.Checkpoint(func(p0 term.Parts, h []byte) {
		t.mu.Lock()
		at, seq = t.n, t.seq
		t.ckN, t.posN = t.n, t.n
		t.mu.Unlock()
		p, hist = p0, h
	}) {
		return false
	}
	_ = t.cl.send(fCheckpoint, checkpointFrame(t.cl.firstOff+at, seq, p, hist))
	return true
}

// resized is where the engine's emulator took the size cols×rows: its
// stream offset and resize number (-1 when it did not, or Resize already
// sent that one).
func (t *tracker) resized(cols, rows int) (int64, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sent || t.rw != cols || t.rh != rows || t.seq == 0 {
		return -1, t.seq
	}
	t.sent = true
	return t.cl.firstOff + t.rat, t.seq
}
