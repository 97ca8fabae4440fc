package app

import (
	"os"
	"runtime"
	"sync"
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
})
