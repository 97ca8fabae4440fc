package term

import "strings"

// appendRowText appends the text of cells, skipping the right halves of
// wide characters and showing unwritten cells as spaces. Trailing spaces
// are left for the caller to trim.
func (e *Emulator) appendRowText(sb *strings.Builder, cells []Cell) {
	for _, c := range cells {
		switch {
		case c.Attr&AttrWideCont != 0:
		case c.comb != 0:
			sb.WriteString(e.cellString(c))
		case c.Rune == 0:
			sb.WriteByte(' ')
		default:
			sb.WriteRune(c.Rune)
		}
	}
}

func trimRight(s string) string { return strings.TrimRight(s, " ") }

// Lines returns the visible screen, one string per row, trailing spaces
// trimmed (as tmux's capture-pane prints it).
func (e *Emulator) Lines() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	text := e.screenText(e.cur)
	out := make([]string, len(text))
	for y, s := range text {
		out[y] = trimRight(s)
	}
	return out
}

// screenText returns the text of every row of s, untrimmed, rebuilding
// only the rows changed since it last did (changed.go): the engine reads
// a busy agent's screen for signals and stuck prompts many times a
// second, and mostly a row or two changed in between. Caller holds e.mu;
// the slice is valid until the next call.
func (e *Emulator) screenText(s *screen) []string {
	valid := len(s.text) == len(s.rows) && s.textW == e.w && s.textGen != 0 && e.fullGen <= s.textGen
	if !valid {
		s.text = make([]string, len(s.rows))
	}
	var sb strings.Builder
	for y := range s.rows {
		r := &s.rows[y]
		if valid && r.gen <= s.textGen {
			continue
		}
		sb.Reset()
		e.appendRowText(&sb, r.cells)
		s.text[y] = sb.String()
	}
	s.textGen, s.textW = e.gen, e.w
	e.gen++
	return s.text
}

// Text returns the visible screen as plain text: rows joined by newlines,
// trailing spaces and trailing empty rows removed.
func (e *Emulator) Text() string {
	return strings.TrimRight(strings.Join(e.Lines(), "\n"), "\n")
}

// ScrollbackLines returns how many rows the scrollback holds.
func (e *Emulator) ScrollbackLines() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.sb.len()
}

// TextSince returns the plain text of the main screen's history and
// current screen as logical lines (rows joined where the text wrapped),
// starting with the history row numbered from (rows are numbered from 0 as
// they were first scrolled off, so numbers stay valid as the scrollback
// drops old rows). It returns the number to pass next time to get only
// rows that left the screen since. The current screen is always included,
// since it may still change. Rows already evicted are skipped.
//
// This is what signal detection should call: it reads only new history.
// A reader that passes back the mark it was last given reads, after a
// resize re-cut the history, only the rows holding text it had not read.
func (e *Emulator) TextSince(from uint64) (text string, next uint64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.readValid && e.floorSet && from == e.readNext {
		from = e.readFloor
	}
	text, next = e.textSince(from)
	e.readNext, e.readValid, e.floorSet = next, true, false
	return text, next
}

func (e *Emulator) textSince(from uint64) (text string, next uint64) {
	total := e.sb.total
	first := total - uint64(e.sb.len()) // number of the oldest kept row
	if from < first {
		from = first
	}
	var sb strings.Builder
	var line strings.Builder
	end := func(wrapped bool) {
		if wrapped {
			return
		}
		sb.WriteString(trimRight(line.String()))
		sb.WriteByte('\n')
		line.Reset()
	}
	emit := func(r *row) {
		e.appendRowText(&line, r.cells)
		end(r.wrapped)
	}
	for i := int(from - first); i < e.sb.len(); i++ {
		r := e.sb.at(i)
		emit(&r)
	}
	for y, t := range e.screenText(&e.main) {
		line.WriteString(t)
		end(e.main.rows[y].wrapped)
	}
	if line.Len() > 0 {
		sb.WriteString(trimRight(line.String()))
		sb.WriteByte('\n')
	}
	if e.cur == &e.alt {
		// A full-screen child draws on the alternate screen; its text is
		// what the user sees, so it comes last.
		for y, t := range e.screenText(&e.alt) {
			line.WriteString(t)
			end(e.alt.rows[y].wrapped)
		}
		if line.Len() > 0 {
			sb.WriteString(trimRight(line.String()))
			sb.WriteByte('\n')
		}
	}
	return strings.TrimRight(sb.String(), "\n"), total
}

// AllText returns the whole scrollback and screen as plain text.
func (e *Emulator) AllText() string {
	e.mu.Lock()
	t, _ := e.textSince(0)
	e.mu.Unlock()
	return t
}

// Snapshot is a copy of what a renderer needs for one frame.
type Snapshot struct {
	W, H  int
	Cells []Cell // H rows of W cells
	// CursorX, CursorY are the cursor position; CursorVisible is false when
	// the child hid it or the view is scrolled back.
	CursorX, CursorY int
	CursorVisible    bool
	CursorStyle      int // DECSCUSR value
	Title            string
	AltScreen        bool
	Reverse          bool // DECSCNM: swap default colours
	// Scrollback is the number of history rows and Offset how many of
	// them the frame is scrolled back by (clamped).
	Scrollback int
	Offset     int
	// Pushed is the number of rows ever scrolled into the history: the
	// screen's row y is row number Pushed+y (see RowText).
	Pushed uint64
	// Changed says which rows the last SnapshotChanged copied (all of
	// them after Snapshot); Full that it copied every row because it
	// could not tell which changed.
	Changed  []bool
	Full     bool
	clusters []string
	src      *Emulator // the emulator it was taken from
	gen      uint64    // its gen when taken
}

// Grapheme returns the text of a cell of this snapshot.
func (s *Snapshot) Grapheme(c Cell) string {
	if c.comb != 0 && int(c.comb) <= len(s.clusters) {
		return s.clusters[c.comb-1]
	}
	if c.Rune == 0 {
		return " "
	}
	return string(c.Rune)
}

// Snapshot copies the screen into s, reusing its storage. offset > 0
// shows the main screen scrolled back by that many rows (only while the
// main screen is active).
func (e *Emulator) Snapshot(s *Snapshot, offset int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.snapshot(s, offset)
}

func (e *Emulator) snapshot(s *Snapshot, offset int) {
	s.W, s.H = e.w, e.h
	n := e.w * e.h
	if cap(s.Cells) < n {
		s.Cells = make([]Cell, n)
	}
	s.Cells = s.Cells[:n]
	sbn := e.sb.len()
	if e.cur != &e.main {
		offset = 0
	}
	offset = clamp(offset, 0, sbn)
	for y := 0; y < e.h; y++ {
		dst := s.Cells[y*e.w : (y+1)*e.w]
		src := y - offset // negative: from the scrollback
		var cells []Cell
		if src >= 0 {
			cells = e.cur.rows[src].cells
		} else {
			cells = e.sb.at(sbn + src).cells
		}
		m := copy(dst, cells)
		clear(dst[m:])
	}
	s.CursorX, s.CursorY = e.cx, e.cy+offset
	s.CursorVisible = !e.modes.cursorHidden && offset == 0
	s.CursorStyle = e.cursorStyle
	s.Title = e.title
	s.AltScreen = e.cur == &e.alt
	s.Reverse = e.modes.reverse
	s.Scrollback = sbn
	s.Offset = offset
	s.Pushed = e.sb.total
	s.clusters = e.clusters
	s.Changed = slicesFill(s.Changed, e.h, true)
	s.Full = true
	e.taken(s)
}
