package term

import (
	"strconv"
	"strings"
	"time"
)

// Tap hears, in order, everything that changes an emulator from outside:
// the bytes written to it and its resizes. Both funcs run under the
// emulator's lock, so they must be quick (copy and wake) and must not call
// back into the emulator; p is only valid during the call.
type Tap struct {
	Output func(p []byte)
	Resize func(w, h int)
}

// Parts is an emulator's state without its history, for a copy in
// another process that shows the screen at once and reads the history
// only when it is wanted (History, LoadHistory).
type Parts struct {
	W, H       int
	Scrollback int    // the history's limit, for the copy's
	Pushed     uint64 // rows ever pushed into the history, so rows keep their numbers
	// Screen is the bytes that rebuild everything but the history (both
	// screens, cursor, modes, title) when written to a fresh emulator.
	Screen []byte
}

// FromParts is a copy of the emulator p was taken from, its history
// empty until LoadHistory.
func FromParts(p Parts, opts ...Option) *Emulator {
	e := New(p.W, p.H, append([]Option{WithScrollback(p.Scrollback)}, opts...)...)
	_, _ = e.Write(p.Screen)
	e.mu.Lock()
	e.sb.total = p.Pushed
	e.mu.Unlock()
	return e
}

// Attach calls first with the emulator's size and its state rendered as
// bytes that rebuild it (history, both screens, cursor, modes, title)
// when written to a fresh emulator of that size, and from then on hands
// tap every write and resize: a remote copy fed the state and then the
// tap's stream stays identical to this one (history rows wider than the
// screen, left by a narrowing resize, are cut to its width). first runs
// under the emulator's lock, so nothing is written between the state and
// the tap's first bytes. The returned func removes the tap.
func (e *Emulator) Attach(t *Tap, first func(w, h int, state []byte)) (detach func()) {
	return e.attach(t, func() { first(e.w, e.h, e.render(true)) }, false)
}

// AttachParts is Attach with the state as Parts: no history. first runs
// at once, whatever the input is in the middle of (a tracker that counts
// bytes from here on needs exactly this point).
func (e *Emulator) AttachParts(t *Tap, first func(Parts)) (detach func()) {
	return e.attach(t, e.partsFor(first), false)
}

// AttachPartsAtRest is AttachParts for a copy made elsewhere: when the
// input is in the middle of a sequence ("\x1b[3" of "\x1b[31m", an OSC,
// a UTF-8 character), first and the tap wait for the write that ends it
// (at most attachWait), so the copy never takes the sequence's second half
// for text. first may then run on the writer's goroutine, under the lock.
func (e *Emulator) AttachPartsAtRest(t *Tap, first func(Parts)) (detach func()) {
	return e.attach(t, e.partsFor(first), true)
}

func (e *Emulator) partsFor(first func(Parts)) func() {
	return func() {
		first(Parts{W: e.w, H: e.h, Scrollback: e.sb.max, Pushed: e.sb.total, Screen: e.render(false)})
	}
}

// History calls fn with the main screen's history packed, for a copy's
// LoadHistory. fn runs under the emulator's lock, as a tap does, so what
// it queues is in order with the tap's stream.
func (e *Emulator) History(fn func(packed []byte)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	fn(e.sb.export(e.clusters))
}

// OnWantHistory sets fn to be called, once, when a reader first wants
// the history (WantHistory): a copy fetches it then. fn runs outside the
// emulator's lock and must not block.
func (e *Emulator) OnWantHistory(fn func()) {
	e.mu.Lock()
	e.wantHistory = fn
	e.mu.Unlock()
}

// WantHistory says a reader is about to look at the history (scrolling
// back, copy mode).
func (e *Emulator) WantHistory() {
	e.mu.Lock()
	fn := e.wantHistory
	e.wantHistory = nil
	if fn != nil {
		e.historyPending = true
	}
	e.mu.Unlock()
	if fn != nil {
		fn()
	}
}

// HistoryPending reports whether the history was wanted and has not been
// loaded yet.
func (e *Emulator) HistoryPending() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.historyPending
}

func (e *Emulator) attach(t *Tap, first func(), atRest bool) (detach func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !atRest || e.atRest() {
		first()
		e.taps = append(e.taps, t)
	} else {
		// In the middle of a sequence, a copy made now would take the
		// sequence's second half for text: wait for the write that ends
		// it, or give up after attachWait (a sequence left unfinished).
		w := &waitingTap{t: t, first: first}
		e.waiting = append(e.waiting, w)
		time.AfterFunc(attachWait, func() {
			e.mu.Lock()
			e.startTap(w)
			e.mu.Unlock()
		})
	}
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		for i, x := range e.taps {
			if x == t {
				e.taps = append(e.taps[:i:i], e.taps[i+1:]...)
				break
			}
		}
		for i, w := range e.waiting {
			if w.t == t {
				e.waiting = append(e.waiting[:i:i], e.waiting[i+1:]...)
				break
			}
		}
	}
}

