package tile

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/agent/term"
)

func newScreen(t *testing.T, w, h int) tcell.SimulationScreen {
	t.Helper()
	s := tcell.NewSimulationScreen("UTF-8")
	if err := s.Init(); err != nil {
		t.Fatal(err)
	}
	s.SetSize(w, h)
	t.Cleanup(s.Fini)
	return s
}

// rowText returns screen row y from x0, w cells wide.
func rowText(s tcell.SimulationScreen, x0, y, w int) string {
	cells, sw, _ := s.GetContents()
	var b strings.Builder
	for x := x0; x < x0+w; x++ {
		c := cells[y*sw+x]
		if len(c.Runes) == 0 {
			b.WriteByte(' ')
			continue
		}
		b.WriteString(string(c.Runes))
	}
	return b.String()
}

func TestDrawCellsAndTitle(t *testing.T) {
	emu := term.New(10, 3)
	emu.Write([]byte("\x1b]0;agent title\x07hi \x1b[31mred\x1b[m\r\n中x"))
	tl := New(emu, nil).SetLabel("claude")
	tl.SetRect(0, 0, 12, 5) // border leaves 10×3
	s := newScreen(t, 12, 5)
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 10); got != "hi red    " {
		t.Errorf("row 1 = %q", got)
	}
	if got := rowText(s, 1, 2, 10); !strings.HasPrefix(got, "中") {
		t.Errorf("row 2 = %q", got)
	}
	_, st, _ := s.Get(4, 1)
	if fg, _, _ := st.Decompose(); fg != tcell.PaletteColor(1) {
		t.Errorf("red cell fg = %v", fg)
	}
	_, st, _ = s.Get(1, 1)
	if fg, bg, _ := st.Decompose(); fg != tcell.ColorDefault || bg != tcell.ColorDefault {
		t.Errorf("default cell = %v/%v, want the default colour kept", fg, bg)
	}
	// Cut at the end to the box, so the label (the agent) always shows.
	if got := tl.GetTitle(); got != " claude … " {
		t.Errorf("narrow title = %q", got)
	}
	tl.SetRect(0, 0, 40, 5)
	tl.Draw(newScreen(t, 40, 5))
	if !strings.Contains(tl.GetTitle(), "claude — agent title") {
		t.Errorf("title = %q", tl.GetTitle())
	}
}

func TestCursorOnlyWhenFocused(t *testing.T) {
	emu := term.New(10, 3)
	emu.Write([]byte("ab"))
	tl := New(emu, nil)
	tl.SetRect(0, 0, 12, 5)
	s := newScreen(t, 12, 5)
	tl.Draw(s)
	s.Show()
	if _, _, visible := s.GetCursor(); visible {
		t.Error("cursor shown on an unfocused tile")
	}
	tl.Focus(func(tview.Primitive) {})
	tl.Draw(s)
	s.Show()
	if x, y, visible := s.GetCursor(); !visible || x != 3 || y != 1 {
		t.Errorf("cursor = %d,%d visible %v", x, y, visible)
	}
}

func TestResizeEmulatorThenPTY(t *testing.T) {
	emu := term.New(10, 3)
	tl := New(emu, nil)
	var got []int
	tl.SetResizeFunc(func(w, h int) {
		ew, eh := emu.Size() // already resized when the PTY is told
		got = append(got, w, h, ew, eh)
	})
	tl.SetRect(0, 0, 22, 7)
	tl.Draw(newScreen(t, 22, 7))
	if len(got) != 4 || got[0] != 20 || got[1] != 5 || got[2] != 20 || got[3] != 5 {
		t.Errorf("resize calls = %v", got)
	}
}

func TestSynchronizedOutputHoldsFrame(t *testing.T) {
	emu := term.New(10, 3)
	emu.Write([]byte("old"))
	tl := New(emu, nil)
	tl.SetRect(0, 0, 12, 5)
	s := newScreen(t, 12, 5)
	tl.Draw(s)
	emu.TakeDirty()
	emu.Write([]byte("\x1b[?2026h\x1b[2J\x1b[Hnew"))
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 3); got != "old" {
		t.Errorf("during 2026 the tile shows %q, want the previous frame", got)
	}
	if !emu.TakeDirty() {
		t.Error("held frame not marked for a later redraw")
	}
	emu.Write([]byte("\x1b[?2026l"))
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 3); got != "new" {
		t.Errorf("after 2026l the tile shows %q", got)
	}
}

