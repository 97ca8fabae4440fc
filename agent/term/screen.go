package term

import "unicode/utf8"

// row is one screen line. wrapped says the text continues on the next row
// because the cursor wrapped at the right edge, so plain-text extraction
// can join it back into one logical line.
type row struct {
	cells   []Cell
	wrapped bool
	gen     uint64 // Emulator.gen when its cells last changed (changed.go)
}

type screen struct {
	rows []row
	// text is each row's plain text, untrimmed, as of generation
	// textGen (screenText); textW the width it was taken at.
	text    []string
	textGen uint64
	textW   int
}

func (s *screen) init(w, h int) {
	s.rows = make([]row, h)
	for i := range s.rows {
		s.rows[i].cells = make([]Cell, w)
	}
}

func (s *screen) clear(fill Cell) {
	for i := range s.rows {
		fillCells(s.rows[i].cells, fill)
		s.rows[i].wrapped = false
	}
}

func fillCells(c []Cell, fill Cell) {
	for i := range c {
		c[i] = fill
	}
}

// eraseCell is what erasing leaves behind: the current background only
// (back-colour erase), as xterm and tmux do.
func (e *Emulator) eraseCell() Cell {
	return Cell{Bg: e.pen.Bg}
}

// fixWide blanks the other half of a wide character when x is about to be
// overwritten, so no half character survives.
func fixWide(cells []Cell, x int, fill Cell) {
	if x < 0 || x >= len(cells) {
		return
	}
	c := cells[x]
	if c.Attr&AttrWideCont != 0 && x > 0 {
		cells[x-1] = fill
	}
	if c.Attr&AttrWide != 0 && x+1 < len(cells) {
		cells[x+1] = fill
	}
}

// fixWideRange repairs wide characters cut by an edit of cells [x0, x1).
func fixWideRange(cells []Cell, x0, x1 int, fill Cell) {
	if x0 < len(cells) && x0 >= 0 && cells[x0].Attr&AttrWideCont != 0 && x0 > 0 {
		cells[x0-1] = fill
	}
	if x1 > 0 && x1-1 < len(cells) && cells[x1-1].Attr&AttrWide != 0 && x1 < len(cells) {
		cells[x1] = fill
	}
}

// printASCII writes a run of printable ASCII bytes. It is the hot path for
// most output, so it fills cells directly when no mode needs per-character
// handling.
func (e *Emulator) printASCII(run []byte) {
	if e.modes.insert || e.activeGraphics() {
		for _, b := range run {
			e.print(rune(b))
		}
		return
	}
	for len(run) > 0 {
		if e.wrapNext {
			e.wrapLine()
		}
		e.mark(e.cy)
		cells := e.cur.rows[e.cy].cells
		space := e.w - e.cx
		n := len(run)
		if n > space {
			n = space
		}
		fixWideRange(cells, e.cx, e.cx+n, e.eraseCell())
		pen := e.pen
		pen.comb = 0
		dst := cells[e.cx : e.cx+n]
		for i, b := range run[:n] {
			pen.Rune = rune(b)
			dst[i] = pen
		}
		e.lastRune = rune(run[n-1])
		run = run[n:]
		e.cx += n
		if e.cx >= e.w {
			e.cx = e.w - 1
			if e.modes.autowrap {
				e.wrapNext = true
			} else if len(run) > 0 {
				// Without autowrap the rest lands on the last column.
				cells[e.cx].Rune = rune(run[len(run)-1])
				e.lastRune = cells[e.cx].Rune
				return
			}
		}
	}
}

func (e *Emulator) activeGraphics() bool {
	if e.shiftOut {
		return e.charsets[1]
	}
	return e.charsets[0]
}

// decGraphics maps the DEC special graphics set to the box-drawing
// characters it stands for.
var decGraphics = map[rune]rune{
	'`': '◆', 'a': '▒', 'b': '␉', 'c': '␌', 'd': '␍', 'e': '␊', 'f': '°', 'g': '±',
	'h': '␤', 'i': '␋', 'j': '┘', 'k': '┐', 'l': '┌', 'm': '└', 'n': '┼', 'o': '⎺',
	'p': '⎻', 'q': '─', 'r': '⎼', 's': '⎽', 't': '├', 'u': '┤', 'v': '┴', 'w': '┬',
	'x': '│', 'y': '≤', 'z': '≥', '{': 'π', '|': '≠', '}': '£', '~': '·',
}

