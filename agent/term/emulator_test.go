package term

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// run feeds s to a w×h emulator.
func run(t *testing.T, w, h int, s string, opts ...Option) *Emulator {
	t.Helper()
	e := New(w, h, opts...)
	if n, err := e.Write([]byte(s)); n != len(s) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	return e
}

func wantLines(t *testing.T, e *Emulator, want ...string) {
	t.Helper()
	got := e.Lines()
	for len(want) < len(got) {
		want = append(want, "")
	}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("screen:\n got %q\nwant %q", got, want)
	}
}

func wantCursor(t *testing.T, e *Emulator, x, y int) {
	t.Helper()
	if cx, cy, _ := e.Cursor(); cx != x || cy != y {
		t.Errorf("cursor = %d,%d, want %d,%d", cx, cy, x, y)
	}
}

func cell(e *Emulator, x, y int) Cell {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur.rows[y].cells[x]
}

func TestCursorMovement(t *testing.T) {
	tests := []struct {
		name string
		in   string
		x, y int
	}{
		{"CUP", "\x1b[3;5H", 4, 2},
		{"CUP default", "\x1b[3;5H\x1b[H", 0, 0},
		{"CUP clamps", "\x1b[99;99H", 9, 4},
		{"HVP", "\x1b[2;2f", 1, 1},
		{"CUU", "\x1b[4;4H\x1b[2A", 3, 1},
		{"CUU stops at top", "\x1b[2;1H\x1b[9A", 0, 0},
		{"CUD", "\x1b[B\x1b[2B", 0, 3},
		{"CUF", "\x1b[3C", 3, 0},
		{"CUF zero is one", "\x1b[0C", 1, 0},
		{"CUB", "\x1b[1;6H\x1b[2D", 3, 0},
		{"CNL", "abc\x1b[2E", 0, 2},
		{"CPL", "\x1b[4;4H\x1b[F", 0, 2},
		{"CHA", "\x1b[7G", 6, 0},
		{"HPA", "\x1b[3`", 2, 0},
		{"VPA", "ab\x1b[4d", 2, 3},
		{"HPR VPR", "\x1b[2a\x1b[2e", 2, 2},
		{"CR LF", "abc\r\n", 0, 1},
		{"BS", "abc\b", 2, 0},
		{"HT", "\tx", 9, 0},
		{"CBT", "\x1b[1;10H\x1b[Z", 8, 0},
		{"CHT", "\x1b[2I", 9, 0},
		{"DECSC DECRC", "\x1b[2;3H\x1b7\x1b[H\x1b8", 2, 1},
		{"SCOSC SCORC", "\x1b[3;4H\x1b[s\x1b[H\x1b[u", 3, 2},
		{"NEL", "abc\x1bE", 0, 1},
		{"IND", "abc\x1bD", 3, 1},
		{"RI", "\x1b[3;1H\x1bM", 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := run(t, 10, 5, tt.in)
			wantCursor(t, e, tt.x, tt.y)
		})
	}
}

func TestKittyKeyboardQueriesAreNotCursorRestores(t *testing.T) {
	e := run(t, 10, 5, "\x1b[2;2H\x1b7\x1b[4;4H\x1b[?u\x1b[>1u\x1b[<u\x1b[=1;1u")
	wantCursor(t, e, 3, 3)
	wantLines(t, e)
}

func TestErase(t *testing.T) {
	fill := "abcde\r\nfghij\r\nklmno"
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"ED0", "\x1b[2;3H\x1b[J", []string{"abcde", "fg"}},
		{"ED1", "\x1b[2;3H\x1b[1J", []string{"", "   ij", "klmno"}},
		{"ED2", "\x1b[2J", nil},
		{"EL0", "\x1b[2;3H\x1b[K", []string{"abcde", "fg", "klmno"}},
		{"EL1", "\x1b[2;3H\x1b[1K", []string{"abcde", "   ij", "klmno"}},
		{"EL2", "\x1b[2;3H\x1b[2K", []string{"abcde", "", "klmno"}},
		{"ECH", "\x1b[2;2H\x1b[2X", []string{"abcde", "f  ij", "klmno"}},
		{"ICH", "\x1b[2;2H\x1b[2@", []string{"abcde", "f  gh", "klmno"}},
		{"DCH", "\x1b[2;2H\x1b[2P", []string{"abcde", "fij", "klmno"}},
		{"IL", "\x1b[2;3H\x1b[L", []string{"abcde", "", "fghij", "klmno"}},
		{"DL", "\x1b[1;3H\x1b[L\x1b[2M", []string{"fghij", "klmno"}},
		{"DECSED", "\x1b[2;3H\x1b[?J", []string{"abcde", "fg"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := run(t, 5, 4, fill+tt.in)
			wantLines(t, e, tt.want...)
		})
	}
}

