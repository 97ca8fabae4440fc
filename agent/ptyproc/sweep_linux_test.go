package ptyproc

import (
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A child that left the agent's process group and session (setsid), as a
// daemon does, still ends with the agent.
func TestStopEndsSetsidDescendant(t *testing.T) {
	script := `setsid sh -c 'echo "escaped:$$"; exec sleep 1000' &
wait`
	p := start(t, Spec{Argv: []string{"sh", "-c", script}})
	c := collect(p)
	m := c.waitFor(t, `escaped:(\d+)`)
	pid, _ := strconv.Atoi(m[1])
	st, err := StartTimeOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	waitGone := watchExit(t, pid)
	if pg, _ := unix.Getpgid(pid); pg == p.Pid() {
		t.Fatalf("the descendant is still in the agent's group %d; the test needs one outside it", pg)
	}
	p.Stop(100 * time.Millisecond)
	waitGone()
	if Alive(pid, st) {
		t.Error("setsid descendant survived Stop")
	}
}

// After a crash, the orphaned agent's escaped descendants go with it.
func TestStopOrphanTreeEndsSetsidDescendant(t *testing.T) {
	script := `setsid sh -c 'echo "escaped:$$"; exec sleep 1000' &
wait`
	p := start(t, Spec{Argv: []string{"sh", "-c", script}})
	c := collect(p)
	m := c.waitFor(t, `escaped:(\d+)`)
	pid, _ := strconv.Atoi(m[1])
	waitGone := watchExit(t, pid)
	if !StopOrphanTree(p.Pid(), p.StartTime(), 100*time.Millisecond) {
		t.Fatal("the orphan was not found")
	}
	waitGone()
}

// An agent that exits by itself takes its escaped descendants with it.
func TestExitEndsSetsidDescendant(t *testing.T) {
	// The leader reports the descendant's pid once it exists, then exits.
	script := `setsid sh -c 'echo $$ > pid.tmp; mv pid.tmp pid; exec sleep 1000' &
while [ ! -s pid ]; do :; done; echo "escaped:$(cat pid)"; exit 0`
	p := start(t, Spec{Argv: []string{"sh", "-c", script}, Dir: t.TempDir()})
	c := collect(p)
	m := c.waitFor(t, `escaped:(\d+)`)
	pid, _ := strconv.Atoi(m[1])
	waitGone := watchExit(t, pid)
	<-p.Done()
	waitGone()
}
