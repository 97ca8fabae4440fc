package term

import (
	"fmt"
	"math/rand"
	"strings"
	"testing"
)

// same fails unless b shows what a shows: every screen row with its
// attributes, the scrollback, the cursor, the input modes and the title.
func same(t *testing.T, what string, a, b *Emulator) {
	t.Helper()
	aw, ah := a.Size()
	bw, bh := b.Size()
	if aw != bw || ah != bh {
		t.Fatalf("%s: size %dx%d, copy %dx%d", what, aw, ah, bw, bh)
	}
	if at, bt := a.AllText(), b.AllText(); at != bt {
		t.Fatalf("%s: text differs\n--- original\n%s\n--- copy\n%s", what, at, bt)
	}
	var sa, sb Snapshot
	for off := 0; off <= a.ScrollbackLines(); off += ah {
		a.Snapshot(&sa, off)
		b.Snapshot(&sb, off)
		if sa.Scrollback != sb.Scrollback || sa.AltScreen != sb.AltScreen || sa.Title != sb.Title || sa.Reverse != sb.Reverse {
			t.Fatalf("%s: scrollback %d alt %v title %q reverse %v; copy %d %v %q %v", what, sa.Scrollback, sa.AltScreen, sa.Title, sa.Reverse, sb.Scrollback, sb.AltScreen, sb.Title, sb.Reverse)
		}
		if off == 0 && (sa.CursorX != sb.CursorX || sa.CursorY != sb.CursorY || sa.CursorVisible != sb.CursorVisible || sa.CursorStyle != sb.CursorStyle) {
			t.Fatalf("%s: cursor %d,%d,%v,%d; copy %d,%d,%v,%d", what, sa.CursorX, sa.CursorY, sa.CursorVisible, sa.CursorStyle, sb.CursorX, sb.CursorY, sb.CursorVisible, sb.CursorStyle)
		}
		for i := range sa.Cells {
			ca, cb := sa.Cells[i], sb.Cells[i]
			if sa.Grapheme(ca) != sb.Grapheme(cb) || ca.Fg != cb.Fg || ca.Bg != cb.Bg || ca.Attr != cb.Attr {
				t.Fatalf("%s: offset %d cell %d,%d: %q %+v; copy %q %+v", what, off, i%aw, i/aw, sa.Grapheme(ca), ca, sb.Grapheme(cb), cb)
			}
		}
	}
	if a.InputModes() != b.InputModes() {
		t.Fatalf("%s: input modes %+v, copy %+v", what, a.InputModes(), b.InputModes())
	}
}

// noise is terminal output with colours, wide characters, clusters, long
// wrapped lines, scrolling, cursor moves, a scroll region and mode changes.
func noise(r *rand.Rand, n int) string {
	var b strings.Builder
	pieces := []func(){
		func() { fmt.Fprintf(&b, "line %d of output\r\n", r.Intn(1000)) },
		func() { fmt.Fprintf(&b, "\x1b[%d;%dm coloured \x1b[0m", 30+r.Intn(8), 40+r.Intn(8)) },
		func() {
			fmt.Fprintf(&b, "\x1b[38;5;%dm\x1b[48;2;%d;%d;%dmrgb\x1b[m", r.Intn(256), r.Intn(256), r.Intn(256), r.Intn(256))
		},
		func() { b.WriteString("\x1b[1;3;4;7;9;53mstyled\x1b[22;23;24;27;29;55m plain") },
		func() { b.WriteString("宽字符 and e\u0301 and 👍🏽 ") },
		func() { b.WriteString(strings.Repeat("wrapped-", 1+r.Intn(12))) },
		func() { fmt.Fprintf(&b, "\x1b[%d;%dH", 1+r.Intn(12), 1+r.Intn(40)) },
		func() { b.WriteString("\x1b[K\x1b[1J") },
		func() { b.WriteString("\r\n\r\n\r\n") },
		func() { b.WriteString("\x1b[?2004h\x1b[?1h\x1b[?1002h\x1b[?1006h\x1b[4 q") },
		func() { b.WriteString("\x1b[?25l") },
		func() { b.WriteString("\x1b[?25h") },
		func() { b.WriteString("\x1b]2;a title\x07") },
		func() { b.WriteString("\x1b[3;9r\x1b[5;1Hregion\n\n\n\n\n\n\x1b[r") },
		func() { b.WriteString("\x1b[?1049hfull screen app\x1b[5;5Hmenu\x1b[?1049l") },
		func() { b.WriteString("\x1b[31mpen left red") },
	}
	for i := 0; i < n; i++ {
		pieces[r.Intn(len(pieces))]()
	}
	return b.String()
}