func TestEraseUsesCurrentBackground(t *testing.T) {
	e := run(t, 5, 2, "abc\x1b[44m\x1b[1;2H\x1b[K")
	c := cell(e, 3, 0)
	if c.Bg != IndexedColor(4) || c.Rune != 0 {
		t.Errorf("erased cell = %+v, want blue background", c)
	}
	if cell(e, 0, 0).Bg != DefaultColor {
		t.Errorf("cell before the cursor changed")
	}
}

func TestScrollRegion(t *testing.T) {
	// Region rows 2–3: a line feed at row 3 scrolls only the region.
	e := run(t, 5, 4, "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[3;1H\nx")
	wantLines(t, e, "1", "3", "x", "4")
	if e.ScrollbackLines() != 0 {
		t.Errorf("a partial region must not feed the scrollback")
	}
	// RI at the top margin scrolls the region down.
	e = run(t, 5, 4, "1\r\n2\r\n3\r\n4\x1b[2;3r\x1b[2;1H\x1bMy")
	wantLines(t, e, "1", "y", "2", "4")
	// SU / SD.
	e = run(t, 5, 4, "1\r\n2\r\n3\r\n4\x1b[S")
	wantLines(t, e, "2", "3", "4", "")
	e = run(t, 5, 4, "1\r\n2\r\n3\r\n4\x1b[2T")
	wantLines(t, e, "", "", "1", "2")
	// DECSTBM homes the cursor.
	e = run(t, 5, 4, "\x1b[3;3H\x1b[2;3r")
	wantCursor(t, e, 0, 0)
}

func TestOriginMode(t *testing.T) {
	e := run(t, 5, 5, "\x1b[2;4r\x1b[?6h")
	wantCursor(t, e, 0, 1)
	e.Write([]byte("\x1b[2;2H"))
	wantCursor(t, e, 1, 2)
	e.Write([]byte("\x1b[9;1H")) // clamped to the bottom margin
	wantCursor(t, e, 0, 3)
	e.Write([]byte("\x1b[6n"))
	e.Write([]byte("\x1b[?6l"))
	wantCursor(t, e, 0, 0)
}

func TestPendingWrap(t *testing.T) {
	e := run(t, 5, 3, "abcde")
	wantCursor(t, e, 4, 0) // stays on the last column
	e.Write([]byte("\r"))
	wantCursor(t, e, 0, 0) // CR cancels the wrap
	e = run(t, 5, 3, "abcdef")
	wantLines(t, e, "abcde", "f")
	e = run(t, 5, 3, "abcde\x1b[Kx") // EL clears pending wrap, x overwrites e
	wantLines(t, e, "abcdx")
	e = run(t, 5, 3, "\x1b[?7labcdefg") // no autowrap: last column overwritten
	wantLines(t, e, "abcdg")
	e = run(t, 5, 2, "abcdefghijk") // wrapping at the bottom scrolls
	wantLines(t, e, "fghij", "k")
	if e.AllText() != "abcdefghijk" {
		t.Errorf("wrapped text = %q, want one logical line", e.AllText())
	}
}

func TestWideCharacters(t *testing.T) {
	e := run(t, 5, 2, "a中b")
	wantLines(t, e, "a中b")
	wantCursor(t, e, 4, 0)
	if c := cell(e, 1, 0); c.Width() != 2 {
		t.Errorf("wide cell width = %d", c.Width())
	}
	if c := cell(e, 2, 0); c.Width() != 0 {
		t.Errorf("continuation width = %d", c.Width())
	}
	// A wide character that does not fit wraps whole.
	e = run(t, 5, 2, "abcd中")
	wantLines(t, e, "abcd", "中")
	// Overwriting either half erases the other.
	e = run(t, 5, 2, "中文\x1b[1;2Hx")
	wantLines(t, e, " x文")
	e = run(t, 5, 2, "中文\x1b[1;3Hx")
	wantLines(t, e, "中x")
	// Combining marks join the previous cell.
	e = run(t, 5, 2, "e\u0301x")
	wantLines(t, e, "e\u0301x")
	wantCursor(t, e, 2, 0)
	// Emoji are two columns.
	e = run(t, 6, 2, "🙂x")
	wantCursor(t, e, 3, 0)
}

