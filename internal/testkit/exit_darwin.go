package testkit

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WaitExit waits (up to limit) for pid to exit (a zombie counts), through a kqueue
// EVFILT_PROC filter, which works for processes that are not our children.
func WaitExit(t *testing.T, pid int, limit time.Duration) bool {
	t.Helper()
	kq, err := unix.Kqueue()
	if err != nil {
		t.Fatalf("kqueue: %v", err)
	}
	defer unix.Close(kq)
	ev := []unix.Kevent_t{{Ident: uint64(pid), Filter: unix.EVFILT_PROC, Flags: unix.EV_ADD | unix.EV_ONESHOT, Fflags: unix.NOTE_EXIT}}
	if _, err := unix.Kevent(kq, ev, nil, nil); errors.Is(err, unix.ESRCH) {
		return true
	} else if err != nil {
		t.Fatalf("kevent: %v", err)
	}
	ts := unix.NsecToTimespec(limit.Nanoseconds())
	got := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, got, &ts)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			t.Fatalf("kevent: %v", err)
		}
		return n == 1
	}
}
