package ptyproc

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// watchExit starts watching pid, which need not be our child, through a
// pidfd; the returned function blocks until it has exited.
func watchExit(t *testing.T, pid int) func() {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		t.Skipf("pidfd_open: %v", err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return func() {
		t.Helper()
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		for {
			n, err := unix.Poll(fds, int(failSafe/time.Millisecond))
			if errors.Is(err, unix.EINTR) {
				continue
			}
			if err != nil || n != 1 {
				t.Fatalf("process %d did not exit: n=%d err=%v", pid, n, err)
			}
			return
		}
	}
}
