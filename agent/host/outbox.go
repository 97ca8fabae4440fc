package host

import (
	"encoding/binary"
	"net"
	"sync"
	"time"
)

// outboxCap bounds what a host holds for a slow engine; past it output is
// dropped (counted) rather than held against the agent: the log still has
// it.
const outboxCap = 32 << 20

// batchGap is the least time between two writes to the engine while the
// agent is busy; output after a quiet spell goes at once.
const batchGap = 2 * time.Millisecond

// frame is one frame to send: its payload in parts, so consecutive
// output chunks become one frame without being copied.
type frame struct {
	typ   byte
	parts [][]byte
	n     int
}

// outbox queues frames for one connection; one goroutine writes them, so
// the agent's output only queues and wakes.
type outbox struct {
	mu      sync.Mutex
	frames  []frame
	pending int
	dropped int64
	closed  bool
	wake    chan struct{}
}

func newOutbox() *outbox { return &outbox{wake: make(chan struct{}, 1)} }

// put queues a frame; it reports false for output it dropped (the
// engine is too far behind) or a closed outbox. The payload is kept, not
// copied: it must not change.
func (o *outbox) put(typ byte, payload []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return false
	}
	if typ == fOutput {
		if o.pending+len(payload) > outboxCap {
			o.dropped += int64(len(payload))
			return false
		}
		if k := len(o.frames) - 1; k >= 0 && o.frames[k].typ == fOutput && o.frames[k].n < 1<<20 {
			o.frames[k].parts = append(o.frames[k].parts, payload)
			o.frames[k].n += len(payload)
			o.pending += len(payload)
			o.signal()
			return true
		}
	}
	o.frames = append(o.frames, frame{typ, [][]byte{payload}, len(payload)})
	o.pending += len(payload)
	o.signal()
	return true
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	o.signal()
}

// run writes queued frames to c until the outbox is closed and empty or a
// write fails. What queued up goes in one gathering write: a busy agent's
// chunks are not copied on their way.
func (o *outbox) run(c net.Conn) {
	var hdrs []byte
	var last time.Time
	for {
		<-o.wake
		if gap := time.Since(last); gap < batchGap {
			// Busy: what comes within the gap goes in the same write,
			// one wake-up and one write for many of the agent's reads.
			time.Sleep(batchGap - gap)
		}
		o.mu.Lock()
		fs, closed := o.frames, o.closed
		o.frames, o.pending = nil, 0
		o.mu.Unlock()
		hdrs = hdrs[:0]
		for _, f := range fs {
			hdrs = append(hdrs, f.typ, 0, 0, 0, 0)
			binary.BigEndian.PutUint32(hdrs[len(hdrs)-4:], uint32(f.n))
		}
		var bufs net.Buffers
		for i, f := range fs {
			bufs = append(bufs, hdrs[5*i:5*i+5])
			bufs = append(bufs, f.parts...)
		}
		if _, err := bufs.WriteTo(c); err != nil {
			o.close()
			return
		}
		last = time.Now()
		if closed {
			return
		}
	}
}
