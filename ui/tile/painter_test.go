package tile

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/agent/term"
)

// recTty is a terminal that keeps what is written to it; a model
// terminal (an emulator) reads it back as the user's terminal would.
type recTty struct {
	w, h   int
	mu     sync.Mutex
	out    []byte
	writes int
	each   [][]byte // every write since take, when keepEach
	drain  chan struct{}

	keepEach bool
}

func (t *recTty) Start() error        { t.drain = make(chan struct{}); return nil }
func (t *recTty) Stop() error         { return nil }
func (t *recTty) Drain() error        { close(t.drain); return nil }
func (t *recTty) NotifyResize(func()) {}
func (t *recTty) Close() error        { return nil }
func (t *recTty) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.out = append(t.out, p...)
	t.writes++
	if t.keepEach {
		t.each = append(t.each, append([]byte(nil), p...))
	}
	t.mu.Unlock()
	return len(p), nil
}
func (t *recTty) Read([]byte) (int, error) { <-t.drain; return 0, os.ErrClosed }
func (t *recTty) WindowSize() (tcell.WindowSize, error) {
	return tcell.WindowSize{Width: t.w, Height: t.h}, nil
}

// take returns and forgets what was written since the last call, and in
// how many writes.
func (t *recTty) take() ([]byte, int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b, n := t.out, t.writes
	t.out, t.writes, t.each = nil, 0, nil
	return b, n
}

// termScreen is a real tcell screen on a recTty, with a model of the
// terminal it drives.
type termScreen struct {
	tcell.Screen
	tty   *recTty
	model *term.Emulator
}

func newTermScreen(t *testing.T, w, h int) *termScreen {
	t.Helper()
	ti, err := tcell.LookupTerminfo("xterm-256color")
	if err != nil {
		t.Fatal(err)
	}
	tty := &recTty{w: w, h: h}
	s, err := tcell.NewTerminfoScreenFromTtyTerminfo(tty, ti)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Fini)
	return &termScreen{Screen: s, tty: tty, model: term.New(w, h, term.WithScrollback(0))}
}

// sync feeds the model what the screen wrote and returns in how many
// writes.
func (s *termScreen) sync() int {
	b, n := s.tty.take()
	s.model.Write(b)
	return n
}

// dump is the model terminal's screen: text and style of every cell.
func (s *termScreen) dump() []string {
	var snap term.Snapshot
	s.model.Snapshot(&snap, 0)
	rows := make([]string, snap.H)
	for y := range snap.H {
		var b strings.Builder
		for x := range snap.W {
			c := snap.Cells[y*snap.W+x]
			fmt.Fprintf(&b, "%s/%v/%v/%v|", snap.Grapheme(c), c.Fg, c.Bg, c.Attr)
		}
		rows[y] = b.String()
	}
	cursor := "hidden"
	if snap.CursorVisible {
		cursor = fmt.Sprintf("%d,%d", snap.CursorX, snap.CursorY)
	}
	return append(rows, "cursor "+cursor)
}

// text is the model terminal's row y from x0, w cells wide.
func (s *termScreen) text(x0, y, w int) string {
	var snap term.Snapshot
	s.model.Snapshot(&snap, 0)
	var b strings.Builder
	for x := x0; x < x0+w; x++ {
		c := snap.Cells[y*snap.W+x]
		if c.Attr&term.AttrWideCont == 0 {
			b.WriteString(snap.Grapheme(c))
		}
	}
	return b.String()
}

func diffRows(t *testing.T, what string, got, want []string) {
	t.Helper()
	for y := range want {
		if got[y] != want[y] {
			t.Errorf("%s: row %d\n got %s\nwant %s", what, y, got[y], want[y])
			return
		}
	}
}

