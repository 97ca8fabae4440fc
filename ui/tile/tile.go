// Package tile is the tview primitive that shows one terminal emulator: an
// agent's live PTY, or a replayed transcript.
package tile

import (
	"io"
	"time"
	"unicode/utf8"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/agent/term"
)

// wheelLines is how far one wheel notch scrolls the scrollback view.
const wheelLines = 3

// Tile draws a term.Emulator inside a tview box. Its methods other than
// Emulator and Dirty must run on the tview event goroutine, like any
// primitive's.
type Tile struct {
	*tview.Box

	emu      *term.Emulator
	input    io.Writer
	onResize func(w, h int)
	label    string

	snap    term.Snapshot // last frame drawn; kept while 2026 holds drawing
	prev    []term.Cell   // the frame before, for DrawChanged
	last    frameKey      // geometry and title of the last full Draw
	drawn   bool
	offset  int // rows scrolled back into the scrollback; 0 follows output
	fixed   bool
	buttons tcell.ButtonMask // last mouse buttons, to tell press from drag
	copy    *copyMode        // nil: not in copy mode
	runes   map[rune]string  // see runeString
}

// New returns a tile showing emu. Keys, pastes and mouse events are encoded
// for the child and written to input (normally the PTY); input may be nil
// for a view-only tile.
func New(emu *term.Emulator, input io.Writer) *Tile {
	t := &Tile{Box: tview.NewBox(), emu: emu, input: input}
	t.SetBorder(true)
	return t
}

// Emulator returns the tile's emulator.
func (t *Tile) Emulator() *term.Emulator { return t.emu }

// SetLabel sets the fixed part of the header (e.g. the agent and task);
// the child's own title is shown after it.
func (t *Tile) SetLabel(s string) *Tile {
	t.label = s
	return t
}

// SetResizeFunc sets what to call after the tile resized its emulator to
// a new inner size; the front end resizes the PTY there. The emulator is
// resized first so the child's redraw lands on a grid of the right size.
func (t *Tile) SetResizeFunc(f func(w, h int)) *Tile {
	t.onResize = f
	return t
}

// SetFixedSize stops the tile from resizing its emulator to fit, as for a
// replay that must keep the recorded size.
func (t *Tile) SetFixedSize(fixed bool) *Tile {
	t.fixed = fixed
	return t
}

// TakeDirty reports whether the tile needs a redraw and clears the flag.
// Safe from any goroutine; the frame pump calls it.
func (t *Tile) TakeDirty() bool { return t.emu.TakeDirty() }

// ScrollOffset returns how many rows the view is scrolled back.
func (t *Tile) ScrollOffset() int { return t.offset }

// Draw draws the last complete frame of the emulator.
func (t *Tile) Draw(screen tcell.Screen) {
	title := t.fullTitle()
	t.SetTitle(" " + tview.Escape(title) + " ")
	t.Box.DrawForSubclass(screen, t)
	x0, y0, w, h := t.GetInnerRect()
	if w <= 0 || h <= 0 {
		return
	}
	if !t.fixed {
		if ew, eh := t.emu.Size(); ew != w || eh != h {
			t.emu.Resize(w, h)
			if t.onResize != nil {
				t.onResize(w, h)
			}
		}
	}
	if t.emu.SyncHeld(time.Now()) && t.drawn {
		// The child is between the halves of a synchronized frame: keep
		// showing the previous one and look again on the next tick.
		t.emu.MarkDirty()
	} else {
		if c := t.copy; c != nil {
			_, end := t.emu.RowSpan()
			t.offset = int(max(int64(end)-int64(h)-int64(c.top), 0))
		}
		t.emu.Snapshot(&t.snap, t.offset)
		t.keepOffset()
		t.drawn = true
	}
	if c := t.copy; c != nil {
		c.top = t.snap.Pushed - uint64(t.snap.Offset)
		c.lastView = h
		t.snap.CursorVisible = false
	}
	// On the painter's screen the cells go through the painter, whose
	// escape strings are formatted once per style: tcell's Show formats
	// each through its terminfo interpreter, which made the first frame
	// of an attach its slowest part.
	var cv canvas = screen
	if ps, ok := screen.(*paintScreen); ok {
		cv = ps.p
	}
	t.drawCells(screen, cv, x0, y0, w, h, nil)
	if t.copy != nil {
		t.drawCopy(screen, x0, y0, min(w, t.snap.W), min(h, t.snap.H))
	}
	t.last = frameKey{title: title, x: x0, y: y0, w: w, h: h}
}

