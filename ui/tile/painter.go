package tile

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"
)

// Painter writes the cells tiles change between frames straight to the
// terminal, in one write per frame, instead of through tcell's Show.
//
// tcell's Show walks every cell of the screen and, for each changed one,
// runs a character-set encoder, formats the cursor motion and the colours
// through its terminfo interpreter and allocates on the way: with eight
// busy tiles that was half the interface's CPU. A tile knows which cells
// it changed, so the painter emits just those, with the escape sequences
// tcell would have sent (the same terminfo strings, formatted once per
// style and cached).
//
// tcell's own cell buffer is kept in step: each cell is stored there too
// and marked as shown, so tcell's next Show (a full redraw, an overlay)
// sends nothing for it and repaints it correctly if anything later draws
// over it.
type Painter struct {
	screen tcell.Screen
	cells  *tcell.CellBuffer
	lock   sync.Locker
	tty    io.Writer
	devTTY bool // the screen is on /dev/tty (WriteToTTY)
	ti     *terminfo.Terminfo

	truecolor bool
	palette   []tcell.Color
	colors    map[tcell.Color]tcell.Color
	styles    map[tcell.Style]styleSeq
	cup       bool // SetCursor is plain CUP: formatted here, not by terminfo
	dance     bool // tcell writes the bottom-right cell around automatic margins

	buf    bytes.Buffer
	cx, cy int // where the terminal's cursor is after buf; -1: unknown
	cur    tcell.Style
	curOK  bool
	err    error
	held   bool // tcell's lock is held for a run of Puts (hold)
	clear  bool // the next frame starts by clearing the terminal (Start)

	// Cells painted since tcell's buffer last heard of them (see sync),
	// indexed y*w+x of tcell's size, and which of them are set.
	shadow  []shadowCell
	touched []int

	// What went through Screen since tcell's last Show: whether anything
	// was put in its buffer, and where the cursor is wanted (what the
	// terminal shows after that Show is shown*).
	tcellDirty bool
	cursor     cursorState
	shown      cursorState

	drawn atomic.Uint64 // the size of the last full draw, w<<32|h (Drawn)

	shownFn func() // runs once after the next Show's write (OnShown)
}

// shadowCell is a painted cell tcell's buffer does not hold yet.
type shadowCell struct {
	str   string
	style tcell.Style
	set   bool
}

type cursorState struct {
	x, y  int // negative: hidden
	style tcell.CursorStyle
}

// cellScreen is what the painter needs from tcell beyond tcell.Screen:
// the screen's cell buffer and its lock.
type cellScreen interface {
	tcell.Screen
	GetCells() *tcell.CellBuffer
	Lock()
	Unlock()
}

// NewPainter returns a painter for screen, which tcell drives with ti, or
// nil when screen is not a terminal screen of tcell's. Hand p.Screen() to
// tview instead of screen, then call Start once tview initialised it.
func NewPainter(screen tcell.Screen, ti *terminfo.Terminfo) *Painter {
	cs, ok := screen.(cellScreen)
	if !ok || ti == nil {
		return nil
	}
	return &Painter{screen: screen, cells: cs.GetCells(), lock: lockerOf{cs}, ti: ti,
		styles: map[tcell.Style]styleSeq{}, cx: -1, cy: -1, tcellDirty: true,
		cursor: cursorState{x: -1, y: -1}, shown: cursorState{x: -1, y: -1},
		cup:   ti.SetCursor == "\x1b[%i%p1%d;%p2%dH",
		dance: ti.AutoMargin && ti.DisableAutoMargin == "" && ti.InsertChar != ""}
}

// WriteToTTY makes the painter write its frames to the controlling
// terminal (/dev/tty, where tcell's own terminal screen writes) through a
// descriptor of its own, with writes the Go scheduler is not told of
// (Linux). For a screen on /dev/tty only; before Start.
func (p *Painter) WriteToTTY() { p.devTTY = true }

