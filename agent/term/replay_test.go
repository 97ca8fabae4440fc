package term

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// recording is one session captured by scripts/record-term.sh: the raw
// output, the size, resizes at byte offsets, and tmux's view of the screen
// at quiet checkpoints.
type recording struct {
	name   string
	dir    string
	stream []byte
	w, h   int
	events []event
}

type event struct {
	off        int
	resize     bool
	w, h       int // resize
	cx, cy     int // check
	alt        bool
	screenFile string
}

func loadRecordings(t testing.TB) []recording {
	t.Helper()
	dirs, err := filepath.Glob("testdata/replay/*")
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no recordings in testdata/replay (scripts/record-term.sh makes them)")
	}
	var recs []recording
	for _, d := range dirs {
		r := recording{name: filepath.Base(d), dir: d}
		if r.stream, err = os.ReadFile(filepath.Join(d, "stream.raw")); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(filepath.Join(d, "script"))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			n := func(i int) int {
				v, err := strconv.Atoi(fs[i])
				if err != nil {
					t.Fatalf("%s: %q: %v", d, sc.Text(), err)
				}
				return v
			}
			switch fs[0] {
			case "size":
				r.w, r.h = n(1), n(2)
			case "resize":
				r.events = append(r.events, event{off: n(1), resize: true, w: n(2), h: n(3)})
			case "check":
				r.events = append(r.events, event{off: n(1), cx: n(2), cy: n(3), alt: fs[4] == "1", screenFile: fs[5]})
			}
		}
		f.Close()
		recs = append(recs, r)
	}
	return recs
}

// state is what a checkpoint compares.
type state struct {
	lines  []string
	cx, cy int
	alt    bool
}

func (s state) String() string {
	return fmt.Sprintf("cursor %d,%d alt %v\n%s", s.cx, s.cy, s.alt, strings.Join(s.lines, "\n"))
}

func capture(e *Emulator) state {
	x, y, _ := e.Cursor()
	return state{lines: e.Lines(), cx: x, cy: y, alt: e.AltScreen()}
}

// play feeds the recording in writes of at most chunk bytes, applying
// resizes at their offsets, and returns the state at every checkpoint.
func (r recording) play(chunk int) []state {
	e := New(r.w, r.h)
	var out []state
	pos := 0
	feedTo := func(end int) {
		for pos < end {
			n := min(chunk, end-pos)
			e.Write(r.stream[pos : pos+n])
			pos += n
		}
	}
	for _, ev := range r.events {
		feedTo(ev.off)
		if ev.resize {
			e.Resize(ev.w, ev.h)
			continue
		}
		out = append(out, capture(e))
	}
	feedTo(len(r.stream))
	return append(out, capture(e))
}

func readScreen(t *testing.T, path string, h int) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	for len(lines) < h {
		lines = append(lines, "")
	}
	return lines
}

// TestReplayMatchesTmux replays each recording and compares every quiet
// checkpoint with the screen tmux showed at the same byte offset.
func TestReplayMatchesTmux(t *testing.T) {
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			got := r.play(4096)
			i := 0
			for _, ev := range r.events {
				if ev.resize {
					continue
				}
				g := got[i]
				i++
				want := state{lines: readScreen(t, filepath.Join(r.dir, ev.screenFile), len(g.lines)), cx: ev.cx, cy: ev.cy, alt: ev.alt}
				if g.String() != want.String() {
					t.Errorf("%s at byte %d:\n%s", ev.screenFile, ev.off, diff(want.String(), g.String()))
				}
			}
		})
	}
}

// TestChunkingInvariance feeds every recording in 1-, 7- and 4096-byte
// writes; the screens must not depend on how the stream was split.
func TestChunkingInvariance(t *testing.T) {
	for _, r := range loadRecordings(t) {
		t.Run(r.name, func(t *testing.T) {
			ref := r.play(4096)
			for _, chunk := range []int{1, 7} {
				got := r.play(chunk)
				for i := range ref {
					if got[i].String() != ref[i].String() {
						t.Errorf("chunk %d, checkpoint %d:\n%s", chunk, i, diff(ref[i].String(), got[i].String()))
					}
				}
			}
		})
	}
}

// diff shows the lines that differ between want and got.
func diff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var wl, gl string
		if i < len(w) {
			wl = w[i]
		}
		if i < len(g) {
			gl = g[i]
		}
		if wl != gl {
			fmt.Fprintf(&b, "line %d:\n  want %q\n  got  %q\n", i, wl, gl)
		}
	}
	return b.String()
}
