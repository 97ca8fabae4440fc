package tile

import (
	"strings"
	"unicode"

	"github.com/gdamore/tcell/v2"
)

// copyMode is a tile's copy mode, as tmux's: a cursor over the history and
// screen that the keyboard moves, a search, and a selection copied out.
// Rows are named by their emulator row numbers (term.Emulator.RowText), so
// the view stays on the same text while output scrolls.
type copyMode struct {
	top      uint64 // row number shown on the tile's first row
	cy       uint64 // cursor row number
	cx       int
	sel      bool // a selection runs from the anchor to the cursor
	ay       uint64
	ax       int
	typing   bool   // the search prompt is open
	query    string // the search text
	back     bool   // the search runs toward older rows
	msg      string // what the last key did, shown in the title
	onCopy   func(text string)
	lastView int // rows in the view at the last draw
}

// EnterCopy starts copy mode at the view the tile shows now, the cursor
// on the child's cursor (or the view's last row when scrolled back).
// onCopy receives the selected text when the user copies it.
func (t *Tile) EnterCopy(onCopy func(text string)) {
	t.emu.WantHistory()
	t.emu.Snapshot(&t.snap, t.offset)
	s := &t.snap
	top := s.Pushed - uint64(s.Offset)
	c := &copyMode{top: top, onCopy: onCopy, lastView: max(s.H, 1)}
	if s.Offset == 0 {
		c.cy, c.cx = top+uint64(s.CursorY), s.CursorX
	} else {
		c.cy = top + uint64(max(s.H-1, 0))
	}
	t.copy = c
	t.emu.MarkDirty()
}

// InCopy reports whether the tile is in copy mode.
func (t *Tile) InCopy() bool { return t.copy != nil }

// LeaveCopy ends copy mode and returns to the live view.
func (t *Tile) LeaveCopy() {
	t.copy = nil
	t.offset = 0
	t.emu.MarkDirty()
}

// CopyKey handles a key in copy mode and reports whether copy mode goes
// on.
func (t *Tile) CopyKey(ev *tcell.EventKey) bool {
	c := t.copy
	if c == nil {
		return false
	}
	t.emu.MarkDirty()
	if c.typing {
		switch ev.Key() {
		case tcell.KeyEsc:
			c.typing, c.msg = false, ""
		case tcell.KeyEnter:
			c.typing = false
			t.search(c.back)
		case tcell.KeyBackspace, tcell.KeyBackspace2:
			if r := []rune(c.query); len(r) > 0 {
				c.query = string(r[:len(r)-1])
			}
		case tcell.KeyRune:
			c.query += string(ev.Rune())
		}
		return true
	}
	c.msg = ""
	view := c.lastView
	switch ev.Key() {
	case tcell.KeyEsc:
		t.LeaveCopy()
		return false
	case tcell.KeyEnter:
		return t.copyOut()
	case tcell.KeyUp:
		t.moveCursor(-1)
	case tcell.KeyDown:
		t.moveCursor(1)
	case tcell.KeyLeft:
		c.cx = max(c.cx-1, 0)
	case tcell.KeyRight:
		c.cx++
	case tcell.KeyPgUp, tcell.KeyCtrlB:
		t.moveCursor(-view)
	case tcell.KeyPgDn, tcell.KeyCtrlF:
		t.moveCursor(view)
	case tcell.KeyCtrlU:
		t.moveCursor(-max(view/2, 1))
	case tcell.KeyCtrlD:
		t.moveCursor(max(view/2, 1))
	case tcell.KeyHome:
		t.moveTo(0)
	case tcell.KeyEnd:
		t.moveTo(^uint64(0))
	case tcell.KeyRune:
		switch ev.Rune() {
		case 'q':
			t.LeaveCopy()
			return false
		case 'k':
			t.moveCursor(-1)
		case 'j':
			t.moveCursor(1)
		case 'h':
			c.cx = max(c.cx-1, 0)
		case 'l':
			c.cx++
		case 'g':
			t.moveTo(0)
		case 'G':
			t.moveTo(^uint64(0))
		case '0':
			c.cx = 0
		case '$':
			cols, _, _ := t.emu.RowText(c.cy)
			c.cx = max(len(strings.TrimRight(strings.Join(cols, ""), " "))-1, 0)
		case '/', '?':
			c.typing, c.back, c.query = true, ev.Rune() == '?', ""
		case 'n':
			t.search(c.back)
		case 'N':
			t.search(!c.back)
		case 'v', ' ':
			c.sel = !c.sel
			c.ay, c.ax = c.cy, c.cx
		case 'y':
			return t.copyOut()
		}
	}
	w, _ := t.emu.Size()
	c.cx = min(c.cx, max(w-1, 0))
	return true
}

// moveCursor moves the cursor d rows (negative: older), keeping it in the
// kept rows and the view on it.
func (t *Tile) moveCursor(d int) {
	c := t.copy
	y := int64(c.cy) + int64(d)
	first, end := t.emu.RowSpan()
	y = max(min(y, int64(end)-1), int64(first))
	t.moveTo(uint64(y))
}

// moveTo puts the cursor on row y (clamped) and scrolls the view to it.
func (t *Tile) moveTo(y uint64) {
	c := t.copy
	first, end := t.emu.RowSpan()
	y = max(min(y, end-1), first)
	c.cy = y
	if y < c.top {
		c.top = y
	}
	if h := uint64(max(c.lastView, 1)); y >= c.top+h {
		c.top = y - h + 1
	}
}

