package term

// Rows of the main screen's history and screen by number, for a reader
// that walks them (copy mode): history rows are numbered from 0 as they
// were first scrolled off (as TextSince numbers them), and the screen's row
// y is number Pushed()+y, so a number keeps naming the same text while
// output scrolls it into the history.

// RowSpan returns the numbers of the oldest kept history row and one past
// the screen's last row. While the alternate screen is up only its rows
// count: it has no history (as in tmux's copy mode).
func (e *Emulator) RowSpan() (first, end uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cur == &e.alt {
		return e.sb.total, e.sb.total + uint64(e.h)
	}
	return e.sb.total - uint64(e.sb.len()), e.sb.total + uint64(e.h)
}

// RowText returns row n's cells as text, one string per column (the right
// half of a wide character is ""; an unwritten cell " "), and whether the
// text continues on the next row. ok is false for a row no longer kept.
func (e *Emulator) RowText(n uint64) (cols []string, wrapped, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	first := e.sb.total - uint64(e.sb.len())
	var r row
	switch {
	case n < first, n < e.sb.total && e.cur == &e.alt:
		return nil, false, false
	case n < e.sb.total:
		r = e.sb.at(int(n - first))
	case n < e.sb.total+uint64(e.h):
		r = e.cur.rows[n-e.sb.total]
	default:
		return nil, false, false
	}
	cols = make([]string, e.w)
	for x := range cols {
		cols[x] = " "
		if x >= len(r.cells) {
			continue
		}
		c := r.cells[x]
		switch {
		case c.Attr&AttrWideCont != 0:
			cols[x] = ""
		case c.comb != 0:
			cols[x] = e.cellString(c)
		case c.Rune != 0:
			cols[x] = string(c.Rune)
		}
	}
	return cols, r.wrapped, true
}
