package tile

import "github.com/gdamore/tcell/v2"

// blank tells tcell's buffer that the terminal shows blanks: the first
// frame clears the screen (attributes off first, so the blanks are in the
// default style), and neither the painter nor tcell's Show then writes a
// cell that stays blank. tcell starts with every cell unshown, and its
// first Show wrote a space for each blank one: 200x60 of them cost an
// attach about 3 ms and three quarters of its first frame's bytes.
func (p *Painter) blank() {
	if p.ti.Clear == "" {
		return
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	w, h := p.cells.Size()
	for y := range h {
		for x := range w {
			if str, st, _ := p.cells.Get(x, y); str == " " && st == tcell.StyleDefault {
				p.cells.SetDirty(x, y, false)
			}
		}
	}
	p.clear = true
}

// paintUnshown queues every cell tcell's buffer has not shown (what
// tview drew: boxes, the header, lists) as tcell's Show would send it,
// and marks it shown, so the frame goes out in one write. tcell's Show
// formats each cell through its terminfo interpreter and character-set
// encoder: for a first frame's chrome that took milliseconds after the
// tiles were out. Cells whose style the painter does not speak (links,
// underline colours or shapes) and a bottom-right cell tcell writes with
// care (corner) stay for tcell.
func (p *Painter) paintUnshown() {
	if !p.tcellDirty {
		return
	}
	p.lock.Lock()
	defer p.lock.Unlock()
	if len(p.touched) > 0 {
		p.syncLocked()
	}
	w, h := p.cells.Size()
	if len(p.shadow) != w*h {
		p.shadow = make([]shadowCell, w*h)
	}
	left := false
	for y := range h {
		for x := 0; x < w; x++ {
			str, st, width := p.cells.Get(x, y)
			if !p.cells.Dirty(x, y) || p.corner(x, y, w, h) || !spoken(st) {
				left = left || p.cells.Dirty(x, y)
				// As tcell's walk: the cell a wide character covers is
				// its, even when marked unshown.
				x += width - 1
				continue
			}
			p.cells.SetDirty(x, y, false)
			width = p.emit(x, y, w, str, st, width)
			if width > 1 {
				// As tcell: the cell a wide character covers is drawn
				// again if the character goes.
				p.cells.SetDirty(x+1, y, true)
				x += width - 1
			}
		}
	}
	p.tcellDirty = left
}

// spoken reports whether the painter sets st as tcell would: no link, a
// plain underline if any, in the text's colour.
func spoken(st tcell.Style) bool {
	if st.Url("") != st || st.GetUnderlineColor() != tcell.ColorDefault {
		return false
	}
	_, _, attrs := st.Decompose()
	u := st.GetUnderlineStyle()
	return (u == tcell.UnderlineStyleNone && attrs&tcell.AttrUnderline == 0) ||
		(u == tcell.UnderlineStyleSolid && attrs&tcell.AttrUnderline != 0)
}

// begin starts a frame in an empty buffer: a synchronized update, the
// cursor hidden, and on the first frame the clear blank promised.
func (p *Painter) begin() {
	if p.buf.Len() > 0 {
		return
	}
	if p.ti.XTermLike {
		p.buf.WriteString("\x1b[?2026h") // as tcell: the frame appears at once
	}
	p.buf.WriteString(p.ti.HideCursor)
	if p.clear {
		p.clear = false
		p.ti.TPuts(&p.buf, p.ti.AttrOff)
		p.ti.TPuts(&p.buf, p.ti.Clear)
	}
	p.cx, p.cy, p.curOK = -1, -1, false
}

// skipBlanks moves the cursor a few cells right on its row by writing
// spaces, where the terminal shows spaces in the current style: shorter
// than a cursor motion (about 7 bytes), and a first frame of text on a
// cleared screen skips each gap between words. It reports whether it
// did. Caller holds the lock.
func (p *Painter) skipBlanks(x, y, w int) bool {
	n := x - p.cx
	if y != p.cy || p.cx < 0 || n <= 0 || n > 5 || !p.curOK {
		return false
	}
	for i := p.cx; i < x; i++ {
		if !p.showsBlank(i, y, w) {
			return false
		}
	}
	for range n {
		p.buf.WriteByte(' ')
	}
	p.cx = x
	return true
}

// showsBlank reports whether the terminal shows a space in the current
// style at (x, y): painted so this frame or before (the shadow), or
// shown by tcell's buffer.
func (p *Painter) showsBlank(x, y, w int) bool {
	if i := y*w + x; i < len(p.shadow) && p.shadow[i].set {
		return p.shadow[i].str == " " && p.shadow[i].style == p.cur
	}
	if p.cells.Dirty(x, y) {
		return false // not shown yet: the terminal's cell is not known here
	}
	str, st, width := p.cells.Get(x, y)
	return str == " " && width == 1 && st == p.cur
}
