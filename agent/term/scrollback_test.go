package term

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

// Packed history rows come back cell for cell: styles, wide characters,
// clusters, never-written cells and non-ASCII runes.
func TestScrollbackPackRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	runes := []rune{0, ' ', 'a', 'Z', 'é', '─', '世', '🙂', 0x10FFFF}
	colors := []Color{DefaultColor, IndexedColor(1), IndexedColor(200), RGBColor(1, 2, 3)}
	attrs := []Attr{0, AttrBold, AttrWide, AttrWideCont, AttrReverse | AttrItalic}
	var s scrollback
	s.max = 50
	var want [][]Cell
	var wrapped []bool
	for range 200 {
		cells := make([]Cell, rng.IntN(120))
		for i := range cells {
			c := Cell{Rune: runes[rng.IntN(len(runes))], Fg: colors[rng.IntN(len(colors))], Bg: colors[rng.IntN(len(colors))], Attr: attrs[rng.IntN(len(attrs))]}
			if rng.IntN(10) == 0 {
				c.comb = uint16(1 + rng.IntN(300))
			}
			if rng.IntN(3) == 0 && i > 0 {
				c = cells[i-1] // runs of one style
				c.Rune = 'x'
			}
			cells[i] = c
		}
		s.push(row{cells: cells, wrapped: len(cells)%2 == 0})
		n := len(cells)
		for n > 0 && cells[n-1].blank() {
			n--
		}
		want = append(want, cells[:n])
		wrapped = append(wrapped, len(cells)%2 == 0)
	}
	want, wrapped = want[len(want)-s.len():], wrapped[len(wrapped)-s.len():]
	for i, w := range want {
		got := s.at(i)
		if !slices.Equal(got.cells, w) || got.wrapped != wrapped[i] {
			t.Fatalf("row %d:\n got %v\nwant %v", i, got.cells, w)
		}
	}
}

// A history of plain text costs about its text, not 16 bytes a cell.
func TestScrollbackIsCompact(t *testing.T) {
	e := New(100, 10, WithScrollback(10000))
	line := "\x1b[32m✓\x1b[0m ok   github.com/example/project/pkg/" + strings.Repeat("x", 40) + "\x1b[2m 0.012s\x1b[0m\r\n"
	for range 10000 {
		e.Write([]byte(line))
	}
	n := len(e.sb.rows) * int(unsafe.Sizeof(span{}))
	for _, b := range e.sb.blocks {
		n += cap(b)
	}
	perRow := n / e.sb.len()
	// The row's 87 cells would take 1392 bytes unpacked.
	if perRow > 120 {
		t.Fatalf("%d bytes a history row, want at most 120", perRow)
	}
	if got, _, _ := e.RowText(e.sb.total - 1); !strings.HasPrefix(strings.Join(got, ""), "✓ ok   github") {
		t.Fatalf("last history row reads %q", strings.Join(got, ""))
	}
}