func TestSGR(t *testing.T) {
	tests := []struct {
		name   string
		in     string
		fg, bg Color
		attr   Attr
	}{
		{"default", "", DefaultColor, DefaultColor, 0},
		{"16", "\x1b[31;42m", IndexedColor(1), IndexedColor(2), 0},
		{"bright", "\x1b[91;102m", IndexedColor(9), IndexedColor(10), 0},
		{"256", "\x1b[38;5;208;48;5;17m", IndexedColor(208), IndexedColor(17), 0},
		{"256 colon", "\x1b[38:5:208m", IndexedColor(208), DefaultColor, 0},
		{"truecolor", "\x1b[38;2;1;2;3;48;2;4;5;6m", RGBColor(1, 2, 3), RGBColor(4, 5, 6), 0},
		{"truecolor colon cs", "\x1b[38:2::1:2:3m", RGBColor(1, 2, 3), DefaultColor, 0},
		{"truecolor colon", "\x1b[38:2:1:2:3m", RGBColor(1, 2, 3), DefaultColor, 0},
		{"default after colour", "\x1b[31;41m\x1b[39;49m", DefaultColor, DefaultColor, 0},
		{"black is not default", "\x1b[30;40m", IndexedColor(0), IndexedColor(0), 0},
		{"attributes", "\x1b[1;2;3;4;5;7;8;9;53m", 0, 0,
			AttrBold | AttrFaint | AttrItalic | AttrUnderline | AttrBlink | AttrReverse | AttrInvisible | AttrStrike | AttrOverline},
		{"attributes off", "\x1b[1;3;4;7;9m\x1b[22;23;24;27;29m", 0, 0, 0},
		{"curly underline", "\x1b[4:3m", 0, 0, AttrUnderline},
		{"underline off sub", "\x1b[4m\x1b[4:0m", 0, 0, 0},
		{"reset", "\x1b[1;31m\x1b[m", 0, 0, 0},
		{"underline colour skipped", "\x1b[58:2::9:9:9;1m", 0, 0, AttrBold},
		{"underline colour semicolons", "\x1b[58;5;3;3m", 0, 0, AttrItalic},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := run(t, 5, 1, tt.in+"x")
			c := cell(e, 0, 0)
			if c.Fg != tt.fg || c.Bg != tt.bg || c.Attr != tt.attr {
				t.Errorf("cell = fg %x bg %x attr %b, want fg %x bg %x attr %b", c.Fg, c.Bg, c.Attr, tt.fg, tt.bg, tt.attr)
			}
		})
	}
}

func TestColorAccessors(t *testing.T) {
	if i, ok := IndexedColor(7).Index(); !ok || i != 7 {
		t.Error("Index")
	}
	if r, g, b, ok := RGBColor(1, 2, 3).RGB(); !ok || r != 1 || g != 2 || b != 3 {
		t.Error("RGB")
	}
	if !DefaultColor.IsDefault() || IndexedColor(0).IsDefault() {
		t.Error("IsDefault")
	}
}

func TestAltScreen(t *testing.T) {
	for _, mode := range []string{"1049", "1047", "47"} {
		t.Run(mode, func(t *testing.T) {
			e := run(t, 10, 3, "main\x1b[2;3H\x1b[?"+mode+"h")
			if !e.AltScreen() {
				t.Fatal("not on the alternate screen")
			}
			e.Write([]byte("\x1b[Halt"))
			wantLines(t, e, "alt")
			e.Write([]byte("\x1b[?" + mode + "l"))
			if e.AltScreen() {
				t.Fatal("still on the alternate screen")
			}
			wantLines(t, e, "main")
			if mode == "1049" {
				wantCursor(t, e, 2, 1) // restored
			}
		})
	}
	// 1049 clears the alternate screen on entry.
	e := run(t, 10, 3, "\x1b[?1049hjunk\x1b[?1049l\x1b[?1049h")
	wantLines(t, e)
	// The alternate screen has no scrollback.
	e = run(t, 10, 2, "\x1b[?1049h1\r\n2\r\n3\r\n4")
	if e.ScrollbackLines() != 0 {
		t.Error("alternate screen fed the scrollback")
	}
}

