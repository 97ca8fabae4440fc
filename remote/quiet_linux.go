package remote

import (
	"io"
	"net"
	"syscall"

	"github.com/chorus-dev/chorus/rawio"
)

// quietIO reads and writes a connection's socket through rawio: the
// engine's write of each frame and the TUI's read of it came first in a
// grid point's work, so a call the scheduler is told of woke its monitor
// thread dozens of times a frame.
type quietIO struct {
	rc syscall.RawConn
	nc net.Conn
}

// quiet is nc's quietIO, or nc itself when it has no raw descriptor.
func quiet(nc net.Conn) io.ReadWriter {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nc
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nc
	}
	return quietIO{rc: rc, nc: nc}
}

func (q quietIO) Read(b []byte) (int, error) {
	n, err := rawio.Read(q.rc, b)
	if n > 0 {
		raceRead()
	}
	return n, err
}

func (q quietIO) Write(b []byte) (int, error) {
	raceWrote()
	return rawio.Write(q.rc, b)
}
