package ptyproc

import (
	"os"

	"golang.org/x/sys/unix"
)

// awaitExit returns once the child pid, not reaped yet, has ended,
// waiting in the runtime's poller on a pidfd: the Wait that follows
// reaps it at once, where a Wait alone held an OS thread blocked, and
// its stacks, for the agent's whole run. Without pidfds it returns at
// once and the Wait waits.
func awaitExit(pid int) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	defer f.Close()
	rc, err := f.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(fd uintptr) bool {
		// A pidfd reads ready once its process has ended.
		pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(pfd, 0)
		return err != nil || n > 0
	})
}