// Start reports whether the painter can speak for tcell on this screen,
// which must be initialised: not without colours or in a character set
// other than UTF-8. When it cannot, tiles draw through the screen as any
// primitive does.
func (p *Painter) Start() bool {
	tty, ok := p.screen.Tty()
	if !ok || tty == nil {
		return false
	}
	n := p.screen.Colors()
	if n < 8 || os.Getenv("NO_COLOR") != "" || p.screen.CharacterSet() != "UTF-8" {
		return false
	}
	ti := p.ti
	if ti.SetCursor == "" || ti.AttrOff == "" || ti.HideCursor == "" || ti.ShowCursor == "" {
		return false
	}
	p.tty, p.truecolor = tty, n == 1<<24
	if q := quietTTY(); p.devTTY && q != nil {
		p.tty = q
	}
	// The palette as tcell builds it: the terminal's colours, at most 256;
	// others are mapped to the nearest of them.
	pn := min(ti.Colors, 256)
	p.palette = make([]tcell.Color, pn)
	p.colors = make(map[tcell.Color]tcell.Color, pn)
	for i := range pn {
		c := tcell.PaletteColor(i)
		p.palette[i], p.colors[c] = c, c
	}
	p.blank()
	return true
}

// Screen is the screen to draw everything else on: the painter's screen,
// noting what is put there and where the cursor goes, so a frame of only
// painted tiles can leave tcell's Show (a walk of every cell) out.
func (p *Painter) Screen() tcell.Screen { return &paintScreen{Screen: p.screen, p: p} }

// StartedScreen is Screen for a screen its owner initialised already (a
// terminal opened while the engine was dialed): its Init, which tview's
// SetScreen calls, does nothing.
func (p *Painter) StartedScreen() tcell.Screen {
	return &paintScreen{Screen: p.screen, p: p, started: true}
}

// paintScreen is tcell's screen as the painter sees it: whatever draws on
// it marks tcell's buffer as having something to show.
type paintScreen struct {
	tcell.Screen
	p        *Painter
	started  bool
	ownStyle bool // SetStyle was called: Show is tcell's
}

// PollEvent leaves out a resize to the size the last full draw laid the
// screen out for (Drawn): tcell reports the size it starts at after
// tview's first frame, and tview answered it with a full draw that showed
// nothing new (tcell's buffer keeps its cells while the size holds) in
// the milliseconds an attach shows the agents' screens.
func (s *paintScreen) PollEvent() tcell.Event {
	for {
		ev := s.Screen.PollEvent()
		if r, ok := ev.(*tcell.EventResize); ok {
			if w, h := r.Size(); sizeKey(w, h) == s.p.drawn.Load() {
				continue
			}
		}
		return ev
	}
}

func sizeKey(w, h int) uint64 { return uint64(uint32(w))<<32 | uint64(uint32(h)) }

// Drawn tells the painter the size a full draw lays the screen out for
// (the root's rectangle, which tview takes from the screen as the draw
// begins); its screen leaves out resize events to that size. Any
// goroutine.
func (p *Painter) Drawn(w, h int) { p.drawn.Store(sizeKey(w, h)) }

func (s *paintScreen) Init() error {
	if s.started {
		return nil
	}
	return s.Screen.Init()
}

