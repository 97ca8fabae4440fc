package termbench_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	xvt "github.com/charmbracelet/x/vt"
	"github.com/hinshun/vt10x"

	"github.com/chorus-dev/chorus/agent/term"
)

// emulator is what the comparison needs of each candidate.
type emulator interface {
	// write feeds p and says how much it took: vt10x keeps a UTF-8
	// character cut by the end of p for the caller to send again.
	write(p []byte) int
	resize(w, h int)
	lines() []string
	cursor() (x, y int)
	alt() bool
	close()
}

type candidate struct {
	name string
	make func(w, h int) emulator
}

var candidates = []candidate{
	{"agent-term", func(w, h int) emulator { return ours{term.New(w, h)} }},
	{"x-vt", newXVT},
	{"vt10x", func(w, h int) emulator { return tenx{vt10x.New(vt10x.WithSize(w, h))} }},
}

type ours struct{ e *term.Emulator }

func (o ours) write(p []byte) int { n, _ := o.e.Write(p); return n }
func (o ours) resize(w, h int)    { o.e.Resize(w, h) }
func (o ours) lines() []string    { return o.e.Lines() }
func (o ours) cursor() (int, int) { x, y, _ := o.e.Cursor(); return x, y }
func (o ours) alt() bool          { return o.e.AltScreen() }
func (o ours) close()             {}

// xv wraps x/vt, whose replies to the program (device attributes, mode
// reports) go into a pipe that blocks the writer until read: a goroutine
// drains it, ended by closing the pipe's write side.
type xv struct {
	e    *xvt.Emulator
	done chan struct{}
}

func newXVT(w, h int) emulator {
	x := xv{xvt.NewEmulator(w, h), make(chan struct{})}
	go func() {
		_, _ = io.Copy(io.Discard, x.e)
		close(x.done)
	}()
	return x
}

func (x xv) write(p []byte) int { n, _ := x.e.Write(p); return n }
func (x xv) resize(w, h int)    { x.e.Resize(w, h) }
func (x xv) cursor() (int, int) { p := x.e.CursorPosition(); return p.X, p.Y }
func (x xv) alt() bool          { return x.e.IsAltScreen() }
func (x xv) close() {
	if pw, ok := x.e.InputPipe().(*io.PipeWriter); ok {
		_ = pw.CloseWithError(io.EOF)
		<-x.done
	}
}

func (x xv) lines() []string {
	out := make([]string, x.e.Height())
	var sb strings.Builder
	for y := range out {
		sb.Reset()
		for col := 0; col < x.e.Width(); col++ {
			c := x.e.CellAt(col, y)
			switch {
			case c == nil:
				sb.WriteByte(' ')
			case c.Content == "" && c.Width == 0:
				// the second column of a wide character
			case c.Content == "":
				sb.WriteByte(' ')
			default:
				sb.WriteString(c.Content)
			}
		}
		out[y] = strings.TrimRight(sb.String(), " ")
	}
	return out
}

type tenx struct{ t vt10x.Terminal }

func (v tenx) write(p []byte) int { n, _ := v.t.Write(p); return n }
func (v tenx) resize(w, h int)    { v.t.Resize(w, h) }
func (v tenx) cursor() (int, int) { c := v.t.Cursor(); return c.X, c.Y }
func (v tenx) alt() bool          { return v.t.Mode()&vt10x.ModeAltScreen != 0 }
func (v tenx) close()             {}

func (v tenx) lines() []string {
	w, h := v.t.Size()
	out := make([]string, h)
	var sb strings.Builder
	for y := range out {
		sb.Reset()
		for x := 0; x < w; x++ {
			ch := v.t.Cell(x, y).Char
			if ch == 0 {
				ch = ' '
			}
			sb.WriteRune(ch)
		}
		out[y] = strings.TrimRight(sb.String(), " ")
	}
	return out
}

// recording is one session of agent/term/testdata/replay (made by
// scripts/record-term.sh): the bytes a program wrote under tmux, its
// resizes, and tmux's screen, cursor and alternate-screen flag at
// checkpoints taken after the output went quiet.
type recording struct {
	name   string
	dir    string
	stream []byte
	w, h   int
	events []event
}

type event struct {
	off    int
	resize bool
	w, h   int
	want   state
}

type state struct {
	lines  []string
	cx, cy int
	alt    bool
}

func (s state) String() string {
	return fmt.Sprintf("cursor %d,%d alt %v\n%s", s.cx, s.cy, s.alt, strings.Join(s.lines, "\n"))
}