func TestScrollbackViewKeysAndWheel(t *testing.T) {
	emu := term.New(10, 3)
	for i := 0; i < 10; i++ {
		emu.Write([]byte("line " + string(rune('0'+i)) + "\r\n"))
	}
	var sent bytes.Buffer
	tl := New(emu, &sent)
	tl.SetRect(0, 0, 12, 5)
	s := newScreen(t, 12, 5)
	h := tl.InputHandler()
	h(tcell.NewEventKey(tcell.KeyPgUp, 0, tcell.ModNone), nil)
	if tl.ScrollOffset() == 0 || sent.Len() != 0 {
		t.Fatalf("PgUp on the main screen: offset %d, sent %q", tl.ScrollOffset(), sent.String())
	}
	tl.Draw(s)
	s.Show()
	if !strings.Contains(tl.GetTitle(), "scrollback") {
		t.Error("scrollback view not shown in the title")
	}
	h(tcell.NewEventKey(tcell.KeyRune, 'x', tcell.ModNone), nil)
	if tl.ScrollOffset() != 0 || sent.String() != "x" {
		t.Errorf("typing: offset %d, sent %q", tl.ScrollOffset(), sent.String())
	}
	mh := tl.MouseHandler()
	mh(tview.MouseScrollUp, tcell.NewEventMouse(2, 2, tcell.WheelUp, 0), func(tview.Primitive) {})
	if tl.ScrollOffset() != wheelLines {
		t.Errorf("wheel: offset %d", tl.ScrollOffset())
	}
	// When the child asks for the mouse, the wheel goes to it.
	emu.Write([]byte("\x1b[?1000h\x1b[?1006h"))
	sent.Reset()
	mh(tview.MouseScrollUp, tcell.NewEventMouse(2, 2, tcell.WheelUp, 0), func(tview.Primitive) {})
	if sent.String() != "\x1b[<64;2;2M" {
		t.Errorf("wheel sent %q", sent.String())
	}
	// A full-screen child gets PgUp.
	emu.Write([]byte("\x1b[?1049h"))
	sent.Reset()
	h(tcell.NewEventKey(tcell.KeyPgUp, 0, tcell.ModNone), nil)
	if sent.String() != "\x1b[5~" {
		t.Errorf("PgUp on the alternate screen sent %q", sent.String())
	}
}

func TestPasteAndFocus(t *testing.T) {
	emu := term.New(10, 3)
	emu.Write([]byte("\x1b[?2004h\x1b[?1004h"))
	var sent bytes.Buffer
	tl := New(emu, &sent)
	tl.PasteHandler()("hi", func(tview.Primitive) {})
	tl.Focus(func(tview.Primitive) {})
	tl.Blur()
	if got := sent.String(); got != "\x1b[200~hi\x1b[201~\x1b[I\x1b[O" {
		t.Errorf("sent %q", got)
	}
}