func (s *paintScreen) Put(x, y int, str string, style tcell.Style) (string, int) {
	s.p.touch()
	return s.Screen.Put(x, y, str, style)
}
func (s *paintScreen) PutStr(x, y int, str string) { s.p.touch(); s.Screen.PutStr(x, y, str) }
func (s *paintScreen) PutStrStyled(x, y int, str string, style tcell.Style) {
	s.p.touch()
	s.Screen.PutStrStyled(x, y, str, style)
}
func (s *paintScreen) SetContent(x, y int, mainc rune, combc []rune, style tcell.Style) {
	s.p.touch()
	s.Screen.SetContent(x, y, mainc, combc, style)
}
func (s *paintScreen) SetCell(x, y int, style tcell.Style, ch ...rune) {
	s.p.touch()
	s.Screen.SetCell(x, y, style, ch...)
}
func (s *paintScreen) Fill(r rune, style tcell.Style) { s.p.touch(); s.Screen.Fill(r, style) }
func (s *paintScreen) Clear()                         { s.p.touch(); s.Screen.Clear() }
func (s *paintScreen) SetStyle(style tcell.Style) {
	s.p.touch()
	s.ownStyle = true
	s.Screen.SetStyle(style)
}
func (s *paintScreen) LockRegion(x, y, w, h int, l bool) {
	s.p.touch()
	s.Screen.LockRegion(x, y, w, h, l)
}
func (s *paintScreen) Get(x, y int) (string, tcell.Style, int) {
	s.p.sync()
	return s.Screen.Get(x, y)
}

// GetContent is deprecated in tcell, but tview reads cells with it.
func (s *paintScreen) GetContent(x, y int) (rune, []rune, tcell.Style, int) {
	s.p.sync()
	return s.Screen.GetContent(x, y) //lint:ignore SA1019 tview calls it; the wrapper must pass it on
}
func (s *paintScreen) ShowCursor(x, y int) {
	s.p.cursor.x, s.p.cursor.y = x, y
	s.Screen.ShowCursor(x, y)
}
func (s *paintScreen) HideCursor() {
	s.p.cursor.x, s.p.cursor.y = -1, -1
	s.Screen.HideCursor()
}
func (s *paintScreen) SetCursorStyle(cs tcell.CursorStyle, cc ...tcell.Color) {
	s.p.cursor.style = cs
	if len(cc) > 0 {
		s.p.tcellDirty = true // a colour: left to tcell
	}
	s.Screen.SetCursorStyle(cs, cc...)
}
func (s *paintScreen) SetClipboard(b []byte) { s.p.touch(); s.Screen.SetClipboard(b) }

// Show writes the cells painted since the last frame (a full draw of a
// tile), then tcell's own: the agents' screens reach the terminal before
// tcell has walked its buffer.
func (s *paintScreen) Show() {
	defer s.p.afterShow()
	if s.ownStyle {
		// tcell draws default cells in the screen's style: its own draw.
		s.p.writeQueued()
		s.p.showed()
		s.Screen.Show()
		return
	}
	s.p.paintUnshown()
	s.p.Flush()
}

// OnShown runs f once, after the next frame shown through Screen has
// been written: tview's after-draw hook runs before its Show, and what
// stops the world there (GOMAXPROCS, a collection) held the frame back.
// Event goroutine.
func (p *Painter) OnShown(f func()) { p.shownFn = f }

func (p *Painter) afterShow() {
	if f := p.shownFn; f != nil {
		p.shownFn = nil
		f()
	}
}

// Sync repaints everything from tcell's buffer, which holds every painted
// cell once showed has run: what the painter queued is not needed.
func (s *paintScreen) Sync() {
	s.p.buf.Reset()
	s.p.clear = false // tcell clears the screen and draws every cell
	s.p.showed()
	s.Screen.Sync()
}

// touch notes that something draws through tcell: its buffer first takes
// the painted cells it has not heard of, and the frame ends with its Show.
func (p *Painter) touch() {
	p.sync()
	p.tcellDirty = true
}

// showed notes that tcell is about to show its buffer and the cursor.
func (p *Painter) showed() {
	p.sync()
	p.tcellDirty = false
	p.shown = p.cursor
}

// hold takes tcell's lock for a run of Puts (one tile's frame); the
// screen's own methods must not be called until release.
func (p *Painter) hold() {
	p.lock.Lock()
	p.held = true
}

func (p *Painter) release() {
	p.held = false
	p.lock.Unlock()
}

type lockerOf struct{ s cellScreen }

