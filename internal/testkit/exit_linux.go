package testkit

import (
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// WaitExit waits (up to limit) for pid to exit (a zombie counts), through a pidfd, which
// works for processes that are not our children.
func WaitExit(t *testing.T, pid int, limit time.Duration) bool {
	t.Helper()
	const sysPidfdOpen = 434
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno == syscall.ESRCH {
		return true
	}
	if errno != 0 {
		t.Fatalf("pidfd_open: %v", errno)
	}
	defer syscall.Close(int(fd))
	pfd := struct {
		fd      int32
		events  int16
		revents int16
	}{fd: int32(fd), events: 1 /* POLLIN */}
	ts := syscall.NsecToTimespec(limit.Nanoseconds())
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_PPOLL, uintptr(unsafe.Pointer(&pfd)), 1, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			t.Fatalf("ppoll: %v", errno)
		}
		return n == 1
	}
}
