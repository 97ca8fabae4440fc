package memtrim

import (
	"testing"
	"time"
)

func TestDue(t *testing.T) {
	p := Policy{Burst: 4 << 20, Quiet: 64 << 10}
	for _, c := range []struct {
		name               string
		allocs, prev, last uint64
		want               bool
	}{
		{"no burst yet", 1 << 20, 1 << 20, 0, false},
		{"burst over, quiet", 10 << 20, 10 << 20, 0, true},
		{"burst under way", 10 << 20, 9 << 20, 0, false},
		{"a little since the last period", 10<<20 + 1000, 10 << 20, 0, true},
		{"exactly quiet", 10<<20 + 64<<10, 10 << 20, 0, true},
		{"trimmed since, no new burst", 12 << 20, 12 << 20, 10 << 20, false},
		{"a new burst since the last trim", 15 << 20, 15 << 20, 10 << 20, true},
	} {
		if got := p.Due(c.allocs, c.prev, c.last); got != c.want {
			t.Errorf("%s: Due(%d, %d, %d) = %v, want %v", c.name, c.allocs, c.prev, c.last, got, c.want)
		}
	}
}

// TestRun: each tick reads the allocations; a trim follows a burst once
// a tick finds it quiet, and not again without a new burst.
func TestRun(t *testing.T) {
	p := Policy{Burst: 100, Quiet: 10}
	// What the reads return, in order: the first before any tick, one
	// per tick, and one after each trim.
	reads := []uint64{0, 50, 200, 205, 206 /* trim */, 206, 400, 401, 402 /* trim */, 403}
	tick, done := make(chan time.Time), make(chan struct{})
	var trims []uint64
	n := 0
	read := func() uint64 {
		v := reads[n]
		n++
		return v
	}
	ended := make(chan struct{})
	go func() {
		p.run(tick, done, read, func() { trims = append(trims, reads[n-1]) })
		close(ended)
	}()
	for range 7 {
		tick <- time.Time{}
	}
	close(done)
	<-ended
	if len(trims) != 2 || trims[0] != 205 || trims[1] != 401 || n != len(reads) {
		t.Fatalf("trimmed at %v after %d reads, want [205 401] after %d", trims, n, len(reads))
	}
}

// TestStart: the real trimmer starts once a process and stops.
func TestStart(t *testing.T) {
	stop := Start(time.Millisecond, Policy{Burst: 1 << 20, Quiet: 1 << 10})
	if !started.Load() {
		t.Fatal("Start started nothing")
	}
	again := Start(time.Millisecond, Policy{})
	again()
	stop()
	stop()
}
