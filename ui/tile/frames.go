package tile

import (
	"context"
	"time"

	"github.com/rivo/tview"
)

// DefaultFrameInterval is about 30 frames a second.
const DefaultFrameInterval = 33 * time.Millisecond

// RunFrames redraws app at most once per interval, and only when one of
// the tiles returned by visible has new output; PTY chunks never trigger a
// draw themselves. visible is called on RunFrames' goroutine, so it must
// not read tview state. It returns when ctx is done. Cancel ctx and wait for
// RunFrames to return before app.Stop(): a QueueUpdateDraw after Stop
// never returns.
func RunFrames(ctx context.Context, app *tview.Application, interval time.Duration, visible func() []*Tile) {
	if interval <= 0 {
		interval = DefaultFrameInterval
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		dirty := false
		for _, t := range visible() {
			// Every tile is checked so that each one's flag is cleared.
			if t.TakeDirty() {
				dirty = true
			}
		}
		if dirty {
			app.QueueUpdateDraw(func() {})
		}
	}
}
