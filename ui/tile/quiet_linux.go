package tile

import (
	"io"
	"os"
	"sync"
	"unsafe"

	"golang.org/x/sys/unix"
)

// quietTTY is the terminal at path opened once more for writing, written
// with system calls the Go scheduler is not told of; nil if it cannot be
// opened. A write the scheduler is told of wakes the runtime's monitor
// thread, which then polls every 20 µs while the process works: once a
// frame. This open file is the terminal's own (os.OpenFile puts it in the
// netpoller, non-blocking, apart from tcell's blocking descriptor), so a
// full terminal makes a write wait in the netpoller, not hold the
// processor.
var quietTTY = sync.OnceValue(func() io.Writer {
	f, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return nil
	}
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil
	}
	return quietWriter{rc: rc, f: f}
})

type quietWriter struct {
	rc interface {
		Write(func(uintptr) bool) error
	}
	f *os.File // kept open for the process's life
}

func (q quietWriter) Write(b []byte) (int, error) {
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
