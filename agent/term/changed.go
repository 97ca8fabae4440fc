package term

// Which rows changed since a snapshot, so a renderer copies and compares
// only those: a busy tile mostly changes a few rows (a status line, a
// spinner) between frames, and copying and comparing every cell of every
// tile each frame was most of a frame's work outside drawing.
//
// Every snapshot taken starts a new generation (Emulator.gen); a change to
// a row's cells records the current generation on the row (mark), and a
// change that moves or replaces everything (a resize, a reset, the other
// screen, a cleared history) records it as fullGen. A row changed since a
// snapshot is one whose generation is newer than the snapshot's.

// mark records that row y of the current screen changed. Caller holds e.mu.
func (e *Emulator) mark(y int) { e.cur.rows[y].gen = e.gen }

// markRange marks rows top..bot of the current screen.
func (e *Emulator) markRange(top, bot int) {
	for y := top; y <= bot; y++ {
		e.cur.rows[y].gen = e.gen
	}
}

// markAll records that every row, of both screens and the history, may
// have changed.
func (e *Emulator) markAll() { e.fullGen = e.gen }

// taken ends the generation s was taken in. Caller holds e.mu.
func (e *Emulator) taken(s *Snapshot) {
	s.src, s.gen = e, e.gen
	e.gen++
}

// SnapshotChanged brings s up to date with the screen like Snapshot, but
// copies only the rows that changed since s was last filled from this
// emulator, and sets s.Changed to say which. The cells each copied row had
// before go to the same place in prev, which it returns (at least as long
// as s.Cells was and is); other rows of prev are left as they were.
// When it cannot tell which rows changed — s was never filled from this
// emulator, the size, the screen or the view's offset differs, the
// screen was reset or resized — it copies every row as Snapshot does,
// with all of s.Cells before it going to prev, and sets s.Full.
func (e *Emulator) SnapshotChanged(s *Snapshot, offset int, prev []Cell) []Cell {
	e.mu.Lock()
	defer e.mu.Unlock()
	if n := max(e.w*e.h, len(s.Cells)); len(prev) < n {
		prev = make([]Cell, n)
	}
	if s.src != e || s.W != e.w || s.H != e.h || offset != 0 || s.Offset != 0 ||
		s.AltScreen != (e.cur == &e.alt) || e.fullGen > s.gen || len(s.Cells) != e.w*e.h {
		copy(prev, s.Cells)
		e.snapshot(s, offset)
		return prev
	}
	s.Changed = slicesFill(s.Changed, e.h, false)
	for y := range e.h {
		r := &e.cur.rows[y]
		if r.gen <= s.gen {
			continue
		}
		dst := s.Cells[y*e.w : (y+1)*e.w]
		copy(prev[y*e.w:(y+1)*e.w], dst)
		m := copy(dst, r.cells)
		clear(dst[m:])
		s.Changed[y] = true
	}
	s.CursorX, s.CursorY = e.cx, e.cy
	s.CursorVisible = !e.modes.cursorHidden
	s.CursorStyle = e.cursorStyle
	s.Title = e.title
	s.Reverse = e.modes.reverse
	s.Scrollback = e.sb.len()
	s.Pushed = e.sb.total
	s.clusters = e.clusters
	s.Full = false
	e.taken(s)
	return prev
}

// slicesFill returns b resized to n, every element v.
func slicesFill(b []bool, n int, v bool) []bool {
	if cap(b) < n {
		b = make([]bool, n)
	}
	b = b[:n]
	for i := range b {
		b[i] = v
	}
	return b
}