// print writes one character at the cursor.
func (e *Emulator) print(r rune) {
	if r < 0x80 && e.activeGraphics() {
		if g, ok := decGraphics[r]; ok {
			r = g
		}
	}
	w := 1
	if r >= 0x80 {
		w = runeWidth(r)
	}
	if w == 0 {
		e.combine(r)
		return
	}
	if e.wrapNext {
		e.wrapLine()
	}
	if w == 2 && e.cx == e.w-1 {
		if e.w < 2 {
			return // a one-column screen cannot show it
		}
		if e.modes.autowrap {
			e.mark(e.cy)
			fixWide(e.cur.rows[e.cy].cells, e.cx, e.eraseCell())
			e.cur.rows[e.cy].cells[e.cx] = e.eraseCell()
			e.wrapLine()
		} else {
			e.cx--
		}
	}
	e.mark(e.cy)
	cells := e.cur.rows[e.cy].cells
	if e.modes.insert {
		e.insertBlanks(w)
	}
	fill := e.eraseCell()
	fixWide(cells, e.cx, fill)
	c := e.pen
	c.Rune = r
	c.comb = 0
	c.Attr &^= attrLayout
	if w == 2 {
		fixWide(cells, e.cx+1, fill)
		c.Attr |= AttrWide
		cells[e.cx] = c
		cont := e.pen
		cont.Rune = 0
		cont.comb = 0
		cont.Attr = cont.Attr&^attrLayout | AttrWideCont
		cells[e.cx+1] = cont
	} else {
		cells[e.cx] = c
	}
	e.lastRune = r
	e.cx += w
	if e.cx >= e.w {
		e.cx = e.w - 1
		if e.modes.autowrap {
			e.wrapNext = true
		}
	}
}

// combine attaches a zero-width character (combining mark, variation
// selector, joiner) to the character before the cursor.
func (e *Emulator) combine(r rune) {
	x := e.cx - 1
	if e.wrapNext {
		x = e.cx
	}
	e.mark(e.cy)
	cells := e.cur.rows[e.cy].cells
	if x < 0 || x >= len(cells) {
		return
	}
	if cells[x].Attr&AttrWideCont != 0 && x > 0 {
		x--
	}
	c := &cells[x]
	if c.Rune == 0 {
		return
	}
	var buf [64]byte
	s := append(buf[:0], e.cellString(*c)...)
	if len(s) > 32 {
		return // pathological stacks of marks are dropped
	}
	var rb [4]byte
	n := utf8.EncodeRune(rb[:], r)
	s = append(s, rb[:n]...)
	ix, ok := e.clusterIx[string(s)]
	if !ok {
		if len(e.clusters) >= 0xfffe {
			return
		}
		if e.clusterIx == nil {
			e.clusterIx = make(map[string]uint16)
		}
		e.clusters = append(e.clusters, string(s))
		ix = uint16(len(e.clusters))
		e.clusterIx[string(s)] = ix
	}
	c.comb = ix
}

// cellString returns the text of a cell: its rune, or its whole grapheme.
func (e *Emulator) cellString(c Cell) string {
	if c.comb != 0 && int(c.comb) <= len(e.clusters) {
		return e.clusters[c.comb-1]
	}
	if c.Rune == 0 {
		return " "
	}
	return string(c.Rune)
}

// wrapLine moves to the start of the next line after a pending wrap.
func (e *Emulator) wrapLine() {
	e.wrapNext = false
	e.cur.rows[e.cy].wrapped = true
	e.cx = 0
	e.lineFeed()
}

// lineFeed moves down one row, scrolling at the bottom margin.
func (e *Emulator) lineFeed() {
	e.wrapNext = false
	if e.cy == e.bot {
		e.scrollUp(e.top, e.bot, 1)
	} else if e.cy < e.h-1 {
		e.cy++
	}
}

// reverseIndex moves up one row, scrolling down at the top margin.
func (e *Emulator) reverseIndex() {
	e.wrapNext = false
	if e.cy == e.top {
		e.scrollDown(e.top, e.bot, 1)
	} else if e.cy > 0 {
		e.cy--
	}
}

// scrollUp moves rows top..bot up by n. Rows leaving a full-screen region of
// the main screen go to the scrollback, as in tmux and xterm.
func (e *Emulator) scrollUp(top, bot, n int) {
	if n <= 0 || top > bot {
		return
	}
	if n > bot-top+1 {
		n = bot - top + 1
	}
	rows := e.cur.rows
	toHistory := e.cur == &e.main && top == 0 && bot == e.h-1
	fill := e.eraseCell()
	for i := 0; i < n; i++ {
		if toHistory {
			e.sb.push(rows[top+i])
		}
	}
	// Rotate the row headers so no cells are copied.
	var tmp [64]row
	var gone []row
	if n <= len(tmp) {
		gone = tmp[:n]
	} else {
		gone = make([]row, n)
	}
	copy(gone, rows[top:top+n])
	copy(rows[top:], rows[top+n:bot+1])
	copy(rows[bot+1-n:bot+1], gone)
	for i := bot + 1 - n; i <= bot; i++ {
		fillCells(rows[i].cells, fill)
		rows[i].wrapped = false
	}
	e.markRange(top, bot)
}