func TestScrollbackCapped(t *testing.T) {
	var b strings.Builder
	for i := 0; i < 100; i++ {
		b.WriteString("line\r\n")
	}
	e := run(t, 10, 5, b.String(), WithScrollback(30))
	if n := e.ScrollbackLines(); n != 30 {
		t.Errorf("scrollback = %d, want 30", n)
	}
	e = run(t, 10, 5, b.String()+"\x1b[3J")
	if n := e.ScrollbackLines(); n != 0 {
		t.Errorf("after ED3 scrollback = %d", n)
	}
}

func TestTextSince(t *testing.T) {
	e := run(t, 10, 2, "one\r\ntwo\r\nthree")
	text, next := e.TextSince(0)
	if text != "one\ntwo\nthree" || next != 1 {
		t.Fatalf("TextSince(0) = %q, %d", text, next)
	}
	e.Write([]byte("\r\nfour"))
	text, next = e.TextSince(next)
	if text != "two\nthree\nfour" || next != 2 {
		t.Fatalf("TextSince = %q, %d", text, next)
	}
}

// lockCheckWriter fails the test if replies are written while the
// emulator lock is held (it would deadlock taking it again).
type lockCheckWriter struct {
	e   *Emulator
	buf bytes.Buffer
}

func (w *lockCheckWriter) Write(p []byte) (int, error) {
	if w.e.mu.TryLock() {
		w.e.mu.Unlock()
	} else {
		panic("reply written under the emulator lock")
	}
	return w.buf.Write(p)
}

func TestReplies(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"DA1", "\x1b[c", "\x1b[?62;22c"},
		{"DA1 zero", "\x1b[0c", "\x1b[?62;22c"},
		{"DA2", "\x1b[>c", "\x1b[>1;10;0c"},
		{"DSR status", "\x1b[5n", "\x1b[0n"},
		{"CPR", "\x1b[3;7H\x1b[6n", "\x1b[3;7R"},
		{"CPR origin", "\x1b[2;4r\x1b[?6h\x1b[2;2H\x1b[6n", "\x1b[2;2R"},
		{"DECXCPR", "\x1b[2;2H\x1b[?6n", "\x1b[?2;2R"},
		{"DECRQM set", "\x1b[?2004h\x1b[?2004$p", "\x1b[?2004;1$y"},
		{"DECRQM reset", "\x1b[?1$p", "\x1b[?1;2$y"},
		{"DECRQM 2026", "\x1b[?2026$p", "\x1b[?2026;2$y"},
		{"DECRQM unknown", "\x1b[?31337$p", "\x1b[?31337;0$y"},
		{"DECRQM ANSI", "\x1b[4$p", "\x1b[4;2$y"},
		{"XTVERSION", "\x1b[>0q", "\x1bP>|" + Version + "\x1b\\"},
		{"DECRQSS", "\x1bP$q q\x1b\\", "\x1bP0$r\x1b\\"},
		{"window size", "\x1b[18t", "\x1b[8;5;10t"},
		{"no answer to kitty query", "\x1b[?u", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := &lockCheckWriter{}
			e := New(10, 5, WithReplies(w))
			w.e = e
			e.Write([]byte(tt.in))
			if got := w.buf.String(); got != tt.want {
				t.Errorf("reply = %q, want %q", got, tt.want)
			}
			wantLines(t, e)
		})
	}
}

func TestSynchronizedOutput(t *testing.T) {
	e := run(t, 10, 2, "\x1b[?2026h")
	start := time.Now()
	if !e.SyncHeld(start) {
		t.Error("not held right after 2026h")
	}
	if e.SyncHeld(start.Add(SyncTimeout + time.Second)) {
		t.Error("held past the timeout")
	}
	e.Write([]byte("\x1b[?2026l"))
	if e.SyncHeld(start) {
		t.Error("held after 2026l")
	}
}

