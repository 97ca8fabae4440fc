package host

import (
	"encoding/binary"
	"errors"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"
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
	fd    int // a descriptor passed with the frame (fMaster), else -1
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

// put queues a frame; it reports false only for output it dropped while
// the engine is too far behind, which the host's mirror then leaves out
// too, so the two copies stay at the same offsets. A closed outbox (its
// engine gone or replaced) takes nothing and reports true: no engine
// copy is to be kept in step, and the mirror must keep that output, or
// the next engine's screen misses it. The payload is kept, not copied:
// it must not change.
func (o *outbox) put(typ byte, payload []byte) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return true
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
	o.frames = append(o.frames, frame{typ, [][]byte{payload}, len(payload), -1})
	o.pending += len(payload)
	o.signal()
	return true
}

// putFD queues a frame passing descriptor fd, which the outbox closes
// once sent (or dropped).
func (o *outbox) putFD(typ byte, payload []byte, fd int) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		unix.Close(fd)
		return false
	}
	o.frames = append(o.frames, frame{typ, [][]byte{payload}, len(payload), fd})
	o.signal()
	return true
}

func (o *outbox) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// sendFD writes msg with descriptor fd to a Unix connection.
func sendFD(c net.Conn, msg []byte, fd int) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return errors.New("agent host: a descriptor cannot go over this connection")
	}
	n, _, err := uc.WriteMsgUnix(msg, unix.UnixRights(fd), nil)
	if err == nil && n < len(msg) {
		_, err = c.Write(msg[n:])
	}
	return err
}

// dropFDs closes the descriptors of frames that will not be sent.
func (o *outbox) dropFDs() {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, f := range o.frames {
		if f.fd >= 0 {
			unix.Close(f.fd)
		}
	}
	o.frames = nil
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
		var err error
		for i, f := range fs {
			if f.fd >= 0 {
				// Its own message: the descriptor goes with its bytes.
				if err == nil && len(bufs) > 0 {
					_, err = bufs.WriteTo(c)
					bufs = nil
				}
				if err == nil {
					err = sendFD(c, append(append([]byte(nil), hdrs[5*i:5*i+5]...), f.parts[0]...), f.fd)
				}
				unix.Close(f.fd)
				continue
			}
			bufs = append(bufs, hdrs[5*i:5*i+5])
			bufs = append(bufs, f.parts...)
		}
		if err == nil && len(bufs) > 0 {
			_, err = bufs.WriteTo(c)
		}
		if err != nil {
			o.close()
			o.dropFDs()
			return
		}
		last = time.Now()
		if closed {
			return
		}
	}
}
