package ptyproc

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rawRead is read(2) on a non-blocking descriptor without telling the
// scheduler: it never waits, and a system call it is told of wakes the
// runtime's monitor thread, which then polls every 20 µs while the
// process works (a quarter of the engine's CPU with 8 agents printing).
func rawRead(fd uintptr, buf []byte) (int, error) {
	if len(buf) == 0 {
		return 0, nil
	}
	n, _, e := unix.RawSyscall(unix.SYS_READ, fd, uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)))
	if e != 0 {
		return -1, e
	}
	return int(n), nil
}