func TestTitles(t *testing.T) {
	e := run(t, 10, 2, "\x1b]0;first\x07\x1b]2;second\x1b\\")
	if e.Title() != "second" {
		t.Errorf("title = %q", e.Title())
	}
	e = run(t, 10, 2, "\x1b]2;kept\x07\x1b[22t\x1b]2;temp\x07\x1b[23t")
	if e.Title() != "kept" {
		t.Errorf("title after pop = %q", e.Title())
	}
	e = run(t, 10, 2, "\x1b]2;a\x01b\x07")
	if e.Title() != "ab" {
		t.Errorf("control characters kept in title: %q", e.Title())
	}
}

// ✳ is E2 9C B3: its 0x9C must not end the OSC string, at any split.
func TestStarTitleSplitAtEveryByte(t *testing.T) {
	stream := []byte("\x1b]0;\u2733 Claude Code\x07ok")
	for i := 0; i <= len(stream); i++ {
		e := New(20, 2)
		e.Write(stream[:i])
		e.Write(stream[i:])
		if e.Title() != "\u2733 Claude Code" {
			t.Errorf("split %d: title %q", i, e.Title())
		}
		wantLines(t, e, "ok")
	}
}

func TestOSC8NotPrinted(t *testing.T) {
	e := run(t, 20, 2, "\x1b]8;;https://example.com\x1b\\link\x1b]8;;\x1b\\ end")
	wantLines(t, e, "link end")
}

func TestStringsIgnored(t *testing.T) {
	e := run(t, 20, 2, "a\x1bPq#0;2;0;0;0\x1b\\b\x1b_Gf=24;AAAA\x1b\\c\x1b^pm\x1b\\d\x1bXsos\x1b\\e\x1b]7501;?\x07f")
	wantLines(t, e, "abcdef")
	// CAN aborts a string.
	e = run(t, 20, 2, "\x1b]0;x\x18y")
	wantLines(t, e, "y")
}

func TestUnknownSequencesIgnored(t *testing.T) {
	e := run(t, 20, 2, "ab\x1b[?1337h\x1b[>5;6;7Z\x1b[=3z\x1b[12;34y\x1b%G\x1b#9\x1bZ\x1b[1$zc")
	wantLines(t, e, "abc")
	wantCursor(t, e, 3, 0)
}

func TestInputModes(t *testing.T) {
	e := run(t, 10, 2, "\x1b[?1h\x1b[?2004h\x1b[?1000h\x1b[?1006h\x1b[?1004h\x1b[>4;2m\x1b=")
	m := e.InputModes()
	want := InputModes{AppCursor: true, AppKeypad: true, BracketedPaste: true, Focus: true,
		Mouse: MouseNormal, MouseSGR: true, ModifyOtherKeys: 2}
	if m != want {
		t.Errorf("modes = %+v, want %+v", m, want)
	}
	e.Write([]byte("\x1b[?1l\x1b[?2004l\x1b[?1000l\x1b[?1006l\x1b[?1004l\x1b[>4m\x1b>"))
	if m := e.InputModes(); m != (InputModes{}) {
		t.Errorf("modes after reset = %+v", m)
	}
	e.Write([]byte("\x1b[?1002h"))
	if e.InputModes().Mouse != MouseButton {
		t.Error("1002")
	}
	e.Write([]byte("\x1b[?1003h\x1b[?1002l")) // resetting another mode keeps 1003
	if e.InputModes().Mouse != MouseAny {
		t.Error("1003")
	}
}