func loadRecordings(tb testing.TB) []recording {
	tb.Helper()
	dirs, err := filepath.Glob("../../agent/term/testdata/replay/*")
	if err != nil || len(dirs) == 0 {
		tb.Fatalf("no recordings in agent/term/testdata/replay: %v", err)
	}
	var recs []recording
	for _, d := range dirs {
		r := recording{name: filepath.Base(d), dir: d}
		if r.stream, err = os.ReadFile(filepath.Join(d, "stream.raw")); err != nil {
			tb.Fatal(err)
		}
		f, err := os.Open(filepath.Join(d, "script"))
		if err != nil {
			tb.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		h := 0
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			n := func(i int) int {
				v, err := strconv.Atoi(fs[i])
				if err != nil {
					tb.Fatalf("%s: %q: %v", d, sc.Text(), err)
				}
				return v
			}
			switch fs[0] {
			case "size":
				r.w, r.h = n(1), n(2)
				h = r.h
			case "resize":
				r.events = append(r.events, event{off: n(1), resize: true, w: n(2), h: n(3)})
				h = n(3)
			case "check":
				want := state{lines: screen(tb, filepath.Join(d, fs[5]), h), cx: n(2), cy: n(3), alt: fs[4] == "1"}
				r.events = append(r.events, event{off: n(1), want: want})
			}
		}
		f.Close()
		recs = append(recs, r)
	}
	return recs
}

// screen reads tmux's capture-pane text as Lines gives it: h rows,
// trailing spaces trimmed.
func screen(tb testing.TB, path string, h int) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
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

// feeder writes a stream in chunks of at most size bytes, sending again
// what an emulator did not take (a character cut at the chunk's end).
type feeder struct {
	e    emulator
	size int
	left []byte
}

func (f *feeder) feed(p []byte) {
	for len(p) > 0 || len(f.left) > 0 {
		n := min(f.size-len(f.left), len(p))
		buf := append(f.left, p[:n]...)
		p = p[n:]
		took := f.e.write(buf)
		if took <= 0 && len(p) == 0 {
			return // nothing more will complete it
		}
		f.left = append([]byte(nil), buf[took:]...)
	}
}

// replay plays r through c and returns how many checkpoints matched tmux
// exactly (every line, the cursor and the screen in use), and the first
// difference. A candidate that panics matches nothing from there on.
func replay(c candidate, r recording) (exact, total int, first string) {
	for _, ev := range r.events {
		if !ev.resize {
			total++
		}
	}
	defer func() {
		if p := recover(); p != nil && first == "" {
			first = fmt.Sprintf("panic: %v", p)
		}
	}()
	e := c.make(r.w, r.h)
	defer e.close()
	f := &feeder{e: e, size: 4096}
	pos := 0
	for _, ev := range r.events {
		f.feed(r.stream[pos:ev.off])
		pos = ev.off
		if ev.resize {
			e.resize(ev.w, ev.h)
			continue
		}
		x, y := e.cursor()
		got := state{lines: e.lines(), cx: x, cy: y, alt: e.alt()}
		if got.String() == ev.want.String() {
			exact++
		} else if first == "" {
			first = fmt.Sprintf("%s at byte %d", r.name, ev.off)
		}
	}
	return exact, total, first
}

// TestEmulatorChoice replays every recording through each candidate:
// agent/term must match tmux at every checkpoint and at least as many as
// either library. Should a library catch up, this fails, and the choice
// to keep a hand-written emulator is to be made again.
func TestEmulatorChoice(t *testing.T) {
	recs := loadRecordings(t)
	exact := map[string]int{}
	total := 0
	for _, c := range candidates {
		n := 0
		for _, r := range recs {
			e, tot, first := replay(c, r)
			exact[c.name] += e
			n += tot
			if first != "" {
				t.Logf("%s: %s: first difference %s", c.name, r.name, first)
			}
		}
		total = n
	}
	for _, c := range candidates {
		t.Logf("%-10s exact at %d of %d checkpoints", c.name, exact[c.name], total)
	}
	if exact["agent-term"] != total {
		t.Errorf("agent/term matches tmux at %d of %d checkpoints", exact["agent-term"], total)
	}
	for _, c := range candidates[1:] {
		if exact[c.name] >= exact["agent-term"] {
			t.Errorf("%s matches %d checkpoints, agent/term %d: measure the choice again", c.name, exact[c.name], exact["agent-term"])
		}
	}
}

// BenchmarkIngest feeds all recorded streams, concatenated, in 4 KiB
// writes (one PTY read) to each candidate: MB/s and allocations, with the
// checkpoints it gets exactly right as a metric of the same run.
func BenchmarkIngest(b *testing.B) {
	recs := loadRecordings(b)
	var all []byte
	for _, r := range recs {
		all = append(all, r.stream...)
		// Start the next one clean, as BenchmarkReplay in agent/term does.
		all = append(all, "\x1b[?1049l\x1b[!p\x1b[2J\x1b[H"...)
	}
	for _, c := range candidates {
		b.Run(c.name, func(b *testing.B) {
			exact, total := 0, 0
			for _, r := range recs {
				e, n, _ := replay(c, r)
				exact, total = exact+e, total+n
			}
			e := c.make(120, 40)
			defer e.close()
			f := &feeder{e: e, size: 4096}
			b.SetBytes(int64(len(all)))
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				f.feed(all)
			}
			b.StopTimer()
			b.ReportMetric(float64(exact), "exact")
			b.ReportMetric(float64(total), "checkpoints")
		})
	}
}

// The libraries are here for comparison only: the chorus binary must not
// link them.
func TestBinaryLinksNoCandidate(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/chorus-dev/chorus/cmd/chorus").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if dep == "github.com/charmbracelet/x/vt" || dep == "github.com/hinshun/vt10x" {
			t.Errorf("cmd/chorus depends on %s", dep)
		}
	}
}
