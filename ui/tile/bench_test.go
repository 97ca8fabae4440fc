package tile

import (
	"fmt"
	"os"
	"testing"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/agent/term"
)

// nullTty is a terminal that swallows output and never has input, so a
// benchmark pays for tcell's real output path without a device.
type nullTty struct{ drain chan struct{} }

func (t *nullTty) Start() error                { t.drain = make(chan struct{}); return nil }
func (t *nullTty) Stop() error                 { return nil }
func (t *nullTty) Drain() error                { close(t.drain); return nil }
func (t *nullTty) NotifyResize(func())         {}
func (t *nullTty) Close() error                { return nil }
func (t *nullTty) Write(p []byte) (int, error) { return len(p), nil }
func (t *nullTty) Read([]byte) (int, error)    { <-t.drain; return 0, os.ErrClosed }
func (t *nullTty) WindowSize() (tcell.WindowSize, error) {
	return tcell.WindowSize{Width: 200, Height: 60}, nil
}

// BenchmarkFrame is one frame of the busy-grid case: 8 tiles in a 4x2
// grid on a 200x60 xterm, each having received 200 more bytes of a
// recorded Claude Code stream (10x its real rate at 30 frames a second),
// redrawn with DrawChanged and shown once: through tcell's Show, and
// through a Painter.
func BenchmarkFrame(b *testing.B) {
	b.Run("tcell", func(b *testing.B) { benchFrame(b, false) })
	b.Run("painter", func(b *testing.B) { benchFrame(b, true) })
}

func benchFrame(b *testing.B, paint bool) {
	paintEnv(b)
	data, err := os.ReadFile("../../agent/term/testdata/replay/claude-fullscreen/stream.raw")
	if err != nil {
		b.Fatal(err)
	}
	ti, err := tcell.LookupTerminfo("xterm")
	if err != nil {
		b.Fatal(err)
	}
	screen, err := tcell.NewTerminfoScreenFromTtyTerminfo(&nullTty{}, ti)
	if err != nil {
		b.Fatal(err)
	}
	if err := screen.Init(); err != nil {
		b.Fatal(err)
	}
	defer screen.Fini()
	var p *Painter
	if paint {
		if p = NewPainter(screen, ti); p == nil || !p.Start() {
			b.Fatal("no painter")
		}
		screen = p.Screen()
	}
	const cols, rows = 4, 2
	var tiles []*Tile
	for i := range cols * rows {
		tl := New(term.New(48, 28, term.WithScrollback(5000)), nil)
		// As the UI's tiles: a box that leaves the background alone.
		tl.Box = tview.NewFlex().Box
		tl.SetBorder(true)
		tl.SetRect(i%cols*50, i/cols*30, 50, 30)
		tiles = append(tiles, tl)
	}
	offs := make([]int, len(tiles))
	for i := range offs {
		offs[i] = i * len(data) / len(offs) // out of step, as real agents are
	}
	const chunk = 200
	frame := func() {
		for i, tl := range tiles {
			n := min(chunk, len(data)-offs[i])
			tl.Emulator().Write(data[offs[i] : offs[i]+n])
			if offs[i] += n; offs[i] == len(data) {
				tl.Emulator().Write([]byte("\x1b[?1049l\x1b[!p\x1b[2J\x1b[H"))
				offs[i] = 0
			}
			tl.DrawChanged(screen, p)
		}
		if p != nil {
			p.Flush()
		} else {
			screen.Show()
		}
	}
	for range len(data) / chunk {
		frame() // the first full draw, and every tile's screen filled
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		frame()
	}
}

// BenchmarkFirstFrame is an attach's first frame: 8 tiles of coloured
// agent output in a 4x2 grid on a 200x60 xterm, drawn in full on a
// terminal that shows nothing yet, as tview draws (Clear, every tile,
// Show): through tcell, and through a Painter's screen.
func BenchmarkFirstFrame(b *testing.B) {
	b.Run("tcell", func(b *testing.B) { benchFirstFrame(b, false) })
	b.Run("painter", func(b *testing.B) { benchFirstFrame(b, true) })
}

func benchFirstFrame(b *testing.B, paint bool) {
	paintEnv(b)
	ti, err := tcell.LookupTerminfo("xterm-256color")
	if err != nil {
		b.Fatal(err)
	}
	tty := &countTty{}
	screen, err := tcell.NewTerminfoScreenFromTtyTerminfo(tty, ti)
	if err != nil {
		b.Fatal(err)
	}
	if err := screen.Init(); err != nil {
		b.Fatal(err)
	}
	defer screen.Fini()
	cells := screen.(interface{ GetCells() *tcell.CellBuffer }).GetCells()
	if paint {
		p := NewPainter(screen, ti)
		if p == nil || !p.Start() {
			b.Fatal("no painter")
		}
		screen = p.Screen()
	}
	const cols, rows = 4, 2
	var tiles []*Tile
	for i := range cols * rows {
		emu := term.New(48, 28)
		for n := range 40 {
			fmt.Fprintf(emu, "\x1b[2m%5d\x1b[0m \x1b[32m✓\x1b[0m agent %d: edited the tests in package %d", n, i, n*7)
			if n%10 == 0 {
				fmt.Fprintf(emu, " \x1b[33mpkg/mod%03d/file.go\x1b[0m", n)
			}
			emu.Write([]byte("\r\n"))
		}
		tl := New(emu, nil)
		tl.Box = tview.NewFlex().Box
		tl.SetBorder(true)
		tl.SetRect(i%cols*50, i/cols*30, 50, 30)
		tiles = append(tiles, tl)
	}
	frame := func() {
		cells.Invalidate()
		screen.Clear()
		for _, tl := range tiles {
			tl.Draw(screen)
		}
		screen.Show()
	}
	frame()
	b.ReportAllocs()
	b.ResetTimer()
	tty.n = 0
	for range b.N {
		frame()
	}
	b.ReportMetric(float64(tty.n)/float64(b.N), "B/frame")
}

// countTty is nullTty counting what is written.
type countTty struct {
	nullTty
	n int
}

func (t *countTty) Write(p []byte) (int, error) { t.n += len(p); return len(p), nil }
