package stuck

import (
	"testing"
	"time"
)

type step struct {
	at     time.Duration
	file   string
	active time.Duration // lastActivity offset; -1 = unknown
	want   Cause
}

func play(t *testing.T, o Options, steps []step) *Watcher {
	t.Helper()
	w := NewWatcher(o)
	t0 := time.Unix(1000, 0)
	for i, s := range steps {
		var act time.Time
		if s.active >= 0 {
			act = t0.Add(s.active)
		}
		v, _ := w.Observe(t0.Add(s.at), screen(t, s.file), act)
		if v.Cause != s.want {
			t.Fatalf("step %d (%s at %v): verdict %q, want %q", i, s.file, s.at, v.Cause, s.want)
		}
	}
	return w
}

const s = time.Second

// One 429 the CLI recovers from raises nothing.
func TestWatchTransientError(t *testing.T) {
	play(t, Options{}, []step{
		{0, "claude-busy.txt", -1, None},
		{1 * s, "claude-500-retry-1.txt", -1, None},
		{2 * s, "claude-500-retry-1.txt", -1, None},
		{3 * s, "claude-busy.txt", -1, None},
		{30 * s, "claude-done.txt", -1, None},
	})
}

// Retries that reach the third attempt count once they held for Settle;
// the verdict clears only after the screen is clean for Settle.
func TestWatchRetriesThenRecovery(t *testing.T) {
	w := play(t, Options{}, []step{
		{0, "claude-500-retry-1.txt", -1, None},
		{1 * s, "claude-500-retry-3.txt", -1, None}, // held 1s < Settle
		{2 * s, "claude-500-retry-3.txt", -1, APIError},
		{3 * s, "claude-500-final.txt", -1, APIError},
		{4 * s, "claude-busy.txt", -1, APIError}, // just resent: not clear yet
		{6 * s, "claude-busy.txt", -1, None},
	})
	if !w.Due().IsZero() {
		t.Fatalf("due %v with nothing pending", w.Due())
	}
}

// An error still at its first attempt counts after Persist, sooner when
// the transcript is quiet, later when it moved meanwhile; Due says when
// to look again without new output.
func TestWatchPersistAndActivity(t *testing.T) {
	w := play(t, Options{}, []step{
		{0, "claude-dead-retry.txt", -1, None},
		{9 * s, "claude-dead-retry.txt", -1, None},
		{10 * s, "claude-dead-retry.txt", -1, Unreachable},
	})
	if v := w.Verdict(); v.Since != time.Unix(1000, 0) || v.Detail == "" {
		t.Fatalf("verdict %+v", v)
	}
	play(t, Options{}, []step{
		{0, "claude-dead-retry.txt", 0, None},
		{5 * s, "claude-dead-retry.txt", 0, Unreachable},
	})
	w = play(t, Options{}, []step{
		{0, "claude-dead-retry.txt", 0, None},
		{8 * s, "claude-dead-retry.txt", 7 * s, None}, // the record moved at 7s
	})
	if due := w.Due(); due != time.Unix(1000, 0).Add(17*s) {
		t.Fatalf("due %v", due)
	}
}

// A dialog or a login error counts after Settle, and Due says when.
func TestWatchDialogSettles(t *testing.T) {
	w := play(t, Options{}, []step{{0, "claude-trust-dialog.txt", -1, None}})
	if due := w.Due(); due != time.Unix(1000, 0).Add(1500*time.Millisecond) {
		t.Fatalf("due %v", due)
	}
	w = play(t, Options{}, []step{
		{0, "claude-login.txt", -1, None},
		{2 * s, "claude-login.txt", -1, Login},
		{3 * s, "claude-trust-dialog.txt", -1, Login}, // another cause must settle first
		{5 * s, "claude-trust-dialog.txt", -1, Dialog},
	})
	if w.Verdict().Finding.String() == "" {
		t.Fatal("no text")
	}
}
