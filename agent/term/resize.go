package term

// resize changes both screens. A new width reflows the main screen and
// its history (reflow.go); a new height alone moves rows between the
// screen and the scrollback so the cursor's row stays on screen, as tmux
// does.
func (e *Emulator) resize(w, h int) {
	oldH := e.h
	if w != e.w {
		e.reflow(w, h)
		// The alternate screen keeps its top rows, cut or padded (one
		// not made yet is made at the new size).
		if e.alt.rows != nil {
			alt := e.alt.rows[:min(h, len(e.alt.rows))]
			for len(alt) < h {
				alt = append(alt, row{cells: make([]Cell, e.w)})
			}
			for i := range alt {
				alt[i].cells = fitRow(alt[i].cells, w)
				if w < e.w {
					alt[i].wrapped = false
				}
			}
			e.alt.rows = alt
		}
		if e.cur == &e.alt && e.cy >= h {
			e.cy = h - 1
		}
	} else if h < oldH {
		// Drop blank rows below the cursor first, then push rows off the top.
		// While the alternate screen is up, the main screen's cursor is the
		// saved one.
		mainY := e.cy
		if e.cur != &e.main {
			mainY = e.saved.y
		}
		extra := oldH - h
		below := 0
		for y := oldH - 1; y > mainY && below < extra && rowBlank(e.main.rows[y].cells); y-- {
			below++
		}
		push := extra - below
		for i := 0; i < push; i++ {
			e.sb.push(e.main.rows[i])
		}
		e.main.rows = append(e.main.rows[:0:0], e.main.rows[push:push+h]...)
		if e.cur == &e.main {
			e.cy -= push
		} else {
			e.saved.y -= push
		}
		// The alternate screen keeps its top rows.
		e.alt.rows = e.alt.rows[:min(h, len(e.alt.rows))]
		if e.cur == &e.alt && e.cy >= h {
			e.cy = h - 1
		}
	} else if h > oldH {
		add := h - oldH
		pull := 0
		if e.cur == &e.main {
			pull = min(add, e.sb.len())
		}
		rows := make([]row, 0, h)
		for i := pull; i > 0; i-- {
			r := e.sb.pop()
			rows = append(rows, r)
		}
		// pop returns newest first.
		for i, j := 0, len(rows)-1; i < j; i, j = i+1, j-1 {
			rows[i], rows[j] = rows[j], rows[i]
		}
		for i := range rows {
			rows[i].cells = fitRow(rows[i].cells, e.w)
		}
		rows = append(rows, e.main.rows...)
		for len(rows) < h {
			rows = append(rows, row{cells: make([]Cell, e.w)})
		}
		e.main.rows = rows
		if e.cur == &e.main {
			e.cy += pull
		}
		for e.alt.rows != nil && len(e.alt.rows) < h {
			e.alt.rows = append(e.alt.rows, row{cells: make([]Cell, e.w)})
		}
	}
	e.saved.y = clamp(e.saved.y, 0, h-1)
	e.altSaved.y = clamp(e.altSaved.y, 0, h-1)
	e.saved.x = clamp(e.saved.x, 0, w-1)
	e.altSaved.x = clamp(e.altSaved.x, 0, w-1)
	e.w, e.h = w, h
	e.top, e.bot = 0, h-1
	oldTabs := e.tabs
	e.tabs = make([]bool, w)
	copy(e.tabs, oldTabs)
	for i := len(oldTabs); i < w; i++ {
		e.tabs[i] = i%8 == 0 && i > 0
	}
	e.cx = clamp(e.cx, 0, w-1)
	e.cy = clamp(e.cy, 0, h-1)
	e.wrapNext = false
}

// fitRow returns cells resized to w, cutting a wide character split by the
// new edge.
func fitRow(c []Cell, w int) []Cell {
	if len(c) == w {
		return c
	}
	if len(c) > w {
		c = c[:w:w]
		if w > 0 && c[w-1].Attr&AttrWide != 0 {
			c[w-1] = Cell{}
		}
		return c
	}
	n := make([]Cell, w)
	copy(n, c)
	return n
}

func rowBlank(c []Cell) bool {
	for i := range c {
		if !c[i].blank() {
			return false
		}
	}
	return true
}
