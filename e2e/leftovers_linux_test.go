package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// noLeftovers fails the test when a process an agent started outlives the
// engine (interactive codex's app-server daemon did): every agent's
// environment names this repository's .chorus directory.
func (h *harness) noLeftovers() {
	h.t.Helper()
	mark := []byte("CHORUS_DIR=" + h.dir.Path)
	names, _ := filepath.Glob("/proc/[0-9]*/environ")
	for _, n := range names {
		env, err := os.ReadFile(n)
		if err != nil || !bytes.Contains(append(env, 0), append(mark, 0)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(n)))
		if pid == os.Getpid() || exited(pid, 10*time.Second) {
			continue
		}
		cmd, _ := os.ReadFile(filepath.Join(filepath.Dir(n), "cmdline"))
		h.t.Errorf("process %d outlived its agent: %s", pid, bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// exited waits up to d for pid (not our child) to end.
func exited(pid int, d time.Duration) bool {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return true // already gone
	}
	defer unix.Close(fd)
	n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, int(d.Milliseconds()))
	return n == 1
}
