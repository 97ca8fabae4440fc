package term

import (
	"fmt"
	"strings"
	"testing"
)

// A line wrapped at 60 columns is whole again at 200, in the history and
// on the screen, and cut anew when the width shrinks; the cursor keeps its
// place in its line.
func TestReflowOnResize(t *testing.T) {
	long := func(c string) string { return strings.Repeat(c, 150) }
	e := run(t, 60, 5, "first\r\n"+long("a")+"\r\n"+long("b")+"\r\nshort\r\n$ ")
	// 1 + 3 + 3 + 1 + 1 rows at 60 columns: 4 in the history.
	if n := e.ScrollbackLines(); n != 4 {
		t.Fatalf("history %d rows at 60 columns", n)
	}
	e.Resize(200, 5)
	wantLines(t, e, "first", long("a"), long("b"), "short", "$")
	wantCursor(t, e, 2, 4)
	if n := e.ScrollbackLines(); n != 0 {
		t.Errorf("history %d rows at 200 columns, want 0", n)
	}
	e.Write([]byte("typed"))
	wantLines(t, e, "first", long("a"), long("b"), "short", "$ typed")

	// Narrower: each line cut at 100; the history takes what the screen
	// cannot hold.
	e.Resize(100, 5)
	wantLines(t, e, long("a")[100:], long("b")[:100], long("b")[100:], "short", "$ typed")
	wantCursor(t, e, 7, 4)
	if got, want := e.AllText(), "first\n"+long("a")+"\n"+long("b")+"\nshort\n$ typed"; got != want {
		t.Errorf("text after two reflows:\n%q\nwant\n%q", got, want)
	}
	// Back to 60, taller: the history comes back onto the screen.
	e.Resize(60, 12)
	wantLines(t, e, "first", long("a")[:60], long("a")[60:120], long("a")[120:],
		long("b")[:60], long("b")[60:120], long("b")[120:], "short", "$ typed", "", "", "")
	wantCursor(t, e, 7, 8)
}

// A line ending exactly at the edge, with the cursor waiting to wrap,
// keeps the cursor after it; blank rows below the cursor are not kept.
func TestReflowPendingWrap(t *testing.T) {
	e := run(t, 10, 4, "0123456789")
	e.Resize(20, 4)
	wantLines(t, e, "0123456789", "", "", "")
	wantCursor(t, e, 10, 0)
	e.Write([]byte("x"))
	wantLines(t, e, "0123456789x", "", "", "")
}

// Row numbers for TextSince only grow across a reflow: nothing written
// after it is missed.
func TestReflowKeepsTextSince(t *testing.T) {
	e := run(t, 10, 2, "aaaaaaaaaaaaaaa\r\nb\r\nc")
	_, next := e.TextSince(0)
	e.Resize(20, 2)
	e.Write([]byte("\r\nnew line\r\nlast"))
	text, _ := e.TextSince(next)
	if !strings.Contains(text, "new line") {
		t.Errorf("text since the reflow lacks the new line: %q", text)
	}
}

// Copy mode's rows: history then screen, by number; on the alternate
// screen only its own rows.
func TestRowText(t *testing.T) {
	e := run(t, 5, 2, "one\r\ntwo\r\nthree-wrap")
	first, end := e.RowSpan()
	var got []string
	for n := first; n < end; n++ {
		cols, wrapped, ok := e.RowText(n)
		if !ok {
			t.Fatalf("row %d not kept", n)
		}
		got = append(got, fmt.Sprintf("%s/%v", strings.Join(cols, ""), wrapped))
	}
	want := []string{"one  /false", "two  /false", "three/true", "-wrap/false"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("rows %q, want %q", got, want)
	}
	e.Write([]byte("\x1b[?1049h\x1b[Halt"))
	first, end = e.RowSpan()
	if end-first != 2 {
		t.Fatalf("alternate screen spans %d rows", end-first)
	}
	if cols, _, _ := e.RowText(first); strings.Join(cols, "") != "alt  " {
		t.Errorf("alternate screen's first row %q", cols)
	}
	if _, _, ok := e.RowText(first - 1); ok {
		t.Error("history reachable from the alternate screen")
	}
}
