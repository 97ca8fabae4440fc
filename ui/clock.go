package ui

import "time"

// clock is where the pump's time comes from: frame pacing and the timers
// for frames and shown times. Tests drive a fake one to see the pump
// sleep.
type clock interface {
	Now() time.Time
	// NewTimer returns a stopped timer.
	NewTimer() timer
}

// timer is a one-shot timer that can be re-armed, like *time.Timer.
type timer interface {
	C() <-chan time.Time
	Reset(d time.Duration)
	Stop()
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer() timer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return realTimer{t}
}

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }

// Reset and Stop need no draining: since Go 1.23 a stopped or reset timer
// never delivers a stale value.
func (r realTimer) Reset(d time.Duration) { r.t.Reset(d) }
func (r realTimer) Stop()                 { r.t.Stop() }