func (l lockerOf) Lock()   { l.s.Lock() }
func (l lockerOf) Unlock() { l.s.Unlock() }

// Put stores one cell in tcell's buffer as shown and, unless the terminal
// shows it already, queues its bytes for the terminal. It has the
// signature of tcell.Screen's Put, so a tile draws through either.
func (p *Painter) Put(x, y int, str string, style tcell.Style) (string, int) {
	if !p.held {
		p.lock.Lock()
		defer p.lock.Unlock()
	}
	w, h := p.cells.Size()
	if x < 0 || y < 0 || x >= w || y >= h {
		// Off the screen tcell knows (a resize not yet drawn): tcell's
		// next Show repaints everything anyway.
		return "", 0
	}
	if len(str) == 1 && str[0] >= ' ' && str[0] < utf8.RuneSelf && p.narrow(x, y, w, h, str, style) {
		return "", 1
	}
	return p.put(x, y, w, h, str, style)
}

// PutNarrow is Put for a cell its caller knows to be one character of
// one column, not ASCII (a box-drawing line, a bullet, a spinner): tcell
// would find the same width, so it takes the path of a one-byte cell
// instead of tcell's, whose grapheme segmentation and sync of the cells
// painted before it made every such cell cost as much as a frame's worth
// of ASCII.
func (p *Painter) PutNarrow(x, y int, str string, style tcell.Style) {
	if !p.held {
		p.lock.Lock()
		defer p.lock.Unlock()
	}
	w, h := p.cells.Size()
	if x < 0 || y < 0 || x >= w || y >= h {
		return
	}
	if !p.narrow(x, y, w, h, str, style) {
		p.put(x, y, w, h, str, style)
	}
}

// narrow paints a cell of one column unless tcell has to (it has
// something of its own to show, or the cell is the bottom-right one),
// and reports whether it did. Caller holds the lock.
func (p *Painter) narrow(x, y, w, h int, str string, style tcell.Style) bool {
	if p.tcellDirty || p.corner(x, y, w, h) {
		return false
	}
	// The common cell: compared with what the terminal shows and kept
	// aside for tcell's buffer (sync): storing it there costs a grapheme
	// segmentation per cell.
	if len(p.shadow) != w*h {
		p.shadow = make([]shadowCell, w*h) // tcell resized: synced before
	}
	i := y*w + x
	sc := &p.shadow[i]
	shownStr, shownStyle := sc.str, sc.style
	if !sc.set {
		shownStr, shownStyle, _ = p.cells.Get(x, y)
	}
	if shownStr == str && shownStyle == style {
		return true
	}
	if !sc.set {
		p.touched = append(p.touched, i)
	}
	*sc = shadowCell{str: str, style: style, set: true}
	p.emit(x, y, w, str, style, 1)
	return true
}

// corner reports whether (x, y) is the bottom-right cell of a w x h
// screen on a terminal where tcell writes it with a dance around
// automatic margins (insert a character, write the one before again):
// such a cell is left to tcell. Elsewhere tcell writes it as any cell.
func (p *Painter) corner(x, y, w, h int) bool { return p.dance && x == w-1 && y == h-1 }

// put stores a cell through tcell's buffer. Caller holds the lock.
func (p *Painter) put(x, y, w, h int, str string, style tcell.Style) (string, int) {
	if len(p.touched) > 0 {
		p.syncLocked()
	}
	rest, width := p.cells.Put(x, y, str, style)
	if p.corner(x, y, w, h) {
		// The bottom-right cell needs tcell's dance around automatic
		// margins: left to tcell's Show.
		p.tcellDirty = true
		return rest, width
	}
	if !p.cells.Dirty(x, y) {
		// The terminal shows this already (tcell's buffer says so).
		return rest, width
	}
	p.cells.SetDirty(x, y, false)
	if width < 1 {
		// What tcell would show for a cell of nothing printable.
		str, style, _ = p.cells.Get(x, y)
		width = 1
	} else if len(str) > 1 {
		str = str[:len(str)-len(rest)] // the cell's grapheme, as tcell keeps it
	}
	return rest, p.emit(x, y, w, str, style, width)
}

