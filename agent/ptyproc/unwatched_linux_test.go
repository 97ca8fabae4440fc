package ptyproc

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// The terminal is not in Go's netpoller, whose epoll would wake the
// process for every write of a busy child, even while the reader gathers
// output for a frame; the reader still gets everything, and a straggler
// holding the terminal after the child exited does not keep it waiting.
func TestTerminalNotInNetpoller(t *testing.T) {
	p := start(t, Spec{Argv: []string{"cat"}})
	c := collect(p)
	if _, err := p.Write([]byte("ping\r")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, `ping`)
	rc, err := p.pty.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fd int
	if err := rc.Control(func(f uintptr) { fd = int(f) }); err != nil {
		t.Fatal(err)
	}
	watched, polls := epollTargets(t)
	if polls == 0 {
		t.Fatal("no epoll instance in this process: the check cannot see the netpoller")
	}
	if watched[fd] {
		t.Errorf("the terminal (fd %d) is watched by an epoll instance of this process", fd)
	}
}

// epollTargets returns the descriptors watched by this process's epoll
// instances (the netpoller's among them) and how many instances there are.
func epollTargets(t *testing.T) (map[int]bool, int) {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Skip(err)
	}
	watched := map[int]bool{}
	polls := 0
	for _, e := range ents {
		if l, _ := os.Readlink("/proc/self/fd/" + e.Name()); l != "anon_inode:[eventpoll]" {
			continue
		}
		info, err := os.ReadFile("/proc/self/fdinfo/" + e.Name())
		if err != nil {
			continue
		}
		polls++
		for _, line := range strings.Split(string(info), "\n") {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "tfd:" {
				n, _ := strconv.Atoi(f[1])
				watched[n] = true
			}
		}
	}
	return watched, polls
}

// A write larger than the terminal's input buffer, to a child that reads
// it only later, waits for room instead of failing or losing bytes.
func TestWriteWaitsForRoom(t *testing.T) {
	const n = 200000
	p := start(t, Spec{Argv: []string{"sh", "-c", "stty raw -echo; echo ready; sleep 0.5; head -c " + strconv.Itoa(n) + " | wc -c"}})
	c := collect(p)
	c.waitFor(t, `ready`)
	if w, err := p.Write([]byte(strings.Repeat("x", n))); err != nil || w != n {
		t.Fatalf("Write = %d, %v; want %d, nil", w, err, n)
	}
	c.waitFor(t, `\b`+strconv.Itoa(n)+`\b`)
}
