package term

import (
	"fmt"
	"math/rand"
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

// A resize re-cuts the history, but the text in it was read: the reader
// of TextSince gets the screen and what it had not read, not the whole
// history again (at the first attach to agents that printed 10,000 lines
// each, re-reading it took the engine seconds of CPU).
func TestReflowDoesNotReplayReadHistory(t *testing.T) {
	e := New(120, 40, WithScrollback(10000))
	for i := range 5000 {
		fmt.Fprintf(e, "line %05d of what an agent printed, long enough to wrap when narrower\r\n", i)
	}
	_, next := e.TextSince(0)
	for _, w := range []int{50, 200, 33} {
		e.Resize(w, 20)
		text, n := e.TextSince(next)
		next = n
		if strings.Contains(text, "line 04000") || strings.Count(text, "\n") > 60 {
			t.Fatalf("after a resize to %d columns the reader got %d lines again:\n%.300s", w, strings.Count(text, "\n"), text)
		}
	}
	// Unread rows before the resize are still read after it.
	e.Write([]byte("unread one\r\n"))
	for i := range 60 {
		fmt.Fprintf(e, "filler %02d\r\n", i)
	}
	e.Resize(120, 20)
	e.Resize(25, 20) // twice before the reader comes back
	if text, _ := e.TextSince(next); !strings.Contains(text, "unread one") || strings.Contains(text, "line 04990") {
		t.Fatalf("after two resizes the reader misses its unread row or reads old ones:\n%s", text)
	}
}

// Whatever the writes, reads and resizes, a reader that passes back its
// mark reads every line at least once, and reads little twice.
func TestTextSinceAcrossResizesRandom(t *testing.T) {
	for seed := int64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewSource(seed))
		e := New(20+rng.Intn(100), 5+rng.Intn(30), WithScrollback(100000))
		seen := map[string]int{}
		var next uint64
		read := func() {
			text, n := e.TextSince(next)
			next = n
			for _, l := range strings.Split(text, "\n") {
				if strings.HasPrefix(l, "L") {
					seen[strings.Fields(l)[0]]++
				}
			}
		}
		lines := 0
		for step := 0; step < 60; step++ {
			switch rng.Intn(4) {
			case 0:
				e.Resize(10+rng.Intn(120), 3+rng.Intn(40))
			case 1:
				read()
			default:
				for k := rng.Intn(40); k > 0; k-- {
					fmt.Fprintf(e, "L%d %s\r\n", lines, strings.Repeat("x", rng.Intn(90)))
					lines++
				}
			}
		}
		read()
		again := 0
		for i := range lines {
			n := seen[fmt.Sprintf("L%d", i)]
			if n == 0 {
				t.Fatalf("seed %d: line L%d of %d was never read", seed, i, lines)
			}
			again += n - 1
		}
		// The screen is read every time, so its lines come again; the
		// history does not.
		if again > 60*45 {
			t.Errorf("seed %d: %d lines read again", seed, again)
		}
	}
}