// paintChunks are a child's output in frames: colours of every kind,
// attributes, wide and combining characters, scrolling, erasing, the
// alternate screen.
var paintChunks = []string{
	"plain \x1b[1mbold\x1b[m \x1b[3mitalic\x1b[m \x1b[4munder\x1b[m \x1b[7mrev\x1b[m \x1b[2mdim\x1b[m \x1b[9mstrike\x1b[m\r\n",
	"\x1b[31mred \x1b[42mon green\x1b[m \x1b[91mbright\x1b[m \x1b[38;5;208mpalette\x1b[48;5;17m bg\x1b[m\r\n",
	"\x1b[38;2;10;200;30mrgb \x1b[48;2;250;10;10mboth\x1b[m \x1b[8mhidden\x1b[m end\r\n",
	"wide 中文字 e\u0301 \U0001F600 x\r\n",
	"\x1b[36m╭──╮\x1b[m ⏺ ✓ … ❯ \x1b(0lqqk\x1b(B │▒│ \u00a0é\r\n",
	"\x1b[3;1H\x1b[33m✶\x1b[m ⎿ ─ ·\x1b[3;20H═",
	"\x1b]0;spinner ✳\x07\x1b[5;1Hrow five\x1b[K\x1b[6;3H\x1b[1;33mthere\x1b[m",
	"\x1b]0;spinner ✶\x07\x1b[2;1H\x1b[2Knew row two\x1b[4;10Hchg",
	strings.Repeat("scrolling line\r\n", 12),
	"\x1b[?1049h\x1b[H\x1b[2J\x1b[44m full screen \x1b[m\x1b[3;5H中\x1b[8;1Hbottom",
	"\x1b[3;5Hab\x1b[1;1H\x1b[1mtop\x1b[m",
	"\x1b[?1049l\x1b[1;1Hback",
}

// TestPainterScreenIdenticalToTcell draws the same frames of a busy tile
// through the painter and through tcell's Show: the terminal must end up
// the same after every frame, with and without true colour.
func TestPainterScreenIdenticalToTcell(t *testing.T) {
	for _, v := range []struct {
		colorterm string
		clear     bool // the tile's box fills its inside before drawing
	}{{"", false}, {"truecolor", false}, {"", true}} {
		colorterm := v.colorterm
		t.Run(fmt.Sprintf("COLORTERM=%s,clear=%v", colorterm, v.clear), func(t *testing.T) {
			t.Setenv("COLORTERM", colorterm)
			paintEnv(t)
			const sw, sh = 40, 14
			ref, fast := newTermScreen(t, sw, sh), newTermScreen(t, sw, sh)
			p, ps := startPainter(t, fast)
			mk := func() *Tile {
				tl := New(term.New(30, 10), nil)
				if !v.clear {
					tl.Box = tview.NewFlex().Box
				}
				tl.SetBorder(true)
				tl.SetRect(3, 1, 32, 12)
				return tl
			}
			refTile, fastTile := mk(), mk()
			ref.Screen.Show()
			ps.Show()
			ref.sync()
			fast.sync()
			for i, chunk := range paintChunks {
				refTile.Emulator().Write([]byte(chunk))
				fastTile.Emulator().Write([]byte(chunk))
				if i == len(paintChunks)/2 {
					// Focused from here on: the child's cursor is shown.
					refTile.Focus(func(tview.Primitive) {})
					fastTile.Focus(func(tview.Primitive) {})
				}
				if i == 0 {
					// The first frame is a full draw, as tview's.
					refTile.Draw(ref.Screen)
					fastTile.Draw(ps)
					ref.Screen.Show()
					ps.Show()
				} else {
					refTile.DrawChanged(ref.Screen, nil)
					ref.Screen.Show()
					fastTile.DrawChanged(ps, p)
					p.Flush()
				}
				ref.sync()
				if n := fast.sync(); i > 0 && n != 1 && !strings.Contains(chunk, "\x1b]0;") {
					t.Errorf("frame %d: %d writes, want 1 (the painter's, no Show)", i, n)
				}
				diffRows(t, fmt.Sprintf("frame %d", i), fast.dump(), ref.dump())
				// tcell's buffer holds what the painter showed: its Show
				// changes nothing on the terminal and leaves no cell dirty.
				before := fast.dump()
				ps.Show()
				fast.sync()
				diffRows(t, fmt.Sprintf("tcell's Show after frame %d", i), fast.dump(), before)
				cells := fast.Screen.(cellScreen).GetCells()
				for y := 2; y < 12; y++ {
					for x := 4; x < 34; x++ {
						if _, _, w := cells.Get(x-1, y); w == 2 {
							continue // the right half of a wide character: tcell keeps it dirty too
						}
						if cells.Dirty(x, y) {
							t.Fatalf("frame %d: cell %d,%d still dirty in tcell's buffer", i, x, y)
						}
					}
				}
			}
			// A new title is a full draw of the tile through tcell: the
			// painter lets tcell's Show send it.
			refTile.Emulator().Write([]byte("\x1b]0;new title\x07x"))
			fastTile.Emulator().Write([]byte("\x1b]0;new title\x07x"))
			refTile.DrawChanged(ref.Screen, nil)
			ref.Screen.Show()
			fastTile.DrawChanged(ps, p)
			p.Flush()
			ref.sync()
			fast.sync()
			diffRows(t, "new title", fast.dump(), ref.dump())
			if got := fast.text(4, 2, 30); !strings.HasPrefix(got, "backx") {
				t.Errorf("first row = %q, want the last frame's text", got)
			}
			// tcell repainting everything from its buffer gives the same
			// screen: its buffer is what the terminal shows.
			before := fast.dump()
			ps.Sync()
			fast.model = term.New(sw, sh, term.WithScrollback(0))
			fast.sync()
			diffRows(t, "after tcell's Sync", fast.dump(), before)
		})
	}
}

