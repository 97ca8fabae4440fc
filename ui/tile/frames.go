package tile

import (
	"context"
	"time"

	"github.com/rivo/tview"
)

// DefaultFrameInterval is about 30 frames a second.
const DefaultFrameInterval = 33 * time.Millisecond

// RunFrames redraws app when one of tiles has new output, at most once per
// interval. It sleeps until an emulator reports a change (OnDirty), so an
// idle screen costs nothing; PTY chunks never trigger a draw themselves.
// It returns when ctx is done. Cancel ctx and wait for RunFrames to return
// before app.Stop(): a QueueUpdateDraw after Stop never returns.
func RunFrames(ctx context.Context, app *tview.Application, interval time.Duration, tiles []*Tile) {
	if interval <= 0 {
		interval = DefaultFrameInterval
	}
	wake := make(chan struct{}, 1)
	for _, t := range tiles {
		t.emu.OnDirty(func() {
			select {
			case wake <- struct{}{}:
			default:
			}
		})
		defer t.emu.OnDirty(nil)
	}
	var last time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-wake:
		}
		if wait := interval - time.Since(last); wait > 0 {
			// Changes during the wait are in this frame.
			timer := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
		}
		dirty := false
		for _, t := range tiles {
			// Every tile is checked so that each one's flag is cleared
			// and its OnDirty armed again.
			if t.TakeDirty() {
				dirty = true
			}
		}
		last = time.Now()
		if dirty {
			app.QueueUpdateDraw(func() {})
		}
	}
}
