package ui

import (
	"runtime/debug"
	"sync/atomic"
	"testing"
)

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// The collector comes back once every UI that held it off resumed it, at
// the setting it had, and a resume called twice counts once.
func TestPauseGCRestores(t *testing.T) {
	gcHold.Lock()
	busy := gcHold.n != 0 // another test's UI holds it
	gcHold.Unlock()
	if busy {
		t.Skip("another UI of this process holds the collector")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	a := pauseGC()
	b := pauseGC()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d while paused, want -1 (off)", p)
	}
	a()
	a()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d with one UI still holding it, want -1", p)
	}
	b()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GOGC %d after both resumed, want 150 as before", p)
	}
}

// FirstFrame runs once, after the first frame is on the screen, however
// many frames follow.
func TestFirstFrameRunsOnce(t *testing.T) {
	_, _, o := fixture()
	var calls atomic.Int32
	o.FirstFrame = func() { calls.Add(1) }
	d := startUI(t, o, 150, 40)
	d.press("<Tab>")
	d.sync()
	if n := calls.Load(); n != 1 {
		t.Fatalf("FirstFrame ran %d times, want once", n)
	}
}
