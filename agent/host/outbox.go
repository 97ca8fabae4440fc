package host

import (
	"net"
	"sync"
)

// outboxCap bounds what a host holds for a slow engine; past it output is
// dropped (counted) rather than held against the agent: the log and the
// host's emulator still have it.
const outboxCap = 32 << 20

type frame struct {
	typ     byte
	payload []byte
}

// outbox queues frames for one connection; one goroutine writes them, so
// the emulator's tap (which runs under its lock) only copies and wakes.
type outbox struct {
	mu      sync.Mutex
	frames  []frame
	pending int
	dropped int64
	closed  bool
	wake    chan struct{}
}

func newOutbox() *outbox { return &outbox{wake: make(chan struct{}, 1)} }

func (o *outbox) put(typ byte, payload []byte) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return
	}
	if typ == fOutput {
		if o.pending+len(payload) > outboxCap {
			o.dropped += int64(len(payload))
			return
		}
		// Consecutive output goes out as one frame: a busy agent's chunks
		// cost one write between them.
		if n := len(o.frames); n > 0 && o.frames[n-1].typ == fOutput && len(o.frames[n-1].payload) < 1<<20 {
			o.frames[n-1].payload = append(o.frames[n-1].payload, payload...)
			o.pending += len(payload)
			o.signal()
			return
		}
		payload = append(make([]byte, 0, max(len(payload), 4096)), payload...)
	}
	o.frames = append(o.frames, frame{typ, payload})
	o.pending += len(payload)
	o.signal()
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
// write fails.
func (o *outbox) run(c net.Conn) {
	for {
		<-o.wake
		o.mu.Lock()
		fs, closed := o.frames, o.closed
		o.frames, o.pending = nil, 0
		o.mu.Unlock()
		for _, f := range fs {
			if err := writeFrame(c, f.typ, f.payload); err != nil {
				o.close()
				return
			}
		}
		if closed {
			return
		}
	}
}
