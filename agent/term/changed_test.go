package term

import (
	"fmt"
	"math/rand"
	"slices"
	"testing"
)

// changedOps are pieces of output that touch the screen in every way the
// emulator knows: text, wide and combining characters, erasing, inserting
// and deleting, scrolling in and out of regions, the other screen, resets.
var changedOps = []string{
	"hello", "a long line of text that wraps around the right edge of a narrow screen", "\r\n", "\n", "\r",
	"\x1b[H", "\x1b[5;3H", "\x1b[2A", "\x1b[3B", "\x1b[4C", "\x1b[2D", "\x1b[10G", "\x1b[20;1H",
	"\x1b[K", "\x1b[1K", "\x1b[2K", "\x1b[J", "\x1b[1J", "\x1b[2J", "\x1b[3J",
	"\x1b[3@", "\x1b[2P", "\x1b[4X", "\x1b[2L", "\x1b[3M", "\x1b[2S", "\x1b[3T",
	"\x1b[3;8r", "\x1b[r", "\x1bM", "\x1bD", "\x1bE", "\x1b#8",
	"\x1b[?1049h", "\x1b[?1049l", "\x1b[?47h", "\x1b[?47l",
	"\x1b[4h", "\x1b[4l", "\x1b[?7l", "\x1b[?7h", "\x1b[?6h", "\x1b[?6l",
	"\x1b[31;44m", "\x1b[0m", "\x1b[7m", "x\x1b[5b",
	"世界", "e\u0301", "👍🏽", "\x1b(0lqk\x1b(B",
	"\x1b7", "\x1b8", "\x1bc", "\x1b[?5h", "\x1b[?5l",
}

// TestSnapshotChangedMirrorsScreen feeds random output and checks that a
// snapshot kept up to date with SnapshotChanged is, cell for cell, the
// screen a full Snapshot copies, and that each row it says changed had
// its previous cells handed back.
func TestSnapshotChangedMirrorsScreen(t *testing.T) {
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			e := New(20, 10, WithScrollback(50))
			var mirror, other, full Snapshot
			var prev []Cell
			for step := 0; step < 400; step++ {
				switch r := rng.Intn(40); {
				case r == 0:
					e.Resize(10+rng.Intn(20), 5+rng.Intn(10))
				case r == 1:
					// Another reader's snapshots must not hide changes
					// from this one.
					e.SnapshotChanged(&other, 0, nil)
				case r == 2:
					e.Snapshot(&other, rng.Intn(5))
				default:
					_, _ = e.Write([]byte(changedOps[rng.Intn(len(changedOps))]))
				}
				if rng.Intn(3) != 0 {
					continue
				}
				before := append([]Cell(nil), mirror.Cells...)
				beforeW, beforeH := mirror.W, mirror.H
				prev = e.SnapshotChanged(&mirror, 0, prev)
				e.Snapshot(&full, 0)
				if mirror.W != full.W || mirror.H != full.H || len(mirror.Cells) != len(full.Cells) {
					t.Fatalf("step %d: mirror %dx%d, screen %dx%d", step, mirror.W, mirror.H, full.W, full.H)
				}
				for i := range full.Cells {
					if mirror.Cells[i] != full.Cells[i] {
						t.Fatalf("step %d: cell (%d,%d) is %+v in the mirror, %+v on the screen (changed rows %v, full %v)",
							step, i%full.W, i/full.W, mirror.Cells[i], full.Cells[i], mirror.Changed, mirror.Full)
					}
				}
				if mirror.CursorX != full.CursorX || mirror.CursorY != full.CursorY || mirror.Title != full.Title ||
					mirror.Reverse != full.Reverse || mirror.AltScreen != full.AltScreen || mirror.Pushed != full.Pushed {
					t.Fatalf("step %d: mirror %+v, screen %+v", step, mirror, full)
				}
				if beforeW == mirror.W && beforeH == mirror.H {
					for y := range mirror.H {
						if !mirror.Changed[y] {
							continue
						}
						for x := range mirror.W {
							if i := y*mirror.W + x; prev[i] != before[i] {
								t.Fatalf("step %d: previous cell (%d,%d) handed back as %+v, was %+v", step, x, y, prev[i], before[i])
							}
						}
					}
				}
			}
		})
	}
}

// TestSnapshotChangedCopiesOnlyChangedRows: a status line redrawn in place
// is the only row copied.
func TestSnapshotChangedCopiesOnlyChangedRows(t *testing.T) {
	e := New(20, 6)
	_, _ = e.Write([]byte("one\r\ntwo\r\nthree"))
	var s Snapshot
	prev := e.SnapshotChanged(&s, 0, nil)
	if !s.Full {
		t.Fatal("the first snapshot should copy every row")
	}
	_, _ = e.Write([]byte("\x1b[6;1H\x1b[2Kstatus 1"))
	prev = e.SnapshotChanged(&s, 0, prev)
	if s.Full {
		t.Fatal("a status line redraw copied every row")
	}
	want := []bool{false, false, false, false, false, true}
	for y, c := range s.Changed {
		if c != want[y] {
			t.Fatalf("changed rows %v, want %v", s.Changed, want)
		}
	}
	e.SnapshotChanged(&s, 0, prev)
	for y, c := range s.Changed {
		if c {
			t.Fatalf("row %d copied again with nothing written", y)
		}
	}
	_, _ = e.Write([]byte("\x1b[?1049h"))
	e.SnapshotChanged(&s, 0, prev)
	if !s.Full {
		t.Fatal("switching to the other screen should copy every row")
	}
}

// TestTextCacheMatchesScreen feeds random output and checks that the
// screen's text, rebuilt only where rows changed, is the text built anew
// from every row.
func TestTextCacheMatchesScreen(t *testing.T) {
	fresh := func(e *Emulator) ([]string, string) {
		e.mu.Lock()
		e.markAll() // forget what is cached
		e.mu.Unlock()
		text, _ := e.TextSince(0)
		return e.Lines(), text
	}
	for seed := int64(1); seed <= 40; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewSource(seed))
			e := New(20, 10, WithScrollback(50))
			ref := New(20, 10, WithScrollback(50))
			var s Snapshot
			for step := 0; step < 400; step++ {
				if rng.Intn(40) == 0 {
					w, h := 10+rng.Intn(20), 5+rng.Intn(10)
					e.Resize(w, h)
					ref.Resize(w, h)
				} else {
					op := []byte(changedOps[rng.Intn(len(changedOps))])
					_, _ = e.Write(op)
					_, _ = ref.Write(op)
				}
				switch rng.Intn(4) {
				case 0:
					e.Snapshot(&s, 0) // snapshots start generations too
				case 1:
					continue
				}
				lines := e.Lines()
				text, _ := e.TextSince(0)
				wantLines, wantText := fresh(ref)
				if !slices.Equal(lines, wantLines) {
					t.Fatalf("step %d: lines\n%q\nwant\n%q", step, lines, wantLines)
				}
				if text != wantText {
					t.Fatalf("step %d: text since 0\n%q\nwant\n%q", step, text, wantText)
				}
			}
		})
	}
}