// scrollDown moves rows top..bot down by n, blank rows entering at top.
func (e *Emulator) scrollDown(top, bot, n int) {
	if n <= 0 || top > bot {
		return
	}
	if n > bot-top+1 {
		n = bot - top + 1
	}
	rows := e.cur.rows
	fill := e.eraseCell()
	var tmp [64]row
	var gone []row
	if n <= len(tmp) {
		gone = tmp[:n]
	} else {
		gone = make([]row, n)
	}
	copy(gone, rows[bot+1-n:bot+1])
	copy(rows[top+n:bot+1], rows[top:bot+1-n])
	copy(rows[top:top+n], gone)
	for i := top; i < top+n; i++ {
		fillCells(rows[i].cells, fill)
		rows[i].wrapped = false
	}
	if top > 0 {
		rows[top-1].wrapped = false
	}
	e.markRange(top, bot)
}

// eraseCells blanks [x0, x1) of row y.
func (e *Emulator) eraseCells(y, x0, x1 int) {
	if x0 < 0 {
		x0 = 0
	}
	if x1 > e.w {
		x1 = e.w
	}
	if x0 >= x1 {
		return
	}
	e.mark(y)
	cells := e.cur.rows[y].cells
	fill := e.eraseCell()
	fixWideRange(cells, x0, x1, fill)
	fillCells(cells[x0:x1], fill)
	if x1 == e.w {
		e.cur.rows[y].wrapped = false
	}
}

// insertBlanks shifts the rest of the line right by n from the cursor (ICH).
func (e *Emulator) insertBlanks(n int) {
	e.mark(e.cy)
	cells := e.cur.rows[e.cy].cells
	x := e.cx
	if n > e.w-x {
		n = e.w - x
	}
	if n <= 0 {
		return
	}
	fill := e.eraseCell()
	fixWide(cells, x, fill)
	// A wide character pushed half off the edge is cut.
	if e.w-n-1 >= x && cells[e.w-n-1].Attr&AttrWide != 0 {
		cells[e.w-n-1] = fill
	}
	copy(cells[x+n:], cells[x:e.w-n])
	fillCells(cells[x:x+n], fill)
}

// deleteCells removes n cells at the cursor, pulling the rest left (DCH).
func (e *Emulator) deleteCells(n int) {
	e.mark(e.cy)
	cells := e.cur.rows[e.cy].cells
	x := e.cx
	if n > e.w-x {
		n = e.w - x
	}
	if n <= 0 {
		return
	}
	fill := e.eraseCell()
	fixWideRange(cells, x, x+n, fill)
	copy(cells[x:], cells[x+n:])
	fillCells(cells[e.w-n:], fill)
}

// moveTo places the cursor, honouring origin mode when origin is true.
func (e *Emulator) moveTo(x, y int, origin bool) {
	if origin && e.modes.origin {
		y += e.top
		if y > e.bot {
			y = e.bot
		}
		if y < e.top {
			y = e.top
		}
	}
	e.cx = clamp(x, 0, e.w-1)
	e.cy = clamp(y, 0, e.h-1)
	e.wrapNext = false
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// switchScreen enters or leaves the alternate screen.
func (e *Emulator) switchScreen(alt, clearAlt bool) {
	if alt == (e.cur == &e.alt) {
		return
	}
	if alt {
		if e.alt.rows == nil {
			e.alt.init(e.w, e.h) // blank, as it was at the start
		}
		e.cur = &e.alt
		if clearAlt {
			e.alt.clear(e.eraseCell())
		}
	} else {
		if clearAlt {
			e.alt.clear(Cell{})
		}
		e.cur = &e.main
	}
	e.modes.altScreen = alt
	e.wrapNext = false
	e.markAll()
}

func (e *Emulator) saveCursor() {
	s := savedCursor{
		x: e.cx, y: e.cy, wrapNext: e.wrapNext, pen: e.pen, origin: e.modes.origin,
		charsets: e.charsets, shiftOut: e.shiftOut, valid: true,
	}
	if e.cur == &e.alt {
		e.altSaved = s
	} else {
		e.saved = s
	}
}

func (e *Emulator) restoreCursor() {
	s := e.saved
	if e.cur == &e.alt {
		s = e.altSaved
	}
	if !s.valid {
		// xterm: restoring with nothing saved homes the cursor and resets
		// the attributes.
		e.pen = Cell{}
		e.modes.origin = false
		e.moveTo(0, 0, false)
		return
	}
	e.pen = s.pen
	e.modes.origin = s.origin
	e.charsets = s.charsets
	e.shiftOut = s.shiftOut
	e.cx = clamp(s.x, 0, e.w-1)
	e.cy = clamp(s.y, 0, e.h-1)
	e.wrapNext = s.wrapNext && e.cx == e.w-1
}
