package ptyproc

import (
	"os"
	"os/exec"
	"testing"
)

func TestPidRange(t *testing.T) {
	for _, c := range []struct {
		name       string
		since, now pidMark
		in, out    []int
		all        bool
	}{
		{name: "no wrap", since: pidMark{100, 1000}, now: pidMark{150, 1050}, in: []int{101, 150}, out: []int{100, 99, 151, 5}},
		{name: "wrapped once", since: pidMark{990, 1000}, now: pidMark{310, 1400}, in: []int{991, 1000, 300, 310}, out: []int{990, 311, 500}},
		{name: "too many processes since", since: pidMark{100, 1000}, now: pidMark{150, 1600}, all: true},
		{name: "no mark", since: pidMark{}, now: pidMark{150, 1600}, all: true},
		{name: "counter went back", since: pidMark{100, 1000}, now: pidMark{150, 900}, all: true},
	} {
		in, ok := pidRange(c.since, c.now, 1000)
		if ok == c.all {
			t.Errorf("%s: narrowed %v, want %v", c.name, ok, !c.all)
			continue
		}
		for _, p := range c.in {
			if !in(p) {
				t.Errorf("%s: pid %d left out", c.name, p)
			}
		}
		for _, p := range c.out {
			if in(p) {
				t.Errorf("%s: pid %d looked at", c.name, p)
			}
		}
	}
}

// A process started after the mark is found by a narrowed sweep; one
// started before it is not looked at, even carrying the tag.
func TestKillTaggedNarrowed(t *testing.T) {
	before := exec.Command("sleep", "60")
	before.Env = append(os.Environ(), EnvTag+"=narrow-test")
	if err := before.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = before.Process.Kill(); _ = before.Wait() }()
	mark := readPidMark()
	if mark.forks == 0 {
		t.Skip("no /proc/loadavg or /proc/stat here")
	}
	after := exec.Command("sleep", "60")
	after.Env = before.Env
	if err := after.Start(); err != nil {
		t.Fatal(err)
	}
	if n := killTagged(EnvTag+"=narrow-test", mark); n != 1 {
		t.Fatalf("killed %d, want only the one started after the mark", n)
	}
	if err := after.Wait(); err == nil {
		t.Fatal("the process started after the mark was not killed")
	}
	if n := killTagged(EnvTag+"=narrow-test", pidMark{}); n != 1 {
		t.Fatalf("a full sweep killed %d, want the one from before the mark", n)
	}
}