// attachWait bounds how long an attach waits for a sequence to end.
const attachWait = 250 * time.Millisecond

// waitingTap is an attach waiting for the input to come to rest.
type waitingTap struct {
	t     *Tap
	first func()
}

// startTap gives a waiting tap its first state and the stream from then
// on, unless it was started or detached already. Caller holds e.mu.
func (e *Emulator) startTap(w *waitingTap) {
	for i, x := range e.waiting {
		if x == w {
			e.waiting = append(e.waiting[:i:i], e.waiting[i+1:]...)
			w.first()
			e.taps = append(e.taps, w.t)
			return
		}
	}
}

// State is the bytes that rebuild this emulator, history included, when
// written to a fresh emulator of w×h (history rows wider than the screen,
// left by a narrowing resize, are cut to its width).
func (e *Emulator) State() (w, h int, state []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.w, e.h, e.render(true)
}

// LoadHistory puts a history packed by History in place of this
// emulator's (a copy's, at the same point of the stream: the rows it
// pushed itself since FromParts are the newest of it).
func (e *Emulator) LoadHistory(p []byte) error {
	e.mu.Lock()
	err := e.sb.load(p, e.internCluster)
	e.historyPending = false
	e.markAll()
	e.mu.Unlock()
	e.setDirty()
	return err
}

// render writes the state as a byte stream for a fresh emulator of the same
// size. Rows are written top to bottom, the history first when hist, so
// the rows that scroll off land in the copy's history in the same order.
// Caller holds e.mu.
func (e *Emulator) render(hist bool) []byte {
	r := renderer{e: e}
	b := &r.b
	b.WriteString("\x1b[0m\x1b[H")
	nh := 0
	if hist {
		nh = e.sb.len()
	}
	n := nh + len(e.main.rows)
	for i := 0; i < n; i++ {
		var rw row
		if i < nh {
			rw = e.sb.at(i)
		} else {
			rw = e.main.rows[i-nh]
		}
		last := i == n-1
		r.line(rw.cells, rw.wrapped && !last, last)
	}
	if e.cur == &e.alt {
		// The main screen's cursor was saved on entering the alternate
		// screen; put it there so 1049's save picks it up again.
		// Its pen too, which 1049l restores.
		if e.saved.valid {
			r.cup(e.saved.x, e.saved.y)
			r.setPen(sgrOf(e.saved.pen))
		}
		b.WriteString("\x1b[?1049h")
		r.setPen("\x1b[0m")
		b.WriteString("\x1b[2J")
		for y := 0; y < e.h; y++ {
			r.cup(0, y)
			r.cells(e.alt.rows[y].cells, false)
		}
	}
	if e.top != 0 || e.bot != e.h-1 {
		b.WriteString("\x1b[" + strconv.Itoa(e.top+1) + ";" + strconv.Itoa(e.bot+1) + "r")
	}
	m := e.modes
	set := func(on bool, seq string) {
		if on {
			b.WriteString(seq)
		}
	}
	set(m.origin, "\x1b[?6h")
	oy := 0
	if m.origin {
		oy = e.top
	}
	r.cup(e.cx, e.cy-oy)
	if e.wrapNext && m.autowrap && e.cx == e.w-1 {
		// A pending wrap: print the last cell again so the next character
		// wraps as it would have.
		cells := e.cur.rows[e.cy].cells
		x0 := e.w - 1
		if x0 > 0 && cells[x0].Attr&AttrWideCont != 0 {
			x0--
		}
		r.cup(x0, e.cy-oy)
		r.cells(cells[x0:e.w], true)
	}
	set(!m.autowrap, "\x1b[?7l")
	set(m.insert, "\x1b[4h")
	set(m.newline, "\x1b[20h")
	set(m.cursorHidden, "\x1b[?25l")
	set(m.appCursor, "\x1b[?1h")
	set(m.appKeypad, "\x1b=")
	set(m.bracketed, "\x1b[?2004h")
	set(m.focus, "\x1b[?1004h")
	set(m.mouseSGR, "\x1b[?1006h")
	set(m.reverse, "\x1b[?5h")
	set(m.cursorBlink, "\x1b[?12h")
	switch m.mouse {
	case MouseX10:
		b.WriteString("\x1b[?9h")
	case MouseNormal:
		b.WriteString("\x1b[?1000h")
	case MouseButton:
		b.WriteString("\x1b[?1002h")
	case MouseAny:
		b.WriteString("\x1b[?1003h")
	}
	if m.modifyOther != 0 {
		b.WriteString("\x1b[>4;" + strconv.Itoa(m.modifyOther) + "m")
	}
	if e.cursorStyle != 0 {
		b.WriteString("\x1b[" + strconv.Itoa(e.cursorStyle) + " q")
	}
	if e.title != "" {
		b.WriteString("\x1b]2;" + e.title + "\x07")
	}
	b.WriteString(sgrOf(e.pen))
	return []byte(b.String())
}

