package ptyproc

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// appendLog writes b to the log file without telling the scheduler, as
// rawRead reads: an append to the page cache does not wait, and a write
// per read the scheduler is told of wakes its monitor thread for each
// (an adopted terminal logs every read at once, see Adopt).
func appendLog(f *os.File, b []byte) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var werr error
	cerr := rc.Control(func(fd uintptr) {
		for len(b) > 0 {
			n, _, e := unix.RawSyscall(unix.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
			if e == unix.EINTR {
				continue
			}
			if e != 0 {
				werr = e
				return
			}
			b = b[n:]
		}
	})
	if cerr != nil {
		return cerr
	}
	return werr
}
