package host

import (
	"os"
	"os/signal"
	"sync"
	"syscall"
)

// reaper reaps the hosts this process started once they end: a Wait per
// host held an OS thread, and its stacks, for the host's life (an
// engine's agents' whole runs). Each SIGCHLD looks at every host still
// running, without waiting.
var reaper struct {
	once  sync.Once
	mu    sync.Mutex
	hosts map[int]*os.Process
}

// reap has p reaped when it ends.
func reap(p *os.Process) {
	reaper.once.Do(func() {
		reaper.hosts = map[int]*os.Process{}
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGCHLD)
		go func() {
			for range ch {
				reapEnded()
			}
		}()
	})
	reaper.mu.Lock()
	reaper.hosts[p.Pid] = p
	reaper.mu.Unlock()
	// It may have ended before its SIGCHLD was watched for.
	reapEnded()
}

// reapEnded reaps the hosts that have ended.
func reapEnded() {
	reaper.mu.Lock()
	defer reaper.mu.Unlock()
	for pid, p := range reaper.hosts {
		var ws syscall.WaitStatus
		n, err := syscall.Wait4(pid, &ws, syscall.WNOHANG, nil)
		if n == pid || (err != nil && err != syscall.EINTR) {
			delete(reaper.hosts, pid)
			_ = p.Release()
		}
	}
}