type renderer struct {
	e   *Emulator
	b   strings.Builder
	pen string // the SGR last written
}

// line writes one row of the main screen (history first) and moves to the
// next one. A wrapped row is filled to the width so that the next printed
// character wraps onto the following row exactly as it did the first time
// (forced with a space, so the wrap does not depend on what follows).
func (r *renderer) line(cells []Cell, wrapped, last bool) {
	w := r.e.w
	if len(cells) > w {
		cells = cells[:w]
	}
	if wrapped {
		// History rows are stored without trailing blanks: pad them.
		r.cells(fitRow(cells, w), true)
		// Wrap now, with the default pen: a row that scrolls in is
		// filled with the pen's background. The space is overwritten
		// by the next row.
		r.setPen("\x1b[0m")
		r.b.WriteString(" \b")
		return
	}
	r.cells(cells, false)
	if !last {
		r.setPen("\x1b[0m")
		r.b.WriteString("\r\n")
	}
}

// trimmed is how many of cells are written: trailing untouched cells are not.
func (r *renderer) trimmed(cells []Cell) int {
	n := len(cells)
	for n > 0 && plain(cells[n-1]) {
		n--
	}
	return n
}

// cells writes a run of cells; all says to write trailing blanks too.
func (r *renderer) cells(cells []Cell, all bool) {
	n := len(cells)
	if !all {
		n = r.trimmed(cells)
	}
	for _, c := range cells[:n] {
		if c.Attr&AttrWideCont != 0 {
			continue // its wide left half printed both columns
		}
		r.setPen(sgrOf(c))
		switch {
		case c.comb != 0 && int(c.comb) <= len(r.e.clusters):
			r.b.WriteString(r.e.clusters[c.comb-1])
		case c.Rune == 0 || c.Rune < ' ' || c.Rune == 0x7f:
			r.b.WriteByte(' ')
		default:
			r.b.WriteRune(c.Rune)
		}
	}
}

// plain: a cell nothing was drawn in (a coloured space is kept: the copy
// compares equal cell by cell).
func plain(c Cell) bool {
	return (c.Rune == 0 || c.Rune == ' ') && c.Fg == DefaultColor && c.Bg == DefaultColor && c.Attr == 0 && c.comb == 0
}

func (r *renderer) setPen(s string) {
	if s != r.pen {
		r.b.WriteString(s)
		r.pen = s
	}
}

func (r *renderer) cup(x, y int) {
	r.b.WriteString("\x1b[" + strconv.Itoa(y+1) + ";" + strconv.Itoa(x+1) + "H")
}

// sgrOf is the SGR sequence that sets exactly c's attributes and colours.
func sgrOf(c Cell) string {
	var b strings.Builder
	b.WriteString("\x1b[0")
	for _, a := range []struct {
		bit  Attr
		code string
	}{{AttrBold, "1"}, {AttrFaint, "2"}, {AttrItalic, "3"}, {AttrUnderline, "4"}, {AttrBlink, "5"},
		{AttrReverse, "7"}, {AttrInvisible, "8"}, {AttrStrike, "9"}, {AttrOverline, "53"}} {
		if c.Attr&a.bit != 0 {
			b.WriteString(";" + a.code)
		}
	}
	color(&b, c.Fg, 30, 90, "38")
	color(&b, c.Bg, 40, 100, "48")
	b.WriteString("m")
	return b.String()
}

func color(b *strings.Builder, c Color, base, bright int, ext string) {
	if c.IsDefault() {
		return
	}
	if i, ok := c.Index(); ok {
		switch {
		case i < 8:
			b.WriteString(";" + strconv.Itoa(base+int(i)))
		case i < 16:
			b.WriteString(";" + strconv.Itoa(bright+int(i)-8))
		default:
			b.WriteString(";" + ext + ";5;" + strconv.Itoa(int(i)))
		}
		return
	}
	if rr, g, bl, ok := c.RGB(); ok {
		b.WriteString(";" + ext + ";2;" + strconv.Itoa(int(rr)) + ";" + strconv.Itoa(int(g)) + ";" + strconv.Itoa(int(bl)))
	}
}