// TestPainterThenOverlay: something drawn over a painted tile through
// tcell (an overlay), then taken away by a full draw, leaves the tile's
// cells as they are.
func TestPainterThenOverlay(t *testing.T) {
	paintEnv(t)
	s := newTermScreen(t, 30, 8)
	p, ps := startPainter(t, s)
	tl := New(term.New(20, 4), nil)
	tl.SetRect(0, 0, 22, 6)
	drawThenPaint(tl, ps, p, "first", "\r\n\x1b[32msecond\x1b[m")
	// An overlay over the tile, drawn by tcell, then gone.
	for x := range 10 {
		ps.Put(x+2, 2, "#", tcell.StyleDefault)
	}
	ps.Show()
	ps.Clear()
	tl.Draw(ps)
	ps.Show()
	s.sync()
	if got := s.text(1, 1, 20); got != "first               " {
		t.Errorf("row 1 = %q", got)
	}
	if got := s.text(1, 2, 20); got != "second              " {
		t.Errorf("row 2 = %q", got)
	}
}

// paintEnv is the environment a painter paints in: a UTF-8 locale, colour.
// Screens read it when they start, so it comes before them.
func paintEnv(t testing.TB) {
	t.Setenv("NO_COLOR", "")
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_CTYPE", "")
}

// drawThenPaint draws the tile with first through tcell, then paints what
// then changes with more through the painter.
func drawThenPaint(tl *Tile, ps tcell.Screen, p *Painter, first, more string) {
	tl.Emulator().Write([]byte(first))
	tl.Draw(ps)
	ps.Show()
	tl.Emulator().Write([]byte(more))
	tl.DrawChanged(ps, p)
	p.Flush()
}

// startPainter starts a painter on s (made under paintEnv) and returns it
// with its screen.
func startPainter(t *testing.T, s *termScreen) (*Painter, tcell.Screen) {
	t.Helper()
	p := NewPainter(s.Screen, tiOf(t))
	if p == nil || !p.Start() {
		t.Fatal("no painter for an xterm-256color UTF-8 screen")
	}
	return p, p.Screen()
}

func tiOf(t *testing.T) *terminfo.Terminfo {
	t.Helper()
	ti, err := tcell.LookupTerminfo("xterm-256color")
	if err != nil {
		t.Fatal(err)
	}
	return ti
}

// A full draw through tcell after painted frames shows the tile's content
// even where it went back to what tcell last drew itself (a blank): tcell's
// buffer has heard of the painted cells before anything draws through it.
func TestPainterThenFullDraw(t *testing.T) {
	paintEnv(t)
	s := newTermScreen(t, 30, 8)
	p, ps := startPainter(t, s)
	tl := New(term.New(20, 4), nil)
	tl.Box = tview.NewFlex().Box // as the UI's tiles: no fill
	tl.SetBorder(true)
	tl.SetRect(0, 0, 22, 6)
	drawThenPaint(tl, ps, p, "x", "\rBBBB")
	s.sync()
	if got := s.text(1, 1, 4); got != "BBBB" {
		t.Fatalf("painted row = %q", got)
	}
	// Blank again, as tcell drew it last, then a full draw as tview's.
	tl.Emulator().Write([]byte("\r\x1b[K"))
	ps.Clear()
	tl.Draw(ps)
	ps.Show()
	s.sync()
	if got := s.text(1, 1, 4); got != "    " {
		t.Errorf("after a full draw row = %q, want it blank", got)
	}
}

