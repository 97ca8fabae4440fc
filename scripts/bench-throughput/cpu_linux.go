package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// waitCPU waits for cmd's process to exit without reaping it, reads the
// zombie's own CPU time (children not included) from /proc — nothing is
// lost at exit, unlike a read while it runs — then reaps it.
func waitCPU(cmd *exec.Cmd) (cpu time.Duration, cpuErr, waitErr error) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EINTR) {
			return 0, err, cmd.Wait()
		}
	}
	cpu, cpuErr = selfCPU(cmd.Process.Pid)
	return cpu, cpuErr, cmd.Wait()
}

// selfCPU is utime+stime of the process alone (not its children).
func selfCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	s := string(raw)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	const hz = 100 // USER_HZ: /proc reports clock ticks of 1/100 s on Linux
	return time.Duration(u+st) * time.Second / hz, nil
}
