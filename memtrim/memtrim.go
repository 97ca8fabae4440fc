// Package memtrim gives a long-lived process's free memory back to the
// system once it goes quiet after allocating. Go keeps the pages of a
// heap that grew up to its collection goal (and, with no allocation, no
// collection comes to free them): an engine or agent host resting after
// a burst of output held up to twice its live heap. One collection and
// scavenge when the burst is over cost a few milliseconds, once.
package memtrim

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"
)

// Policy says when to trim.
type Policy struct {
	// Burst is how much must have been allocated since the last trim.
	Burst uint64
	// Quiet is at most how much was allocated in the last period.
	Quiet uint64
}

// Period is how often Start looks, and Default when it trims: after a
// megabyte allocated, once a period allocates at most 64 KiB.
const Period = 2 * time.Second

// Default is the policy the engine, agent hosts and TUI use.
var Default = Policy{Burst: 1 << 20, Quiet: 64 << 10}

// Due reports whether to trim now: allocs is the bytes allocated so far,
// prev what it was a period ago, last what it was at the last trim.
func (p Policy) Due(allocs, prev, last uint64) bool {
	return allocs-last >= p.Burst && allocs-prev <= p.Quiet
}

// started makes Start once a process: a command that runs a host in the
// full binary reaches it twice.
var started atomic.Bool

// Start checks the process's allocations every period and trims when
// p says so, until stop is called. Only the first call of a process
// starts anything.
func Start(period time.Duration, p Policy) (stop func()) {
	if !started.CompareAndSwap(false, true) {
		return func() {}
	}
	done := make(chan struct{})
	t := time.NewTicker(period)
	// runtime/metrics, though its init costs every process of the
	// binary about 0.05 ms: with MemStats' TotalAlloc read here instead,
	// 8 agent hosts resting after 10k lines each held 15.7 MB (Pss)
	// against 12.2 MB (scripts/bench-attach.sh, both in one run).
	sample := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	go func() {
		defer t.Stop()
		p.run(t.C, done, read, debug.FreeOSMemory)
	}()
	return sync.OnceFunc(func() { close(done) })
}

// run trims on the ticks when due, until done is closed.
func (p Policy) run(tick <-chan time.Time, done <-chan struct{}, read func() uint64, trim func()) {
	prev := read()
	var last uint64
	for {
		select {
		case <-tick:
		case <-done:
			return
		}
		now := read()
		if p.Due(now, prev, last) {
			trim()
			now = read() // the collection's own allocations are no burst
			last = now
		}
		prev = now
	}
}
