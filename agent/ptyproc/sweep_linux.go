package ptyproc

import (
	"bytes"
	"os"
	"strconv"
	"sync"
	"syscall"
)

// killTagged kills the processes of this user whose environment holds
// entry and returns how many it found. An environment is read as it was
// at exec, which is what a descendant inherited.
//
// Reading every process's environment is the cost, so callers at the same
// time share scans: a request joins the next scan, which starts after the
// one running (if any) ends, so the scan that serves it always begins
// after it was made.
func killTagged(entry string) int {
	sweeps.mu.Lock()
	if sweeps.next == nil {
		sweeps.next = &sweepReq{found: map[string]int{}, done: make(chan struct{})}
	}
	req := sweeps.next
	req.found[entry] = 0
	if !sweeps.running {
		sweeps.running = true
		go runSweeps()
	}
	sweeps.mu.Unlock()
	<-req.done
	return req.found[entry]
}

// sweepReq is one scan and the entries it looks for.
type sweepReq struct {
	found map[string]int // entry → processes killed; written by the scan
	done  chan struct{}
}

var sweeps struct {
	mu      sync.Mutex
	next    *sweepReq // gathering requests; runs after the current scan
	running bool
}

func runSweeps() {
	for {
		sweeps.mu.Lock()
		req := sweeps.next
		sweeps.next = nil
		if req == nil {
			sweeps.running = false
			sweeps.mu.Unlock()
			return
		}
		sweeps.mu.Unlock()
		scanKill(req.found)
		close(req.done)
	}
}

// scanKill reads every process's environment once and SIGKILLs those
// holding one of the entries, counting them per entry.
func scanKill(found map[string]int) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	self := os.Getpid()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a kernel thread, or another user's
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if n, ok := found[string(kv)]; ok {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					found[string(kv)] = n + 1
				}
				break
			}
		}
	}
}

// tagOf is the value of EnvTag in pid's environment, or "".
func tagOf(pid int) string {
	env, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/environ")
	if err != nil {
		return ""
	}
	prefix := []byte(EnvTag + "=")
	for _, kv := range bytes.Split(env, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v)
		}
	}
	return ""
}