// DrawChanged redraws only the cells that changed since this tile's last
// frame, on a screen that still shows that frame (nothing else drew over
// it since). Anything else that changed — position, size, title — makes it
// a full Draw. With a painter the changed cells go through it (its Flush
// shows them); without one, through the screen (the caller's Show).
func (t *Tile) DrawChanged(screen tcell.Screen, p *Painter) {
	x0, y0, w, h := t.GetInnerRect()
	title := t.fullTitle()
	key := frameKey{title: title, x: x0, y: y0, w: w, h: h}
	// Only the title changed (a child's spinner in it): with a painter,
	// the box goes through the screen and every cell through the
	// painter, which sends only what the terminal does not show.
	titleOnly := p != nil && t.drawn && t.last.title != title && t.last == frameKey{title: t.last.title, x: x0, y: y0, w: w, h: h}
	if !t.drawn || (t.last != key && !titleOnly) || t.copy != nil {
		// Copy mode marks cells over the frame: always a full draw.
		t.Draw(screen)
		return
	}
	if ew, eh := t.emu.Size(); !t.fixed && (ew != w || eh != h) {
		t.Draw(screen)
		return
	}
	if t.emu.SyncHeld(time.Now()) {
		t.emu.MarkDirty()
		return
	}
	if titleOnly {
		t.SetTitle(" " + tview.Escape(title) + " ")
		t.Box.DrawForSubclass(screen, t)
		t.last.title = title
	}
	prevW, prevRev, prevLen := t.snap.W, t.snap.Reverse, len(t.snap.Cells)
	// Only the rows that changed are copied, and their cells before go
	// to t.prev to be compared with.
	t.prev = t.emu.SnapshotChanged(&t.snap, t.offset, t.prev)
	t.keepOffset()
	prev := t.prev[:len(t.snap.Cells)]
	if titleOnly || t.snap.W != prevW || t.snap.Reverse != prevRev || prevLen != len(t.snap.Cells) {
		prev = nil
	}
	var cv canvas = screen
	if p != nil {
		cv = p
	}
	t.drawCells(screen, cv, x0, y0, w, h, prev)
}

// frameKey is what a frame's geometry and decoration depended on.
type frameKey struct {
	title      string
	x, y, w, h int
}

// fullTitle is the label, then the child's own title, cut at the end to
// the box (tview would cut a centred title at both ends, losing the
// label's start: the agent's name).
func (t *Tile) fullTitle() string {
	title := t.label
	if ct := t.emu.Title(); ct != "" {
		if title != "" {
			title += " — "
		}
		title += ct
	}
	mark := ""
	switch {
	case t.copy != nil:
		mark = t.copy.title()
	case t.offset > 0:
		mark = " [scrollback]"
	}
	if _, _, w, _ := t.GetRect(); w > 4 {
		title = term.Truncate(title, max(1, w-4-term.StringWidth(mark)), "…")
	}
	return title + mark
}

// canvas is where drawCells puts cells: the screen, or a Painter.
type canvas interface {
	Put(x, y int, str string, style tcell.Style) (string, int)
}

// drawCells puts the snapshot's cells on cv, skipping rows the snapshot
// did not change and cells equal to prev (nil: all of them); the cursor
// goes to screen.
func (t *Tile) drawCells(screen tcell.Screen, cv canvas, x0, y0, w, h int, prev []term.Cell) {
	s := &t.snap
	// Neighbouring cells mostly share a style: converting once per run
	// instead of once per cell was a tenth of a busy frame.
	var lastKey styleKey
	var lastStyle tcell.Style
	haveStyle := false
	p, _ := cv.(*Painter)
	if p != nil {
		// One lock for the tile's cells instead of one per cell,
		// released before the cursor goes through the screen.
		p.hold()
	}
	for y := 0; y < s.H && y < h; y++ {
		if prev != nil && !s.Changed[y] {
			continue
		}
		row := s.Cells[y*s.W : (y+1)*s.W]
		for x := 0; x < s.W && x < w; x++ {
			c := row[x]
			if prev != nil && c == prev[y*s.W+x] && !c.Cluster() {
				continue
			}
			if c.Attr&term.AttrWideCont != 0 {
				continue
			}
			if k := (styleKey{c.Fg, c.Bg, c.Attr &^ term.AttrWide}); !haveStyle || k != lastKey {
				lastKey, lastStyle, haveStyle = k, Style(c, s.Reverse), true
			}
			str := " "
			switch {
			case c.Rune == 0:
			case c.Width() == 2 && x == w-1:
				// Half a wide character does not fit: show a blank.
			case c.Rune < utf8.RuneSelf && !c.Cluster():
				str = ascii[c.Rune]
			case p != nil && c.Width() == 1 && !c.Cluster():
				// One rune of one column, as the emulator measured it
				// with tcell's width policy.
				p.PutNarrow(x0+x, y0+y, t.runeString(c.Rune), lastStyle)
				continue
			default:
				str = s.Grapheme(c)
			}
			cv.Put(x0+x, y0+y, str, lastStyle)
		}
	}
	if p != nil {
		p.release()
	}
	// Only the focused tile shows the cursor; tcell has one.
	if t.HasFocus() && s.CursorVisible && s.CursorX < w && s.CursorY < h {
		screen.ShowCursor(x0+s.CursorX, y0+s.CursorY)
		screen.SetCursorStyle(tcell.CursorStyle(s.CursorStyle))
	}
}