func TestEncodeKey(t *testing.T) {
	plain := term.InputModes{}
	app := term.InputModes{AppCursor: true}
	mok := term.InputModes{ModifyOtherKeys: 2}
	tests := []struct {
		name string
		ev   *tcell.EventKey
		m    term.InputModes
		want string
	}{
		{"rune", tcell.NewEventKey(tcell.KeyRune, 'é', 0), plain, "é"},
		{"alt rune", tcell.NewEventKey(tcell.KeyRune, 'x', tcell.ModAlt), plain, "\x1bx"},
		{"enter", tcell.NewEventKey(tcell.KeyEnter, 0, 0), plain, "\r"},
		{"ctrl-c", tcell.NewEventKey(tcell.KeyCtrlC, 0, tcell.ModCtrl), plain, "\x03"},
		{"backspace", tcell.NewEventKey(tcell.KeyDEL, 0, 0), plain, "\x7f"},
		{"ctrl-a from rune", tcell.NewEventKey(tcell.KeyRune, 1, 0), plain, "\x01"},
		{"alt-ctrl-a", tcell.NewEventKey(tcell.KeyCtrlA, 0, tcell.ModCtrl|tcell.ModAlt), plain, "\x1b\x01"},
		{"esc", tcell.NewEventKey(tcell.KeyEscape, 0, 0), plain, "\x1b"},
		{"up", tcell.NewEventKey(tcell.KeyUp, 0, 0), plain, "\x1b[A"},
		{"up DECCKM", tcell.NewEventKey(tcell.KeyUp, 0, 0), app, "\x1bOA"},
		{"ctrl-right", tcell.NewEventKey(tcell.KeyRight, 0, tcell.ModCtrl), app, "\x1b[1;5C"},
		{"home DECCKM", tcell.NewEventKey(tcell.KeyHome, 0, 0), app, "\x1bOH"},
		{"delete", tcell.NewEventKey(tcell.KeyDelete, 0, 0), plain, "\x1b[3~"},
		{"shift-pgdn", tcell.NewEventKey(tcell.KeyPgDn, 0, tcell.ModShift), plain, "\x1b[6;2~"},
		{"F1", tcell.NewEventKey(tcell.KeyF1, 0, 0), plain, "\x1bOP"},
		{"F5", tcell.NewEventKey(tcell.KeyF5, 0, 0), plain, "\x1b[15~"},
		{"backtab", tcell.NewEventKey(tcell.KeyBacktab, 0, tcell.ModShift), plain, "\x1b[Z"},
		{"shift-enter plain", tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModShift), plain, "\r"},
		{"shift-enter modifyOtherKeys", tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModShift), mok, "\x1b[27;2;13~"},
		{"ctrl-1 modifyOtherKeys", tcell.NewEventKey(tcell.KeyRune, '1', tcell.ModCtrl), mok, "\x1b[27;5;49~"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(EncodeKey(tt.ev, tt.m)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// RunFrames draws when the emulator changes, woken by it rather than by a
// ticker, and keeps doing so for each later change.
func TestRunFramesDrawsOnOutput(t *testing.T) {
	emu := term.New(20, 3)
	tl := New(emu, nil)
	sim := tcell.NewSimulationScreen("UTF-8")
	sim.SetSize(30, 6)
	app := tview.NewApplication().SetScreen(sim).SetRoot(tl, true)
	shown := make(chan string, 100)
	app.SetAfterDrawFunc(func(s tcell.Screen) {
		s.Show() // tview shows after this func; the contents read are the shown ones
		shown <- rowText(sim, 1, 1, 20)
	})
	appDone := make(chan error, 1)
	go func() { appDone <- app.Run() }()
	ctx, cancel := context.WithCancel(context.Background())
	framesDone := make(chan struct{})
	go func() {
		defer close(framesDone)
		RunFrames(ctx, app, 0, []*Tile{tl})
	}()
	waitShown := func(want string) {
		t.Helper()
		hang := time.After(60 * time.Second)
		for {
			select {
			case got := <-shown:
				if strings.Contains(got, want) {
					return
				}
			case <-hang:
				t.Fatalf("%q never drawn", want)
			}
		}
	}
	emu.Write([]byte("hello"))
	waitShown("hello")
	emu.Write([]byte(" world"))
	waitShown("hello world")
	cancel()
	<-framesDone
	app.Stop()
	if err := <-appDone; err != nil {
		t.Fatal(err)
	}
}

// A copy of a remote terminal asks for its history at the first scroll
// back, and the view goes as far back as asked once the history is in.
func TestScrollFetchesTheHistory(t *testing.T) {
	orig := term.New(10, 3)
	for i := 0; i < 10; i++ {
		orig.Write([]byte("line " + string(rune('0'+i)) + "\r\n"))
	}
	var parts term.Parts
	orig.AttachParts(&term.Tap{Output: func([]byte) {}, Resize: func(int, int) {}}, func(p term.Parts) { parts = p })()
	emu := term.FromParts(parts)
	asked := 0
	emu.OnWantHistory(func() { asked++ })
	tl := New(emu, io.Discard)
	tl.SetRect(0, 0, 12, 5)
	s := newScreen(t, 12, 5)
	tl.Draw(s)
	mh := tl.MouseHandler()
	mh(tview.MouseScrollUp, tcell.NewEventMouse(2, 2, tcell.WheelUp, 0), func(tview.Primitive) {})
	tl.Draw(s) // before the history is in
	if asked != 1 || tl.ScrollOffset() != wheelLines {
		t.Fatalf("asked %d times, offset %d while the history is on its way", asked, tl.ScrollOffset())
	}
	orig.History(func(p []byte) {
		if err := emu.LoadHistory(p); err != nil {
			t.Fatal(err)
		}
	})
	tl.Draw(s)
	s.Show()
	if tl.ScrollOffset() != wheelLines || rowText(s, 1, 1, 6) != "line 5" {
		t.Fatalf("offset %d, top row %q", tl.ScrollOffset(), rowText(s, 1, 1, 6))
	}
	mh(tview.MouseScrollUp, tcell.NewEventMouse(2, 2, tcell.WheelUp, 0), func(tview.Primitive) {})
	if asked != 1 {
		t.Fatalf("asked again: %d", asked)
	}
}
