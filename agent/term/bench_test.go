package term

import (
	"bytes"
	"runtime"
	"strings"
	"testing"
)

// BenchmarkReplay measures ingest speed on all recorded streams
// concatenated, in 4 KiB writes (what one PTY read delivers). Compare
// with scripts/bench-tmux-ingest.sh, which feeds tmux the same bytes.
func BenchmarkReplay(b *testing.B) {
	var all []byte
	for _, r := range loadRecordings(b) {
		all = append(all, r.stream...)
		// Start the next one clean, keeping the scrollback as a long-lived
		// tile would.
		all = append(all, "\x1b[?1049l\x1b[!p\x1b[2J\x1b[H"...)
	}
	b.SetBytes(int64(len(all)))
	b.ReportAllocs()
	e := New(120, 40)
	b.ResetTimer()
	for range b.N {
		for p := all; len(p) > 0; {
			n := min(4096, len(p))
			e.Write(p[:n])
			p = p[n:]
		}
	}
	b.StopTimer()
	allocs := testing.AllocsPerRun(3, func() {
		for p := all; len(p) > 0; {
			n := min(4096, len(p))
			e.Write(p[:n])
			p = p[n:]
		}
	})
	b.ReportMetric(allocs/float64(len(all))*1024, "allocs/KB")
}

// BenchmarkPlainText is the bulk-output case (cat of a big file).
func BenchmarkPlainText(b *testing.B) {
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\r\n"
	data := bytes.Repeat([]byte(line), 4096)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	e := New(120, 40)
	b.ResetTimer()
	for range b.N {
		for p := data; len(p) > 0; {
			n := min(4096, len(p))
			e.Write(p[:n])
			p = p[n:]
		}
	}
}

// TestMemoryPerCell reports the heap used by one 120×40 emulator with a
// full 10,000-line scrollback of full-width lines.
func TestMemoryPerCell(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates a large scrollback")
	}
	line := []byte(strings.Repeat("0123456789", 12)) // exactly 120 columns: wraps
	var ms0, ms1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms0)
	e := New(120, 40)
	for range DefaultScrollback + 40 {
		e.Write(line)
	}
	runtime.GC()
	runtime.ReadMemStats(&ms1)
	if n := e.ScrollbackLines(); n != DefaultScrollback {
		t.Fatalf("scrollback = %d", n)
	}
	cells := float64(120 * (40 + DefaultScrollback))
	used := float64(ms1.HeapAlloc - ms0.HeapAlloc)
	t.Logf("%.0f bytes for %.0f cells: %.1f bytes per cell", used, cells, used/cells)
	runtime.KeepAlive(e)
}

// BenchmarkReflow is one width change of a tile whose history is full of
// lines that wrapped: the cost of a layout change.
func BenchmarkReflow(b *testing.B) {
	e := New(80, 24, WithScrollback(10000))
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 3) + "\r\n"
	for range 10000 {
		e.Write([]byte(line))
	}
	b.ResetTimer()
	for i := range b.N {
		if i%2 == 0 {
			e.Resize(120, 24)
		} else {
			e.Resize(80, 24)
		}
	}
}
