package ptyproc

import (
	"time"
)

// bulkRead is a read size that says the terminal's buffer was full (the
// line discipline hands over at most a few KiB a read): more is waiting, so
// the next read comes at once and a flood is read at full speed.
const bulkRead = 1024

// floodBytes read in two windows say the child writes faster than the
// terminal can buffer for a window (tens of KiB on Linux, less on macOS).
const floodBytes = 16 << 10

// pacer decides after each read of busy output whether the reader waits
// for the next point of the window's grid before it reads again. The grid
// is shared by every reader in the process, so busy agents wake together,
// once per window, rather than each on its own timer.
//
// While the child floods, a short read only means the reader caught up
// for a moment: waiting a window then would let the terminal's buffer
// fill and stall the child for the rest of it (a flood read at one buffer
// per window, ten times slower than tmux reads it). So a short read right
// after a full one, or in a window that with the one before brought
// floodBytes, is followed at once by the next. A busy screen (frames of a
// few KiB in many small writes) still waits: waking for each of its
// writes was five times the reads.
type pacer struct {
	window                 time.Duration
	prevBulk               bool
	win                    time.Time // the grid window of the last read
	winBytes, prevWinBytes int
}

// quietPoints is how many points of the grid in a row may find nothing
// before the reader waits in the netpoller again. An agent that wrote in
// the last quarter second is likely to write again (a status line, a
// spinner, the next line of a reply): its terminal is looked at on the
// grid, with every other such agent's, instead of each write waking the
// process on its own. Idle agents cost nothing.
const quietPoints = 8

// OnGrid is the first point of the readers' default grid at or after t.
// A timer of the same process due there fires with the readers' wake-up
// instead of waking the process once more.
func OnGrid(t time.Time) time.Time {
	if g := t.Truncate(DefaultCoalesce); !g.Equal(t) {
		return g.Add(DefaultCoalesce)
	}
	return t
}

// next is the grid's first point after now.
func (c *pacer) next(now time.Time) time.Time { return now.Truncate(c.window).Add(c.window) }

// after takes a read of n > 0 bytes at now and says when to read next
// (zero: at once).
func (c *pacer) after(n int, now time.Time) time.Time {
	if w := now.Truncate(c.window); !w.Equal(c.win) {
		c.prevWinBytes = 0
		if w.Sub(c.win) == c.window {
			c.prevWinBytes = c.winBytes
		}
		c.win, c.winBytes = w, 0
	}
	c.winBytes += n
	flooding := c.prevBulk || c.winBytes+c.prevWinBytes >= floodBytes
	c.prevBulk = n >= bulkRead
	if n >= bulkRead || flooding {
		return time.Time{}
	}
	return c.win.Add(c.window)
}
