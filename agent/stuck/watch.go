package stuck

import "time"

// Options tune a Watcher; zero fields take the defaults.
type Options struct {
	// Settle is how long a screen must keep showing a blocking state (a
	// dialog, a login error, a turn ended on an error) before it counts,
	// and how long it must be gone before the verdict clears. Default 1.5s.
	Settle time.Duration
	// Persist is how long errors the CLI is still retrying must last
	// before they count. Default 10s.
	Persist time.Duration
	// Attempts: a retrying error counts sooner (after Settle) once the CLI
	// shows this retry attempt. Default 3.
	Attempts int
}

func (o Options) withDefaults() Options {
	if o.Settle <= 0 {
		o.Settle = 1500 * time.Millisecond
	}
	if o.Persist <= 0 {
		o.Persist = 10 * time.Second
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	return o
}

// Verdict is the Watcher's judgement: a zero Cause means not stuck.
type Verdict struct {
	Finding
	Since time.Time // when the screen first showed it
}

// Watcher turns a sequence of screens into a verdict that holds: an error
// must persist before it counts, and must be gone for a moment before it
// clears. Not safe for concurrent use.
type Watcher struct {
	o       Options
	cur     Finding   // what the latest screen shows
	since   time.Time // cur.Cause continuously on screen since then
	maxTry  int       // highest attempt seen in this stretch
	gone    time.Time // verdict's cause off screen since then (zero: on screen)
	verdict Verdict
	due     time.Time
}

// NewWatcher returns a Watcher.
func NewWatcher(o Options) *Watcher { return &Watcher{o: o.withDefaults()} }

// Verdict is the current verdict.
func (w *Watcher) Verdict() Verdict { return w.verdict }

// Due is when observing again could change the verdict although the
// screen did not change (zero: only new output can).
func (w *Watcher) Due() time.Time { return w.due }

// Observe judges the screen at time now. lastActivity, when not zero, is
// the last time the agent's structured record (its transcript) moved: a
// record that moved after an error appeared means the agent is working
// past it; one that stays quiet while the error shows confirms it sooner.
// changed reports a new verdict (raised, cleared, or another cause or
// detail).
func (w *Watcher) Observe(now time.Time, screen string, lastActivity time.Time) (v Verdict, changed bool) {
	f := Classify(screen)
	if f.Cause != w.cur.Cause {
		w.since, w.maxTry = now, 0
	}
	w.cur = f
	if f.Attempt > w.maxTry {
		w.maxTry = f.Attempt
	}
	since := w.since
	if !lastActivity.IsZero() && lastActivity.After(since) {
		since = lastActivity // progress since the error appeared
	}
	w.due = time.Time{}
	want := Verdict{}
	if f.Cause != None {
		need := w.o.Settle
		if f.Retrying && w.maxTry < w.o.Attempts {
			need = w.o.Persist
			if !lastActivity.IsZero() && now.Sub(lastActivity) >= need/2 {
				need /= 2 // the record is quiet too
			}
		}
		if at := since.Add(need); now.Before(at) {
			w.due = at
		} else {
			want = Verdict{Finding: f, Since: w.since}
		}
	}
	old := w.verdict
	switch {
	case want.Cause != None:
		w.gone = time.Time{}
		if old.Cause == want.Cause {
			want.Since = old.Since
		}
		w.verdict = want
	case old.Cause == None:
	case f.Cause == old.Cause:
		w.gone = time.Time{} // still shown (waiting again after progress)
	default:
		if w.gone.IsZero() {
			w.gone = now
		}
		if at := w.gone.Add(w.o.Settle); now.Before(at) {
			if w.due.IsZero() || at.Before(w.due) {
				w.due = at
			}
		} else {
			w.verdict, w.gone = Verdict{}, time.Time{}
		}
	}
	n := w.verdict
	return n, n.Cause != old.Cause || n.Detail != old.Detail
}