// A copy built from State shows the same as the original, and a copy fed
// the tap's stream after that keeps showing the same.
func TestStateRebuildsTheEmulator(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		r := rand.New(rand.NewSource(seed))
		a := New(40, 12, WithScrollback(200))
		a.Write([]byte(noise(r, 200)))
		var stream []byte
		var sizes [][2]int
		var parts Parts
		detach := a.AttachParts(&Tap{
			Output: func(p []byte) { stream = append(stream, p...) },
			Resize: func(w, h int) { sizes = append(sizes, [2]int{w, h}) },
		}, func(p Parts) { parts = p })
		if parts.Scrollback != 200 {
			t.Fatalf("the state says a history of %d rows, want 200", parts.Scrollback)
		}
		b := FromParts(parts)
		lazy := FromParts(parts) // its history is loaded after the stream
		if b.ScrollbackLines() != 0 {
			t.Fatalf("seed %d: a copy has %d history rows before LoadHistory", seed, b.ScrollbackLines())
		}
		a.History(func(h []byte) {
			if err := b.LoadHistory(h); err != nil {
				t.Fatal(err)
			}
		})
		same(t, fmt.Sprintf("seed %d, state", seed), a, b)
		// The whole state as bytes rebuilds it too.
		{
			var v *Emulator
			a.Attach(&Tap{Output: func([]byte) {}, Resize: func(int, int) {}}, func(w, h int, st []byte) {
				v = New(w, h, WithScrollback(200))
				v.Write(st)
			})()
			same(t, fmt.Sprintf("seed %d, state as bytes", seed), a, v)
		}

		more := noise(r, 100)
		if seed%2 == 0 {
			more += "\x1b[?1049hin the alternate screen\x1b[2;2H"
		}
		a.Write([]byte(more))
		b.Write(stream)
		same(t, fmt.Sprintf("seed %d, after the stream", seed), a, b)
		lazy.Write(stream)
		if _, end := a.RowSpan(); func() uint64 { _, e := lazy.RowSpan(); return e }() != end {
			t.Fatalf("seed %d: the copy numbers its rows differently before its history is loaded", seed)
		}
		a.History(func(h []byte) {
			if err := lazy.LoadHistory(h); err != nil {
				t.Fatal(err)
			}
		})
		same(t, fmt.Sprintf("seed %d, history loaded after the stream", seed), a, lazy)

		// A copy made in the alternate screen comes back to the main one.
		if seed%2 == 0 {
			c := New(a.Size())
			_, _, st := a.State()
			c.Write(st)
			a.Write([]byte("\x1b[?1049l"))
			c.Write([]byte("\x1b[?1049l"))
			same(t, fmt.Sprintf("seed %d, after leaving the alternate screen", seed), a, c)
		}
		a.Resize(30, 10)
		// The copy follows the resize the tap reports: both reflow alike.
		if seed%2 == 1 {
			b.Resize(30, 10)
			same(t, fmt.Sprintf("seed %d, after a reflow", seed), a, b)
			a.Resize(55, 14)
			b.Resize(55, 14)
			same(t, fmt.Sprintf("seed %d, after a wider reflow", seed), a, b)
		}
		detach()
		a.Write([]byte("not seen by the tap"))
		if len(sizes) < 1 || sizes[0] != [2]int{30, 10} || strings.Contains(string(stream), "not seen") {
			t.Fatalf("seed %d: tap saw resizes %v after detach", seed, sizes)
		}
	}
}

// A history that is not one Attach packed is refused, not half loaded.
func TestLoadHistoryRefusesGarbage(t *testing.T) {
	a := New(20, 4)
	a.Write([]byte(strings.Repeat("some line\r\n", 30)))
	var hist []byte
	a.History(func(p []byte) { hist = p })
	for _, bad := range [][]byte{{0xff}, hist[:len(hist)-3], {1, 0, 0, 9}} {
		b := New(20, 4)
		if err := b.LoadHistory(bad); err == nil {
			t.Fatalf("%x loaded", bad)
		}
	}
}

// WantHistory calls the func OnWantHistory set, once.
func TestWantHistoryOnce(t *testing.T) {
	e := New(10, 2)
	n := 0
	e.OnWantHistory(func() { n++ })
	if e.HistoryPending() {
		t.Fatal("pending before it was wanted")
	}
	e.WantHistory()
	e.WantHistory()
	if n != 1 || !e.HistoryPending() {
		t.Fatalf("called %d times, pending %v", n, e.HistoryPending())
	}
	var h []byte
	New(10, 2).History(func(p []byte) { h = p })
	if err := e.LoadHistory(h); err != nil || e.HistoryPending() {
		t.Fatalf("still pending after LoadHistory (%v)", err)
	}
}
