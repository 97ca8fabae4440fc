package rawio

import (
	"io"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Read reads into b once; io.EOF when the other end closed.
func Read(rc syscall.RawConn, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	var n int
	var rerr error
	err := rc.Read(func(fd uintptr) bool {
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
	if err != nil {
		return n, err
	}
	return n, rerr
}

// Write writes all of b.
func Write(rc syscall.RawConn, b []byte) (int, error) {
	var n int
	var werr error
	err := rc.Write(func(fd uintptr) bool {
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