// A full draw on the painter's screen, as tview's first frame, goes out
// in one write: the tiles' cells and what tview drew through tcell (the
// box), blank cells left out as the frame clears the screen first (short
// runs of them written as spaces, shorter than moving the cursor); the
// terminal then shows what tcell alone would have drawn.
func TestFullDrawThroughPainter(t *testing.T) {
	paintEnv(t)
	const out = "\x1b[2m    1\x1b[0m \x1b[32m✓\x1b[0m agent: ran the \x1b[1;33mtests\x1b[0m\r\nsecond \x1b[7mline\x1b[0m 界"
	frame := func(s *termScreen, screen tcell.Screen) {
		tl := New(term.New(30, 4), nil)
		tl.Box = tview.NewFlex().Box
		tl.SetBorder(true).SetTitle("agent")
		tl.SetRect(0, 0, 32, 6)
		tl.Emulator().Write([]byte(out))
		screen.Clear()
		tl.Draw(screen)
		screen.Show()
	}
	plain := newTermScreen(t, 34, 8)
	frame(plain, plain.Screen)
	plain.sync()

	s := newTermScreen(t, 34, 8)
	_, ps := startPainter(t, s)
	s.tty.take()
	s.tty.keepEach = true
	frame(s, ps)
	s.tty.mu.Lock()
	each := s.tty.each
	s.tty.mu.Unlock()
	ok := len(each) == 1
	if ok {
		f := string(each[0])
		// Short gaps between words are spaces, not cursor motions.
		ok = strings.Contains(f, "agent: ran the") && strings.Contains(f, "┌") && strings.Contains(f, "\x1b[2J") &&
			!strings.Contains(f, strings.Repeat(" ", 8))
	}
	if !ok {
		t.Errorf("the frame did not go out in one write, cleared, without blanks: %q", each)
	}
	s.sync()
	diffRows(t, "painted full draw", s.dump(), plain.dump())
	// tcell's buffer heard of every painted cell: its next Show sends no
	// cell again.
	ps.Show()
	if b, _ := s.tty.take(); strings.Contains(string(b), "agent") {
		t.Errorf("tcell's Show sent the tile again: %q", b)
	}
}

// A resize to the size the last full draw laid out (tcell reports the
// size it starts at, after the first frame) does not reach tview, which would draw the
// whole screen again for nothing; any other size does, and other events.
func TestPainterScreenLeavesOutResizeToShownSize(t *testing.T) {
	paintEnv(t)
	s := newTermScreen(t, 30, 8)
	p, ps := startPainter(t, s)
	p.Drawn(30, 8)
	for _, ev := range []tcell.Event{
		tcell.NewEventResize(30, 8),
		tcell.NewEventResize(40, 10),
		tcell.NewEventResize(30, 8), // drawn is still 30x8: left out
		tcell.NewEventKey(tcell.KeyRune, 'x', 0),
	} {
		if err := ps.PostEvent(ev); err != nil {
			t.Fatal(err)
		}
	}
	var got []string
	for len(got) < 2 {
		switch ev := ps.PollEvent().(type) {
		case *tcell.EventResize:
			w, h := ev.Size()
			got = append(got, fmt.Sprintf("resize %dx%d", w, h))
		case *tcell.EventKey:
			got = append(got, "key "+string(ev.Rune()))
		}
	}
	if want := []string{"resize 40x10", "key x"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events = %q, want %q", got, want)
	}
}

// OnShown runs once, after the frame of the next Show is written, not
// before: what it does (GOMAXPROCS, the collector back on) stops the
// world, and before the write it held the first frame back.
func TestOnShownRunsAfterTheWrite(t *testing.T) {
	paintEnv(t)
	s := newTermScreen(t, 34, 8)
	p, ps := startPainter(t, s)
	s.tty.take()
	var at []string // what the terminal had been sent when it ran
	p.OnShown(func() {
		b, _ := s.tty.take()
		at = append(at, string(b))
	})
	tl := New(term.New(30, 4), nil)
	tl.Box = tview.NewFlex().Box
	tl.SetRect(0, 0, 30, 4)
	tl.Emulator().Write([]byte("first frame"))
	ps.Clear()
	tl.Draw(ps)
	ps.Show()
	tl.Emulator().Write([]byte(" and more"))
	tl.Draw(ps)
	ps.Show()
	if len(at) != 1 || !strings.Contains(at[0], "first frame") {
		t.Fatalf("OnShown ran %d times, with the terminal sent %q; want once, after the frame", len(at), at)
	}
}
