package ptyproc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// watchExit starts watching pid, which need not be our child, with a
// kqueue EVFILT_PROC filter; the returned function blocks until it has
// exited.
func watchExit(t *testing.T, pid int) func() {
	t.Helper()
	kq, err := unix.Kqueue()
	if err != nil {
		t.Skipf("kqueue: %v", err)
	}
	t.Cleanup(func() { unix.Close(kq) })
	ev := []unix.Kevent_t{{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}}
	if _, err := unix.Kevent(kq, ev, nil, nil); err != nil {
		t.Fatalf("watch process %d: %v", pid, err)
	}
	return func() {
		t.Helper()
		if !waitExit(kq, failSafe) {
			t.Fatalf("process %d did not exit", pid)
		}
	}
}
