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

// Pushes and pops in any order, across block boundaries and the ring's
// eviction, leave every row as a model of the history holds it: a row
// ends where the next starts, so a pop must cut its block exactly.
func TestScrollbackPushPop(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	s := scrollback{max: 300}
	var model []row
	for step := range 5000 {
		if len(model) > 0 && rng.IntN(3) == 0 {
			got, want := s.pop(), model[len(model)-1]
			model = model[:len(model)-1]
			if !slices.Equal(got.cells, want.cells) || got.wrapped != want.wrapped {
				t.Fatalf("step %d: popped %v %v, want %v %v", step, got.cells, got.wrapped, want.cells, want.wrapped)
			}
			continue
		}
		// Long rows now and then fill a block on their own.
		n := rng.IntN(300)
		if rng.IntN(50) == 0 {
			n = blockSize/2 + rng.IntN(blockSize)
		}
		cells := make([]Cell, n)
		for i := range cells {
			cells[i] = Cell{Rune: rune('a' + rng.IntN(26)), Fg: IndexedColor(uint8(rng.IntN(3)))}
		}
		r := row{cells: cells, wrapped: rng.IntN(2) == 0}
		s.push(r)
		model = append(model, r)
		if len(model) > s.max {
			model = model[1:]
		}
	}
	if s.len() != len(model) {
		t.Fatalf("%d rows, the model has %d", s.len(), len(model))
	}
	for i, want := range model {
		got := s.at(i)
		if !slices.Equal(got.cells, want.cells) || got.wrapped != want.wrapped {
			t.Fatalf("row %d differs", i)
		}
	}
}
