package ptyproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// StartTimeOf returns when pid started, in clock ticks since boot: field
// 22 (starttime) of /proc/<pid>/stat. The unit differs between systems;
// only equality with an earlier reading on the same machine matters.
func StartTimeOf(pid int) (uint64, error) {
	_, start, err := readStat(pid)
	return start, err
}

func readStat(pid int) (state byte, start uint64, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, 0, err
	}
	// comm (field 2) may contain spaces and parentheses: fields after it
	// are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, 0, fmt.Errorf("ptyproc: malformed stat for pid %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 || len(f[0]) == 0 {
		return 0, 0, fmt.Errorf("ptyproc: short stat for pid %d", pid)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	return f[0][0], start, err
}

// Alive reports whether pid is a live (not zombie) process that started at
// startTime, so a pid reused by an unrelated process reads as dead.
func Alive(pid int, startTime uint64) bool {
	if pid <= 0 {
		return false
	}
	state, start, err := readStat(pid)
	if err != nil {
		return false
	}
	return start == startTime && state != 'Z' && state != 'X'
}

// Exiting reports whether pid has begun to exit: the kernel's PF_EXITING
// in field 9 (flags) of /proc/<pid>/stat, set before the process closes
// its files and kept once it is a zombie. Its sockets may already read as
// closed while its state still says running.
func Exiting(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 7 {
		return false
	}
	flags, err := strconv.ParseUint(f[6], 10, 64)
	const pfExiting = 0x4
	return err == nil && flags&pfExiting != 0
}

// StopOrphan ends the process group led by pid — an agent of a Chorus that
// died, which nobody waits for — if pid is still that process (startTime
// guards against reuse): SIGTERM, then SIGKILL after grace. It waits on a
// pidfd, not by polling, and reports whether the process was found.
func StopOrphan(pid int, startTime uint64, grace time.Duration) bool {
	if !Alive(pid, startTime) {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		return true
	}
	defer unix.Close(fd)
	_ = syscall.Kill(-pid, syscall.SIGTERM)
	// The pidfd becomes readable when the process exits.
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	if n, _ := unix.Poll(fds, int(grace.Milliseconds())); n == 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		_, _ = unix.Poll(fds, 5000)
	}
	// Whatever else is left in the group goes too.
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	return true
}

// ParentOf returns pid's parent: field 4 (ppid) of /proc/<pid>/stat.
func ParentOf(pid int) (int, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("ptyproc: malformed stat for pid %d", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, fmt.Errorf("ptyproc: short stat for pid %d", pid)
	}
	return strconv.Atoi(f[1])
}
