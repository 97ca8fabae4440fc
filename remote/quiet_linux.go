package remote

import (
	"io"
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// quietIO reads and writes a connection's socket with system calls the
// Go scheduler is not told of, waiting in the netpoller only when the
// socket has nothing to read or no room. A call the scheduler is told of
// wakes the runtime's monitor thread, which then polls every 20 µs for as
// long as the process works: the engine's write of each frame and the
// TUI's read of it came first in that work, so the monitor woke dozens of
// times a frame. The socket is non-blocking (net's), so no call waits.
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
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := q.rc.Read(func(fd uintptr) bool {
		for {
			m, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			switch e {
			case 0:
				n = int(m)
				if n == 0 {
					rerr = io.EOF
				}
				return true
			case unix.EINTR:
				continue
			case unix.EAGAIN:
				return false // wait in the netpoller
			default:
				rerr = e
				return true
			}
		}
	})
	if n > 0 {
		raceRead()
	}
	if err != nil {
		return n, err
	}
	return n, rerr
}

func (q quietIO) Write(b []byte) (int, error) {
	raceWrote()
	var n int
	var werr error
	err := q.rc.Write(func(fd uintptr) bool {
		for n < len(b) {
			m, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[n])), uintptr(len(b)-n))
			switch e {
			case 0:
				n += int(m)
			case unix.EINTR:
			case unix.EAGAIN:
				return false // wait for room in the netpoller
			default:
				werr = e
				return true
			}
		}
		return true
	})
	if err != nil {
		return n, err
	}
	return n, werr
}