func TestEncodeMouse(t *testing.T) {
	sgr := InputModes{Mouse: MouseNormal, MouseSGR: true}
	tests := []struct {
		name string
		m    InputModes
		ev   MouseEvent
		want string
	}{
		{"off", InputModes{}, MouseEvent{X: 1, Y: 1}, ""},
		{"sgr press", sgr, MouseEvent{X: 4, Y: 2}, "\x1b[<0;5;3M"},
		{"sgr release", sgr, MouseEvent{X: 4, Y: 2, Release: true}, "\x1b[<0;5;3m"},
		{"sgr wheel ctrl", sgr, MouseEvent{Button: ButtonWheelUp, Ctrl: true}, "\x1b[<80;1;1M"},
		{"motion needs 1002", sgr, MouseEvent{Motion: true}, ""},
		{"drag 1002", InputModes{Mouse: MouseButton, MouseSGR: true}, MouseEvent{Motion: true}, "\x1b[<32;1;1M"},
		{"legacy", InputModes{Mouse: MouseNormal}, MouseEvent{X: 0, Y: 0, Button: ButtonRight}, "\x1b[M\"!!"},
		{"legacy release", InputModes{Mouse: MouseNormal}, MouseEvent{Button: ButtonLeft, Release: true}, "\x1b[M#!!"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(EncodeMouse(tt.m, tt.ev)); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
	if got := string(EncodePaste(InputModes{BracketedPaste: true}, []byte("a\x1b[201~b"))); got != "\x1b[200~ab\x1b[201~" {
		t.Errorf("paste = %q", got)
	}
	if got := string(EncodePaste(InputModes{}, []byte("ab"))); got != "ab" {
		t.Errorf("plain paste = %q", got)
	}
	if string(EncodeFocus(InputModes{Focus: true}, true)) != "\x1b[I" || EncodeFocus(InputModes{}, true) != nil {
		t.Error("focus")
	}
}

func TestCharsetsAndMisc(t *testing.T) {
	e := run(t, 10, 2, "\x1b(0lqk\x1b(Bx")
	wantLines(t, e, "┌─┐x")
	e = run(t, 10, 2, "\x1b)0a\x0eq\x0fq")
	wantLines(t, e, "a─q")
	e = run(t, 10, 2, "ab\x1b[3b")
	wantLines(t, e, "abbbb")
	e = run(t, 4, 2, "\x1b#8")
	wantLines(t, e, "EEEE", "EEEE")
	e = run(t, 10, 2, "abc\x1b[1;2H\x1b[4hX") // insert mode
	wantLines(t, e, "aXbc")
	e = run(t, 10, 2, "abc\x1b[31m\x1bcd") // RIS
	wantLines(t, e, "d")
	if e.AllText() != "abc\nd" || cell(e, 0, 0).Fg != DefaultColor {
		t.Errorf("after RIS: text %q, colour %x", e.AllText(), cell(e, 0, 0).Fg)
	}
}

func TestUTF8SplitAndInvalid(t *testing.T) {
	s := []byte("é中🙂")
	for i := 0; i <= len(s); i++ {
		e := New(10, 1)
		e.Write(s[:i])
		e.Write(s[i:])
		wantLines(t, e, "é中🙂")
	}
	// Stray continuation bytes and C1 bytes are dropped, not parsed as C1.
	e := run(t, 10, 1, "a\x9b31mb\x80\xffc\xe2d")
	wantLines(t, e, "a31mbcd")
}

func TestResize(t *testing.T) {
	e := run(t, 10, 4, "1\r\n2\r\n3\r\n4")
	e.Resize(10, 2)
	wantLines(t, e, "3", "4")
	wantCursor(t, e, 1, 1)
	if e.ScrollbackLines() != 2 {
		t.Errorf("scrollback = %d", e.ScrollbackLines())
	}
	e.Resize(10, 4) // rows come back from the scrollback
	wantLines(t, e, "1", "2", "3", "4")
	wantCursor(t, e, 1, 3)
	e.Resize(3, 4)
	e.Write([]byte("abcd"))
	wantLines(t, e, "2", "3", "4ab", "cd")
	// Shrinking drops blank rows below the cursor before history.
	e = run(t, 10, 4, "top")
	e.Resize(10, 2)
	wantLines(t, e, "top")
	// A wide character cut by the new edge goes whole to the next row.
	e = run(t, 4, 1, "ab中")
	e.Resize(3, 1)
	wantLines(t, e, "中")
	if got := e.AllText(); got != "ab中" {
		t.Errorf("text %q", got)
	}
}

func TestSnapshot(t *testing.T) {
	e := run(t, 4, 2, "1\r\n2\r\n3\x1b[?25l")
	var s Snapshot
	e.Snapshot(&s, 0)
	if s.W != 4 || s.H != 2 || s.Cells[0].Rune != '2' || s.CursorVisible {
		t.Errorf("snapshot = %+v", s)
	}
	e.Snapshot(&s, 5) // clamped to the scrollback
	if s.Offset != 1 || s.Cells[0].Rune != '1' || s.Cells[4].Rune != '2' {
		t.Errorf("scrolled snapshot offset %d cells %v", s.Offset, s.Cells)
	}
	e = run(t, 4, 1, "e\u0301")
	e.Snapshot(&s, 0)
	if s.Grapheme(s.Cells[0]) != "e\u0301" || s.Grapheme(s.Cells[1]) != " " {
		t.Errorf("grapheme = %q", s.Grapheme(s.Cells[0]))
	}
}

func TestDirty(t *testing.T) {
	e := New(4, 2)
	if e.TakeDirty() {
		t.Error("dirty before any output")
	}
	e.Write([]byte("x"))
	if !e.TakeDirty() || e.TakeDirty() {
		t.Error("TakeDirty")
	}
}

func TestConcurrentReaders(t *testing.T) {
	e := New(20, 5)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var s Snapshot
		for i := 0; i < 200; i++ {
			e.Snapshot(&s, i%3)
			_ = e.Text()
		}
	}()
	for i := 0; i < 200; i++ {
		e.Write([]byte("hello world, some text\r\n"))
	}
	wg.Wait()
}

func TestReplayFunction(t *testing.T) {
	out, err := Replay(strings.NewReader("abc\r\ndef"), 10, 3, 5)
	if err != nil || out != "abc" {
		t.Errorf("Replay at 5 = %q, %v", out, err)
	}
	out, _ = Replay(strings.NewReader("abc\r\ndef"), 10, 3, -1)
	if out != "abc\ndef" {
		t.Errorf("Replay all = %q", out)
	}
}

// OnDirty announces each change from clean to dirty once, so a renderer
// can sleep until there is something to draw.
func TestOnDirty(t *testing.T) {
	e := New(4, 2)
	e.Write([]byte("x"))
	calls := 0
	e.OnDirty(func() { calls++ })
	if calls != 1 {
		t.Fatalf("set on a dirty screen: %d calls, want 1", calls)
	}
	e.Write([]byte("y"))
	if calls != 1 {
		t.Fatalf("a change while dirty: %d calls, want 1", calls)
	}
	e.TakeDirty()
	e.Write([]byte("z"))
	e.Write([]byte("w"))
	if calls != 2 {
		t.Fatalf("after TakeDirty: %d calls, want 2", calls)
	}
	for _, change := range []func(){e.MarkDirty, func() { e.Resize(5, 2) }, e.Reset} {
		e.TakeDirty()
		change()
	}
	if calls != 5 {
		t.Fatalf("MarkDirty, Resize, Reset: %d calls, want 5", calls)
	}
	e.TakeDirty()
	e.Write(nil)
	if calls != 5 || e.Dirty() {
		t.Fatal("an empty write counts as a change")
	}
	e.OnDirty(nil)
	e.Write([]byte("v"))
	if calls != 5 {
		t.Fatal("called after removal")
	}
}

// The alternate screen is made on the first switch to it, blank and of
// the size the emulator has then; once made it keeps what it shows.
func TestAltScreenMadeOnFirstSwitch(t *testing.T) {
	e := New(10, 4)
	e.Write([]byte("main"))
	e.Resize(12, 3)
	e.Resize(12, 5)
	if e.alt.rows != nil {
		t.Fatal("the alternate screen was made before a switch to it")
	}
	e.Write([]byte("\x1b[?1049h"))
	if len(e.alt.rows) != 5 || len(e.alt.rows[0].cells) != 12 {
		t.Fatalf("alternate screen of %d rows, want 5 of 12 cells", len(e.alt.rows))
	}
	if got := strings.TrimSpace(e.Text()); got != "" {
		t.Fatalf("a new alternate screen shows %q", got)
	}
	e.Write([]byte("alt\x1b[?47l"))
	if got := e.Text(); !strings.Contains(got, "main") || strings.Contains(got, "alt") {
		t.Fatalf("back on the main screen: %q", got)
	}
	e.Write([]byte("\x1b[?47h"))
	if got := e.Text(); !strings.Contains(got, "alt") {
		t.Fatalf("the alternate screen lost what it showed: %q", got)
	}
}
