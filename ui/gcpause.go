package ui

import (
	"runtime/debug"
	"sync"
	"time"
)

// gcPauseMax bounds how long the collector is held off if the first
// frame never comes.
const gcPauseMax = time.Second

// gcHold counts the UIs of this process holding the collector off, and
// what the first found GOGC at.
var gcHold struct {
	sync.Mutex
	n   int
	old int
}

// pauseGC holds the garbage collector off until resume is called (once
// for every pause; later calls do nothing) or gcPauseMax has passed. A UI
// holds it while it builds its first frame: the heap crosses the
// runtime's first goal on the way (tcell's cell buffer, every tile's copy
// of its screen), and a collection then made the first frame of an
// attach about 4 ms later (median of 8 attaches, 12 ms against 7 with the
// collector off).
func pauseGC() (resume func()) {
	gcHold.Lock()
	if gcHold.n == 0 {
		gcHold.old = debug.SetGCPercent(-1)
	}
	gcHold.n++
	gcHold.Unlock()
	var once sync.Once
	resume = func() {
		once.Do(func() {
			gcHold.Lock()
			gcHold.n--
			if gcHold.n == 0 {
				debug.SetGCPercent(gcHold.old)
			}
			gcHold.Unlock()
		})
	}
	time.AfterFunc(gcPauseMax, resume)
	return resume
}
