package app

import (
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	"github.com/chorus-dev/chorus/memtrim"
)

// inBinary is set by Main: tests that run commands in process keep their
// processors.
var inBinary bool

// longLived runs the Go code of a process that lives as long as its agents
// (the engine, an agent host, the full-screen interface once its first
// frame is drawn: until then it opens the terminal and reads the engine's
// state at once) on one processor unless GOMAXPROCS says otherwise. Their work is many small wake-ups (a
// few hundred bytes from an agent, a frame, a socket write), each handed
// between goroutines: with a second processor idle, every hand-off woke
// and parked another thread, and that scheduling cost more than the work.
// Git, the checks and the agents are processes of their own and keep
// every core.
var longLived = sync.OnceFunc(func() {
	if inBinary && os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if inBinary {
		// What a burst (an attach served or drawn, an agent's flood)
		// left in the heap goes back once the process is quiet.
		memtrim.Start(memtrim.Period, memtrim.Default)
	}
})

// engineHeap tunes the collector of a process that runs the engine: it
// holds every agent's terminal history (13 MB of live heap for 8 agents ×
// 10,000 lines) and allocates little per byte it reads, so with the default
// GOGC half its footprint was room for garbage it rarely makes. Collecting
// at half again the live heap instead of twice it cut its memory by 7–10 MB
// (Pss, 8 × 10,000 lines) for a collection every few seconds when busy.
// GOGC set by the user wins.
var engineHeap = sync.OnceFunc(func() {
	if inBinary && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(50)
	}
})