// runeString returns r as a string, made once per rune a tile shows (a
// busy CLI's box-drawing lines and bullets would allocate per cell).
func (t *Tile) runeString(r rune) string {
	if s, ok := t.runes[r]; ok {
		return s
	}
	if t.runes == nil || len(t.runes) >= maxRunes {
		t.runes = map[rune]string{}
	}
	s := string(r)
	t.runes[r] = s
	return s
}

// maxRunes bounds a tile's rune strings; past it they are made anew.
const maxRunes = 4096

// styleKey is what Style depends on besides the screen's reverse mode.
type styleKey struct {
	fg, bg term.Color
	attr   term.Attr
}

// ascii holds one-character strings so that drawing ASCII allocates
// nothing.
var ascii = func() (a [utf8.RuneSelf]string) {
	for i := range a {
		a[i] = string(rune(i))
	}
	return a
}()

// Style maps a cell's colours and attributes to a tcell style. The
// default colour stays tcell.ColorDefault so the host theme shows through.
func Style(c term.Cell, reverse bool) tcell.Style {
	st := tcell.StyleDefault.Foreground(color(c.Fg)).Background(color(c.Bg))
	a := c.Attr
	st = st.Bold(a&term.AttrBold != 0).
		Dim(a&term.AttrFaint != 0).
		Italic(a&term.AttrItalic != 0).
		Underline(a&term.AttrUnderline != 0).
		Blink(a&term.AttrBlink != 0).
		StrikeThrough(a&term.AttrStrike != 0).
		Reverse((a&term.AttrReverse != 0) != reverse)
	if a&term.AttrInvisible != 0 {
		st = st.Foreground(color(c.Bg))
	}
	return st
}

func color(c term.Color) tcell.Color {
	if i, ok := c.Index(); ok {
		return tcell.PaletteColor(int(i))
	}
	if r, g, b, ok := c.RGB(); ok {
		return tcell.NewRGBColor(int32(r), int32(g), int32(b))
	}
	return tcell.ColorDefault
}

// send writes encoded input to the child.
func (t *Tile) send(b []byte) {
	if t.input != nil && len(b) > 0 {
		_, _ = t.input.Write(b)
	}
}

// Scroll moves the view half a tile back into the history (pages > 0) or
// forward toward the live screen, pages halves at a time: the keyboard's
// way to read a tile's history while keys go to Chorus.
func (t *Tile) Scroll(pages int) {
	_, _, _, h := t.GetInnerRect()
	t.scroll(pages * max(h/2, 1))
}

// scroll moves the scrollback view by n rows (positive: back in time).
func (t *Tile) scroll(n int) {
	if n > 0 {
		// A copy of a remote terminal fetches its history now.
		t.emu.WantHistory()
	}
	t.offset += n
	if t.offset < 0 {
		t.offset = 0
	}
	if lim := t.emu.ScrollbackLines(); t.offset > lim && !t.emu.HistoryPending() {
		t.offset = lim
	}
}

// keepOffset takes the offset the snapshot could show, unless the
// history is still on its way: then the view goes as far back as asked
// once it has arrived.
func (t *Tile) keepOffset() {
	if !t.emu.HistoryPending() {
		t.offset = t.snap.Offset
	}
}

