package ptyproc

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// szomb is p_stat of a zombie in <sys/proc.h>.
const szomb = 5

// StartTimeOf returns when pid started, in microseconds since the epoch
// (kern.proc.pid's p_starttime). The unit differs between systems; only
// equality with an earlier reading on the same machine matters.
func StartTimeOf(pid int) (uint64, error) {
	_, start, err := readStat(pid)
	return start, err
}

func readStat(pid int) (zombie bool, start uint64, err error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return false, 0, fmt.Errorf("ptyproc: process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return false, 0, fmt.Errorf("ptyproc: no process %d", pid)
	}
	t := kp.Proc.P_starttime
	return kp.Proc.P_stat == szomb, uint64(t.Sec)*1e6 + uint64(t.Usec), nil
}

// Alive reports whether pid is a live (not zombie) process that started at
// startTime, so a pid reused by an unrelated process reads as dead.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	zombie, start, err := readStat(pid)
	return err == nil && !zombie && start == startTime
}

// StopOrphan ends the process group led by pid — an agent of a Chorus that
// died, which nobody waits for — if pid is still that process (startTime
// guards against reuse): SIGTERM, then SIGKILL after grace. It waits on a
// kqueue EVFILT_PROC event, not by polling, and reports whether the
// process was found.
func StopOrphan(pid int, startTime uint64, grace time.Duration) bool {
	if !Alive(pid, startTime) {
		return false
	}
	kq, err := unix.Kqueue()
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return true
	}
	defer unix.Close(kq)
	watch := []unix.Kevent_t{{
		Ident:  uint64(pid),
		Filter: unix.EVFILT_PROC,
		Flags:  unix.EV_ADD | unix.EV_ONESHOT,
		Fflags: unix.NOTE_EXIT,
	}}
	if _, err := unix.Kevent(kq, watch, nil, nil); err != nil {
		// ESRCH: it exited in the meantime; its group may not have.
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return true
	}
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	if !waitExit(kq, grace) {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		waitExit(kq, 5*time.Second)
	}
	// Whatever else is left in the group goes too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return true
}

// waitExit waits up to d for the NOTE_EXIT registered on kq.
func waitExit(kq int, d time.Duration) bool {
	ts := unix.NsecToTimespec(d.Nanoseconds())
	got := make([]unix.Kevent_t, 1)
	for {
		n, err := unix.Kevent(kq, nil, got, &ts)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		return err == nil && n > 0
	}
}

// ParentOf returns pid's parent (kern.proc.pid's e_ppid).
func ParentOf(pid int) (int, error) {
	kp, err := unix.SysctlKinfoProc("kern.proc.pid", pid)
	if err != nil {
		return 0, fmt.Errorf("ptyproc: process %d: %w", pid, err)
	}
	if int(kp.Proc.P_pid) != pid {
		return 0, fmt.Errorf("ptyproc: no process %d", pid)
	}
	return int(kp.Eproc.Ppid), nil
}

// Exiting reports whether pid has exited and is not yet reaped (a
// zombie): here the start of an exit cannot be seen.
func Exiting(pid int) bool {
	z, _, err := readStat(pid)
	return err == nil && z
}
