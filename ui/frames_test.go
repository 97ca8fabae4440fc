package ui

import (
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/orchestrator"
)

// fakeClock is a clock whose time moves only when the test says so; its
// timers fire from Advance, never by themselves.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  *fakeClock
	ch chan time.Time
	at time.Time
	on bool
}

func newFakeClock(now time.Time) *fakeClock { return &fakeClock{now: now} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer() timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: c, ch: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

// Reset and Stop drop an undelivered tick, as Go's timers do.
func (t *fakeTimer) Reset(d time.Duration) {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.at, t.on = t.c.now.Add(d), true
}

func (t *fakeTimer) Stop() {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	t.drain()
	t.on = false
}

func (t *fakeTimer) drain() {
	select {
	case <-t.ch:
	default:
	}
}

// Advance moves the time on by d and fires the timers that came due; it
// returns how many did.
func (c *fakeClock) Advance(d time.Duration) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	fired := 0
	for _, t := range c.timers {
		if t.on && !t.at.After(c.now) {
			t.on = false
			t.ch <- t.at
			fired++
		}
	}
	return fired
}

// armed lists when the armed timers will fire, earliest first.
func (c *fakeClock) armed() []time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var at []time.Time
	for _, t := range c.timers {
		if t.on {
			at = append(at, t.at)
		}
	}
	sort.Slice(at, func(i, j int) bool { return at[i].Before(at[j]) })
	return at
}

// startFake runs the fixture's UI on a fake clock at t0 (o.Now too).
func startFake(t *testing.T, o Options) (*driver, *fakeClock) {
	t.Helper()
	c := newFakeClock(t0)
	o.Now = c.Now
	d := startUIWith(t, o, 150, 40, func(u *UI) { u.clk = c })
	d.settle(c)
	return d, c
}

// settle waits until the pump has nothing left to do: no work queued and
// no terminal waiting for a frame. Frames that are due are let through by
// moving c on by a frame interval.
func (d *driver) settle(c *fakeClock) {
	d.t.Helper()
	for {
		d.sync()
		quiet := make(chan bool, 1)
		d.u.toPump(func() {
			d.u.inMu.Lock()
			queued := len(d.u.inbox) > 0
			d.u.inMu.Unlock()
			quiet <- !queued && !d.u.frameArmed.Load()
		})
		if <-quiet {
			return
		}
		if d.u.frameArmed.Load() {
			c.Advance(d.u.o.FrameInterval)
		}
	}
}

// pumpTurns runs one turn of the pump and returns how many turns it had
// finished before that one.
func (d *driver) pumpTurns() int64 {
	d.t.Helper()
	n := make(chan int64, 1)
	d.u.toPump(func() { n <- d.u.turns.Load() })
	select {
	case v := <-n:
		return v
	case <-time.After(waitLimit):
		d.t.Fatal("the pump never ran")
	}
	return 0
}

// until runs step until cond holds; each step is a turn of the pump, so
// this waits on the UI, not on time.
func (d *driver) until(what string, cond func() bool, step func()) {
	d.t.Helper()
	limit := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(limit) {
			d.t.Fatalf("never happened: %s", what)
		}
		step()
	}
}

// frameDue reports whether c has a frame timer armed (the clock's fire a
// minute or more apart).
func frameDue(c *fakeClock, interval time.Duration) bool {
	for _, at := range c.armed() {
		if !at.After(c.Now().Add(interval)) {
			return true
		}
	}
	return false
}

// An idle UI arms no timer but the one for the next shown time to change,
// and does not run at all until then; a screen that shows no time arms
// none.
func TestIdleUIDoesNotWake(t *testing.T) {
	_, _, o := fixture()
	d, c := startFake(t, o)
	// The run started 15 minutes before t0 and the agents 12 and 5: all
	// shown times change together, a minute on.
	next := t0.Add(time.Minute)
	if at := c.armed(); len(at) != 1 || !at[0].Equal(next) {
		t.Fatalf("armed timers %v, want only the clock at %v", at, next)
	}
	d.expect("12m")
	turns := d.pumpTurns()
	if n := c.Advance(next.Sub(c.Now()) - time.Nanosecond); n != 0 {
		t.Fatalf("%d timers fired before the next shown change", n)
	}
	if got := d.pumpTurns() - turns; got != 1 {
		t.Fatalf("the pump ran %d times while idle, want only the first count's turn", got)
	}
	if n := c.Advance(time.Nanosecond); n != 1 {
		t.Fatalf("%d timers fired at the minute, want 1", n)
	}
	d.waitShown("13m")
	d.settle(c)
	if at := c.armed(); len(at) != 1 || !at[0].Equal(next.Add(time.Minute)) {
		t.Fatalf("after the minute: armed timers %v, want the clock at %v", at, next.Add(time.Minute))
	}

	t.Run("no times shown", func(t *testing.T) {
		snap := orchestrator.Snapshot{MaxParallel: 3}
		o := o
		o.Engine = newFakeEngine(snap)
		d, c := startFake(t, o)
		if at := c.armed(); len(at) != 0 {
			t.Fatalf("armed timers %v with no time on screen", at)
		}
		turns := d.pumpTurns()
		c.Advance(24 * time.Hour)
		if got := d.pumpTurns() - turns; got != 1 {
			t.Fatalf("the pump ran %d times while idle, want only the first count's turn", got)
		}
	})
}

// Output written to an agent's terminal reaches its tile; a second write
// within a frame interval waits for the frame timer.
func TestTileWriteIsDrawn(t *testing.T) {
	f, _, o := fixture()
	d := startUI(t, o, 150, 40)
	emu := f.Screen("claude-ch-2n6")
	emu.Write([]byte("\r\nhello from the agent"))
	d.waitShown("hello from the agent")

	t.Run("frames capped", func(t *testing.T) {
		f, _, o := fixture()
		d, c := startFake(t, o)
		emu := f.Screen("claude-ch-2n6")
		interval := d.u.o.FrameInterval
		// Drawn at once or on a frame timer; either way the last frame is
		// then at the fake clock's now, which stands still.
		emu.Write([]byte("\r\nfirst write"))
		d.until("the first write is shown", func() bool { return strings.Contains(d.text(), "first write") }, func() {
			d.pumpTurns()
			if frameDue(c, interval) {
				c.Advance(interval)
			}
		})
		emu.Write([]byte("\r\nsecond write"))
		// The pump takes the wake and arms the timer.
		d.until("a frame timer is armed", func() bool { return frameDue(c, interval) }, func() { d.pumpTurns() })
		d.expectNot("second write")
		if n := c.Advance(interval); n != 1 {
			t.Fatalf("%d timers fired after a frame interval, want the frame's", n)
		}
		d.waitShown("second write")
	})
}