// search looks for the query from the cursor on (back: toward older rows),
// wrapping around, and moves the cursor to the match. A query in lower
// case matches any case.
func (t *Tile) search(back bool) {
	c := t.copy
	if c.query == "" {
		return
	}
	fold := strings.IndexFunc(c.query, unicode.IsUpper) < 0
	q := c.query
	if fold {
		q = strings.ToLower(q)
	}
	first, end := t.emu.RowSpan()
	n := end - first
	for i := uint64(0); i <= n; i++ {
		var y uint64
		if back {
			y = first + (c.cy-first+n-i)%n
		} else {
			y = first + (c.cy-first+i)%n
		}
		cols, _, ok := t.emu.RowText(y)
		if !ok {
			continue
		}
		text, at := rowString(cols)
		if fold {
			text = strings.ToLower(text)
		}
		// On the cursor's own row, only matches past (or before) it.
		x := -1
		switch {
		case i == 0 && !back:
			for j := strings.Index(text, q); j >= 0; {
				if at[j] > c.cx {
					x = at[j]
					break
				}
				k := strings.Index(text[j+1:], q)
				if k < 0 {
					break
				}
				j += 1 + k
			}
		case i == 0 && back:
			for j := strings.Index(text, q); j >= 0 && at[j] < c.cx; {
				x = at[j]
				k := strings.Index(text[j+1:], q)
				if k < 0 {
					break
				}
				j += 1 + k
			}
		case back:
			if j := strings.LastIndex(text, q); j >= 0 {
				x = at[j]
			}
		default:
			if j := strings.Index(text, q); j >= 0 {
				x = at[j]
			}
		}
		if x >= 0 {
			c.cx = x
			t.moveTo(y)
			return
		}
	}
	c.msg = "not found: " + c.query
}

// rowString joins a row's columns and maps each byte of the result to its
// column.
func rowString(cols []string) (string, []int) {
	var b strings.Builder
	var at []int
	for x, s := range cols {
		b.WriteString(s)
		for range len(s) {
			at = append(at, x)
		}
	}
	return b.String(), at
}

// copyOut hands the selection to onCopy and leaves copy mode; without a
// selection copy mode goes on.
func (t *Tile) copyOut() bool {
	c := t.copy
	if !c.sel {
		c.msg = "no selection: v starts one"
		return true
	}
	text := t.selection()
	if c.onCopy != nil {
		c.onCopy(text)
	}
	t.LeaveCopy()
	return false
}

// selectionSpan returns the selection's ends in reading order.
func (c *copyMode) selectionSpan() (y0 uint64, x0 int, y1 uint64, x1 int) {
	y0, x0, y1, x1 = c.ay, c.ax, c.cy, c.cx
	if y1 < y0 || (y1 == y0 && x1 < x0) {
		y0, x0, y1, x1 = y1, x1, y0, x0
	}
	return
}

// selection is the selected text: rows that wrapped joined, other rows
// ended by a newline, trailing blanks dropped.
func (t *Tile) selection() string {
	y0, x0, y1, x1 := t.copy.selectionSpan()
	var b strings.Builder
	for y := y0; y <= y1; y++ {
		cols, wrapped, ok := t.emu.RowText(y)
		if !ok {
			continue
		}
		from, to := 0, len(cols)
		if y == y0 {
			from = min(x0, len(cols))
		}
		if y == y1 {
			to = min(x1+1, len(cols))
		}
		part := strings.Join(cols[from:to], "")
		if y == y1 || !wrapped || to < len(cols) {
			part = strings.TrimRight(part, " ")
		}
		b.WriteString(part)
		if y < y1 && !wrapped {
			b.WriteByte('\n')
		}
	}
	return b.String()
}

// inSelection reports whether cell (x, y) is selected.
func (c *copyMode) inSelection(x int, y uint64) bool {
	if !c.sel {
		return false
	}
	y0, x0, y1, x1 := c.selectionSpan()
	if y < y0 || y > y1 {
		return false
	}
	if y == y0 && x < x0 {
		return false
	}
	return y != y1 || x <= x1
}

// copyTitle is the title's mark in copy mode.
func (c *copyMode) title() string {
	switch {
	case c.typing && c.back:
		return " [copy ?" + c.query + "]"
	case c.typing:
		return " [copy /" + c.query + "]"
	case c.msg != "":
		return " [copy: " + c.msg + "]"
	case c.sel:
		return " [copy: selecting]"
	}
	return " [copy]"
}

// drawCopy marks the copy cursor and the selection on the drawn frame.
func (t *Tile) drawCopy(screen tcell.Screen, x0, y0, w, h int) {
	c := t.copy
	for y := 0; y < h; y++ {
		n := c.top + uint64(y)
		for x := 0; x < w; x++ {
			if !(n == c.cy && x == c.cx) && !c.inSelection(x, n) {
				continue
			}
			str, st, _ := screen.Get(x0+x, y0+y)
			_, _, attr := st.Decompose()
			screen.Put(x0+x, y0+y, str, st.Reverse(attr&tcell.AttrReverse == 0))
		}
	}
}