// emit queues one cell's bytes: the cursor moved there if needed, its
// style, its text. It returns the columns it took.
func (p *Painter) emit(x, y, w int, str string, style tcell.Style, width int) int {
	p.begin()
	if x != p.cx || y != p.cy {
		if !p.skipBlanks(x, y, w) {
			p.move(x, y)
		}
	}
	if !p.curOK || style != p.cur {
		seq := p.style(style)
		if p.curOK && plain(p.cur) {
			// Nothing is set to turn off: a first frame of agents'
			// output changes style every few cells.
			p.buf.WriteString(seq.set)
		} else {
			p.buf.WriteString(seq.all)
		}
		p.cur, p.curOK = style, true
	}
	switch {
	case x > w-width:
		// A wide character that does not fit: a blank, as tcell does.
		p.buf.WriteByte(' ')
		width = 1
	case !utf8.ValidString(str):
		p.buf.WriteByte('?')
	default:
		if width > 1 && x+width < w {
			// tcell's clobber for terminals that leave half of the
			// previous contents beside a wide character.
			p.buf.WriteString("  \b\b")
		}
		p.buf.WriteString(str)
	}
	p.cx += width
	if width > 1 {
		p.cx = -1 // terminals disagree on where a wide character leaves it
	}
	return width
}

// sync stores the cells painted since the last sync in tcell's buffer as
// shown. Everything that reads or changes tcell's buffer through Screen
// calls it first, so tcell never draws from a buffer that lags behind the
// terminal.
func (p *Painter) sync() {
	if len(p.touched) == 0 {
		return
	}
	p.lock.Lock()
	p.syncLocked()
	p.lock.Unlock()
}

func (p *Painter) syncLocked() {
	w, _ := p.cells.Size()
	for _, i := range p.touched {
		sc := &p.shadow[i]
		if !sc.set {
			continue
		}
		x, y := i%w, i/w
		p.cells.Put(x, y, sc.str, sc.style)
		p.cells.SetDirty(x, y, false)
		*sc = shadowCell{}
	}
	p.touched = p.touched[:0]
}

func (p *Painter) move(x, y int) {
	if p.cup {
		b := p.buf.AvailableBuffer()
		b = append(b, "\x1b["...)
		b = strconv.AppendInt(b, int64(y+1), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(x+1), 10)
		b = append(b, 'H')
		p.buf.Write(b)
	} else {
		p.ti.TPuts(&p.buf, p.ti.TGoto(x, y))
	}
	p.cx, p.cy = x, y
}

// styleSeq is what sets a style: all of it (attributes off first, as
// tcell sends), and set, the part after turning attributes off, which is
// all a terminal showing the plain style needs.
type styleSeq struct{ all, set string }

// plain reports whether st is what turning attributes off leaves:
// default colours, no attributes.
func plain(st tcell.Style) bool {
	fg, bg, attrs := st.Decompose()
	return fg == tcell.ColorDefault && bg == tcell.ColorDefault && attrs == 0
}

