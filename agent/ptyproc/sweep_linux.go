package ptyproc

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// killTagged kills the processes of this user whose environment holds
// entry and returns how many it found. An environment is read as it was
// at exec, which is what a descendant inherited. since (from readPidMark
// before the tagged process started) narrows the search to processes
// created after it; a zero mark looks at every process.
//
// Reading environments is the cost, so callers at the same time share
// scans: a request joins the next scan, which starts after the one running
// (if any) ends, so the scan that serves it always begins after it was
// made.
func killTagged(entry string, since pidMark) int {
	sweeps.mu.Lock()
	if sweeps.next == nil {
		sweeps.next = &sweepReq{want: map[string]pidMark{}, found: map[string]int{}, done: make(chan struct{})}
	}
	req := sweeps.next
	req.want[entry] = since
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
	want  map[string]pidMark // entry → since when its processes exist
	found map[string]int     // entry → processes killed; written by the scan
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
		scanKill(req)
		close(req.done)
	}
}

// pidMark is where process creation stood: the last pid handed out in our
// pid namespace and the number of processes created since boot.
type pidMark struct {
	lastPid int
	forks   uint64
}

func readPidMark() pidMark {
	lp, ok1 := lastPid()
	fk, ok2 := forks()
	if !ok1 || !ok2 {
		return pidMark{}
	}
	return pidMark{lastPid: lp, forks: fk}
}

// pidRange says which pids can belong to processes created after since:
// pids are handed out cyclically, so while fewer processes were created
// than pid_max allows (with room for the pids in use), they all lie in the
// cyclic interval (since.lastPid, now.lastPid]. ok is false when that
// cannot be told, and every pid must be looked at.
func pidRange(since, now pidMark, pidMax int) (func(pid int) bool, bool) {
	if since.forks == 0 || now.forks < since.forks || pidMax <= 0 {
		return nil, false
	}
	if now.forks-since.forks >= uint64(pidMax)/2 {
		return nil, false
	}
	lo, hi := since.lastPid, now.lastPid
	if lo <= hi {
		return func(pid int) bool { return pid > lo && pid <= hi }, true
	}
	return func(pid int) bool { return pid > lo || pid <= hi }, true // wrapped once
}

// scanKill reads the environments of the processes that may carry one of
// the wanted entries and SIGKILLs those that do, counting them per entry.
func scanKill(req *sweepReq) {
	d, err := os.Open("/proc")
	if err != nil {
		return
	}
	defer d.Close()
	names, _ := d.Readdirnames(-1)
	now := readPidMark()
	pidMax := readPidMax()
	var ranges []func(int) bool
	all := false
	for _, since := range req.want {
		if in, ok := pidRange(since, now, pidMax); ok {
			ranges = append(ranges, in)
		} else {
			all = true
		}
	}
	self := os.Getpid()
	for _, name := range names {
		pid, err := strconv.Atoi(name)
		if err != nil || pid == self || pid <= 1 {
			continue
		}
		if !all && !slices.ContainsFunc(ranges, func(in func(int) bool) bool { return in(pid) }) {
			continue // existed before every process swept for
		}
		env, err := os.ReadFile("/proc/" + name + "/environ")
		if err != nil || len(env) == 0 {
			continue // gone, a kernel thread, or another user's
		}
		for _, kv := range bytes.Split(env, []byte{0}) {
			if _, ok := req.want[string(kv)]; ok {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					req.found[string(kv)]++
				}
				break
			}
		}
	}
}

// lastPid is the last pid handed out in this pid namespace (the last field
// of /proc/loadavg).
func lastPid() (int, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 5 {
		return 0, false
	}
	n, err := strconv.Atoi(f[4])
	return n, err == nil && n > 0
}

// forks is the number of processes created since boot (/proc/stat).
func forks() (uint64, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, false
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "processes "); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
			return n, err == nil && n > 0
		}
	}
	return 0, false
}

var pidMaxOnce = sync.OnceValue(func() int {
	b, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
})

func readPidMax() int { return pidMaxOnce() }

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
