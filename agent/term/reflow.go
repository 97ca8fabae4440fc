package term

// reflow changes the main screen's width (and height) as tmux and xterm
// do: rows joined where the text wrapped are one line again, cut anew at
// width w, the history included; the cursor keeps its place in its line.
// The alternate screen is not reflowed: a full-screen child redraws it.
func (e *Emulator) reflow(w, h int) {
	onMain := e.cur == &e.main
	cx, cy := e.saved.x, e.saved.y
	if onMain {
		cx, cy = e.cx, e.cy
		if e.wrapNext {
			cx++ // the next character goes after the last column
		}
	}
	oldW, oldLen := e.w, e.sb.len()
	n := oldLen + len(e.main.rows)
	// The TextSince reader's first unread row (the screen's first row when
	// it has read all the history), to find where its text is cut anew.
	readAt, readRow := -1, 0
	if e.readValid {
		mark := e.readNext
		if e.floorSet {
			mark = e.readFloor
		}
		first := e.sb.total - uint64(oldLen)
		readAt = oldLen
		if mark < e.sb.total {
			readAt = int(max(mark, first) - first)
		}
	}
	at := func(i int) row {
		if i < oldLen {
			return e.sb.at(i) // valid until the next at: copied below
		}
		return e.main.rows[i-oldLen]
	}
	// Blank rows below the cursor are not kept.
	last := n - 1
	for last > oldLen+cy && !at(last).wrapped && rowBlank(at(last).cells) {
		last--
	}
	// Rows are produced in order; those sure to end in the history are
	// packed into a new one at once, so a long history is never held
	// unpacked (the screen and the rows after the cursor at most).
	nsb := scrollback{max: e.sb.max}
	var win []row // produced rows not yet placed; win[0] is row number base
	base := 0
	curRow, curCol, curKnown := 0, 0, false
	var free [][]Cell // cells of placed rows, for the next rows cut
	place := func(limit int) {
		for base < limit && len(win) > 0 {
			nsb.push(win[0])
			free = append(free, win[0].cells)
			win[0] = row{}
			win = win[1:]
			base++
		}
	}
	var line, slab []Cell
	curOff := -1
	for i := 0; i <= last; i++ {
		r := at(i)
		if i == readAt {
			// The next row produced starts the logical line holding row
			// i: read from there, a little text again rather than less.
			readRow = base + len(win)
		}
		if i == oldLen+cy {
			curOff = len(line) + cx
		}
		line = append(line, r.cells...)
		if r.wrapped && i < last {
			for len(line)%oldW != 0 {
				line = append(line, Cell{})
			}
			continue
		}
		k := len(line)
		for k > 0 && line[k-1].blank() {
			k--
		}
		line = line[:k]
		// Cut the logical line at w, a wide character kept whole.
		pos := 0
		for {
			end := min(pos+w, len(line))
			if end < len(line) && end-pos > 1 && line[end-1].Attr&AttrWide != 0 {
				end--
			}
			var cells []Cell
			if k := len(free); k > 0 {
				cells, free = free[k-1], free[:k-1]
				clear(cells[copy(cells, line[pos:end]):])
			} else {
				if len(slab) < w {
					// Rows are cut from shared blocks: one allocation
					// per block, not per row.
					slab = make([]Cell, w*64)
				}
				cells = slab[:w:w]
				slab = slab[w:]
				copy(cells, line[pos:end])
			}
			if curOff >= pos && (curOff < end || end == len(line)) {
				curRow, curCol, curKnown = base+len(win), min(curOff-pos, w-1), true
				curOff = -1
			}
			win = append(win, row{cells: cells, wrapped: end < len(line)})
			if end >= len(line) {
				break
			}
			pos = end
		}
		line = line[:0]
		// The screen is the last h rows, or starts at the cursor's row:
		// rows before both are history whatever comes next.
		limit := base + len(win) - h
		if curKnown {
			limit = min(limit, curRow)
		}
		place(limit)
	}
	if base+len(win) == 0 {
		win = append(win, row{cells: make([]Cell, w)})
	}
	n = base + len(win)
	top := max(n-h, 0)
	if curRow < top {
		top = curRow
	}
	place(top)
	// Row numbers only grow (TextSince): a narrower history repeats a few
	// rows to a reader, a wider one skips none.
	nsb.total = e.sb.total + uint64(max(top-oldLen, 0))
	if readAt > last {
		readRow = top // nothing it had not read is left but the screen
	}
	if readAt >= 0 {
		// Row j of the new history is numbered total-top+j.
		e.readFloor, e.floorSet = nsb.total-uint64(top)+uint64(readRow), true
	}
	e.sb = nsb
	rows := make([]row, 0, h)
	rows = append(rows, win[:min(h, len(win))]...)
	for len(rows) < h {
		rows = append(rows, row{cells: make([]Cell, w)})
	}
	e.main.rows = rows
	if onMain {
		e.cx, e.cy = curCol, curRow-top
	} else {
		e.saved.x, e.saved.y = curCol, curRow-top
	}
}