// style returns the bytes that set st, built from the terminfo strings
// exactly as tcell's draw does, once per style.
func (p *Painter) style(st tcell.Style) styleSeq {
	if s, ok := p.styles[st]; ok {
		return s
	}
	var b bytes.Buffer
	ti := p.ti
	puts := func(s string) { ti.TPuts(&b, s) }
	puts(ti.AttrOff)
	off := b.Len()
	fg, bg, attrs := st.Decompose()
	if fg == tcell.ColorReset || bg == tcell.ColorReset {
		puts(ti.ResetFgBg)
	}
	if p.truecolor {
		if ti.SetFgBgRGB != "" && fg.IsRGB() && bg.IsRGB() {
			r1, g1, b1 := fg.RGB()
			r2, g2, b2 := bg.RGB()
			puts(ti.TParm(ti.SetFgBgRGB, int(r1), int(g1), int(b1), int(r2), int(g2), int(b2)))
			fg, bg = tcell.ColorDefault, tcell.ColorDefault
		} else {
			if fg.IsRGB() && ti.SetFgRGB != "" {
				r, g, bl := fg.RGB()
				puts(ti.TParm(ti.SetFgRGB, int(r), int(g), int(bl)))
				fg = tcell.ColorDefault
			}
			if bg.IsRGB() && ti.SetBgRGB != "" {
				r, g, bl := bg.RGB()
				puts(ti.TParm(ti.SetBgRGB, int(r), int(g), int(bl)))
				bg = tcell.ColorDefault
			}
		}
	}
	fg, bg = p.mapColor(fg), p.mapColor(bg)
	if fg.Valid() && bg.Valid() && ti.SetFgBg != "" {
		puts(ti.TParm(ti.SetFgBg, int(fg&0xff), int(bg&0xff)))
	} else {
		if fg.Valid() && ti.SetFg != "" {
			puts(ti.TParm(ti.SetFg, int(fg&0xff)))
		}
		if bg.Valid() && ti.SetBg != "" {
			puts(ti.TParm(ti.SetBg, int(bg&0xff)))
		}
	}
	for _, a := range []struct {
		attr tcell.AttrMask
		seq  string
	}{
		{tcell.AttrBold, ti.Bold}, {tcell.AttrUnderline, ti.Underline}, {tcell.AttrReverse, ti.Reverse},
		{tcell.AttrBlink, ti.Blink}, {tcell.AttrDim, ti.Dim}, {tcell.AttrItalic, ti.Italic},
		{tcell.AttrStrikeThrough, ti.StrikeThrough},
	} {
		if attrs&a.attr != 0 {
			puts(a.seq)
		}
	}
	all := b.String()
	s := styleSeq{all: all, set: all[off:]}
	p.styles[st] = s
	return s
}

func (p *Painter) mapColor(c tcell.Color) tcell.Color {
	if !c.Valid() {
		return c
	}
	if v, ok := p.colors[c]; ok {
		return v
	}
	v := tcell.FindColor(c, p.palette)
	p.colors[c] = v
	return v
}

// writeQueued writes what Put queued before tcell shows its buffer, which
// puts the cursor where it is wanted. The synchronized update begun with
// the queued cells is left for tcell's Show to end: a terminal that keeps
// to it shows both writes as one frame.
func (p *Painter) writeQueued() {
	if p.buf.Len() == 0 {
		return
	}
	if _, err := p.tty.Write(p.buf.Bytes()); err != nil && p.err == nil {
		p.err = err
	}
	p.buf.Reset()
}

// Flush writes what Put queued in one write. tcell's Show follows only
// when something else was drawn through Screen or the cursor's shape
// changed; otherwise the cursor is put back where it is wanted here.
func (p *Painter) Flush() {
	if p.clear {
		p.begin()
	}
	if p.buf.Len() == 0 {
		if p.tcellDirty || p.cursor != p.shown {
			p.showed()
			p.screen.Show()
		}
		return
	}
	show := p.tcellDirty || p.cursor.style != p.shown.style
	if !show {
		w, h := p.cells.Size()
		if c := p.cursor; c.x >= 0 && c.y >= 0 && c.x < w && c.y < h {
			p.move(c.x, c.y)
			p.buf.WriteString(p.ti.ShowCursor)
		}
		p.shown = p.cursor
	}
	if p.ti.XTermLike {
		p.buf.WriteString("\x1b[?2026l")
	}
	if _, err := p.tty.Write(p.buf.Bytes()); err != nil && p.err == nil {
		p.err = err
	}
	p.buf.Reset()
	if show {
		p.showed()
		p.screen.Show()
	}
}
