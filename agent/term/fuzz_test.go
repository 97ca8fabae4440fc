package term

import "testing"

// checkInvariants verifies what every byte sequence must leave intact.
func checkInvariants(t *testing.T, e *Emulator) {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.cx < 0 || e.cx >= e.w || e.cy < 0 || e.cy >= e.h {
		t.Fatalf("cursor %d,%d outside %dx%d", e.cx, e.cy, e.w, e.h)
	}
	if e.top < 0 || e.bot >= e.h || e.top > e.bot {
		t.Fatalf("scroll region %d..%d in %d rows", e.top, e.bot, e.h)
	}
	for _, s := range []*screen{&e.main, &e.alt} {
		if s == &e.alt && s.rows == nil && e.cur != s {
			continue // not made yet: made on the first switch to it
		}
		if len(s.rows) != e.h {
			t.Fatalf("%d rows, want %d", len(s.rows), e.h)
		}
		for y, r := range s.rows {
			if len(r.cells) != e.w {
				t.Fatalf("row %d has %d cells, want %d", y, len(r.cells), e.w)
			}
		}
	}
	if e.sb.len() > e.sb.max {
		t.Fatalf("scrollback %d over its cap %d", e.sb.len(), e.sb.max)
	}
}

func FuzzEmulator(f *testing.F) {
	for _, s := range []string{
		"hello\r\nworld",
		"\x1b[2;5r\x1b[?6h\x1b[10;10H\x1b[5L\x1b[3M\x1b[?1049h中文\x1b[2J",
		"\x1b]0;\u2733 title\x07\x1b[38:2::1:2:3m\x1b[?2026h",
		"\x1b[99999999999999999999@\x1b[4h\xe2\x9c\xb3\x1b[b\x1b[65535b",
		"e\u0301\u200d\U0001F600\x1b#8\x1b(0lqk\x0e",
	} {
		f.Add([]byte(s), uint8(10), uint8(5))
	}
	f.Fuzz(func(t *testing.T, data []byte, w, h uint8) {
		e := New(int(w%40)+1, int(h%20)+1, WithScrollback(50))
		// Feed in two pieces with a resize between, so resizing in any
		// state is covered too.
		half := len(data) / 2
		e.Write(data[:half])
		checkInvariants(t, e)
		e.Resize(int(h%30)+1, int(w%15)+1)
		checkInvariants(t, e)
		e.Write(data[half:])
		checkInvariants(t, e)
		_ = e.AllText()
		var s Snapshot
		e.Snapshot(&s, 3)
	})
}