// InputHandler encodes keys for the child. PgUp/PgDn scroll the view while
// the child is on the main screen (a full-screen child gets them), and
// Shift+PgUp/PgDn always do. Any other key returns to the live view.
func (t *Tile) InputHandler() func(event *tcell.EventKey, setFocus func(p tview.Primitive)) {
	return t.WrapInputHandler(func(ev *tcell.EventKey, _ func(p tview.Primitive)) {
		if t.copy != nil {
			t.CopyKey(ev)
			return
		}
		m := t.emu.InputModes()
		_, _, _, page := t.GetInnerRect()
		page = max(page/2, 1)
		viewKey := !m.AltScreen || ev.Modifiers()&tcell.ModShift != 0
		switch {
		case ev.Key() == tcell.KeyPgUp && viewKey:
			t.scroll(page)
			return
		case ev.Key() == tcell.KeyPgDn && viewKey && t.offset > 0:
			t.scroll(-page)
			return
		}
		t.offset = 0
		t.send(EncodeKey(ev, m))
	})
}

// PasteHandler sends pasted text, bracketed when the child asked for it.
func (t *Tile) PasteHandler() func(text string, setFocus func(p tview.Primitive)) {
	return t.WrapPasteHandler(func(text string, _ func(p tview.Primitive)) {
		t.offset = 0
		t.send(term.EncodePaste(t.emu.InputModes(), []byte(text)))
	})
}

// MouseHandler forwards mouse events when the child enabled mouse
// tracking; otherwise the wheel scrolls the scrollback view.
func (t *Tile) MouseHandler() func(action tview.MouseAction, event *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
	return t.WrapMouseHandler(func(action tview.MouseAction, ev *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
		mx, my := ev.Position()
		if !t.InRect(mx, my) {
			return false, nil
		}
		if action == tview.MouseLeftDown {
			setFocus(t)
		}
		m := t.emu.InputModes()
		x0, y0, _, _ := t.GetInnerRect()
		if m.Mouse == term.MouseNone {
			switch action {
			case tview.MouseScrollUp:
				t.scroll(wheelLines)
				return true, nil
			case tview.MouseScrollDown:
				t.scroll(-wheelLines)
				return true, nil
			}
			return action == tview.MouseLeftDown, nil
		}
		if !t.InInnerRect(mx, my) {
			return false, nil
		}
		me, ok := t.mouseEvent(action, ev, mx-x0, my-y0)
		if !ok {
			return true, nil
		}
		t.send(term.EncodeMouse(m, me))
		// Keep receiving the drag while a button is held.
		if ev.Buttons()&(tcell.Button1|tcell.Button2|tcell.Button3) != 0 {
			return true, t
		}
		return true, nil
	})
}

// mouseEvent turns a tview mouse action into a terminal mouse event.
func (t *Tile) mouseEvent(action tview.MouseAction, ev *tcell.EventMouse, x, y int) (term.MouseEvent, bool) {
	mods := ev.Modifiers()
	me := term.MouseEvent{X: x, Y: y,
		Shift: mods&tcell.ModShift != 0, Alt: mods&tcell.ModAlt != 0, Ctrl: mods&tcell.ModCtrl != 0}
	prev := t.buttons
	t.buttons = ev.Buttons() & (tcell.Button1 | tcell.Button2 | tcell.Button3)
	switch action {
	case tview.MouseLeftDown:
		me.Button = term.ButtonLeft
	case tview.MouseMiddleDown:
		me.Button = term.ButtonMiddle
	case tview.MouseRightDown:
		me.Button = term.ButtonRight
	case tview.MouseLeftUp:
		me.Button, me.Release = term.ButtonLeft, true
	case tview.MouseMiddleUp:
		me.Button, me.Release = term.ButtonMiddle, true
	case tview.MouseRightUp:
		me.Button, me.Release = term.ButtonRight, true
	case tview.MouseScrollUp:
		me.Button = term.ButtonWheelUp
	case tview.MouseScrollDown:
		me.Button = term.ButtonWheelDown
	case tview.MouseMove:
		me.Motion = true
		switch {
		case prev&tcell.Button1 != 0:
			me.Button = term.ButtonLeft
		case prev&tcell.Button2 != 0:
			me.Button = term.ButtonRight
		case prev&tcell.Button3 != 0:
			me.Button = term.ButtonMiddle
		default:
			me.Button = term.ButtonNone
		}
	default:
		return me, false
	}
	return me, true
}

// Focus reports focus-in to a child that asked for focus events.
func (t *Tile) Focus(delegate func(p tview.Primitive)) {
	t.Box.Focus(delegate)
	t.send(term.EncodeFocus(t.emu.InputModes(), true))
}

// Blur reports focus-out to a child that asked for focus events.
func (t *Tile) Blur() {
	t.Box.Blur()
	t.send(term.EncodeFocus(t.emu.InputModes(), false))
}
