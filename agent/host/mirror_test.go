package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// same fails unless b shows what a shows: every screen row with its
// attributes, the scrollback, the cursor, the input modes and the title.
func same(t *testing.T, what string, a, b *term.Emulator) {
	t.Helper()
	aw, ah := a.Size()
	bw, bh := b.Size()
	if aw != bw || ah != bh {
		t.Fatalf("%s: size %dx%d, copy %dx%d", what, aw, ah, bw, bh)
	}
	if at, bt := a.AllText(), b.AllText(); at != bt {
		t.Fatalf("%s: text differs\n--- original\n%s\n--- copy\n%s", what, at, bt)
	}
	var sa, sb term.Snapshot
	for off := 0; off <= a.ScrollbackLines(); off += ah {
		a.Snapshot(&sa, off)
		b.Snapshot(&sb, off)
		if sa.Scrollback != sb.Scrollback || sa.AltScreen != sb.AltScreen || sa.Title != sb.Title || sa.Reverse != sb.Reverse {
			t.Fatalf("%s: scrollback %d alt %v title %q reverse %v; copy %d %v %q %v", what, sa.Scrollback, sa.AltScreen, sa.Title, sa.Reverse, sb.Scrollback, sb.AltScreen, sb.Title, sb.Reverse)
		}
		if off == 0 && (sa.CursorX != sb.CursorX || sa.CursorY != sb.CursorY || sa.CursorVisible != sb.CursorVisible || sa.CursorStyle != sb.CursorStyle) {
			t.Fatalf("%s: cursor %d,%d,%v,%d; copy %d,%d,%v,%d", what, sa.CursorX, sa.CursorY, sa.CursorVisible, sa.CursorStyle, sb.CursorX, sb.CursorY, sb.CursorVisible, sb.CursorStyle)
		}
		for i := range sa.Cells {
			ca, cb := sa.Cells[i], sb.Cells[i]
			if sa.Grapheme(ca) != sb.Grapheme(cb) || ca.Fg != cb.Fg || ca.Bg != cb.Bg || ca.Attr != cb.Attr {
				t.Fatalf("%s: offset %d cell %d,%d: %q %+v; copy %q %+v", what, off, i%aw, i/aw, sa.Grapheme(ca), ca, sb.Grapheme(cb), cb)
			}
		}
	}
	if a.InputModes() != b.InputModes() {
		t.Fatalf("%s: input modes %+v, copy %+v", what, a.InputModes(), b.InputModes())
	}
}

// noise is terminal output with colours, wide characters, clusters, long
// wrapped lines, scrolling, cursor moves, a scroll region and mode changes.
func noise(r *rand.Rand, n int) string {
	var b strings.Builder
	pieces := []func(){
		func() { fmt.Fprintf(&b, "line %d of output\r\n", r.Intn(1000)) },
		func() { fmt.Fprintf(&b, "\x1b[%d;%dm coloured \x1b[0m", 30+r.Intn(8), 40+r.Intn(8)) },
		func() {
			fmt.Fprintf(&b, "\x1b[38;5;%dm\x1b[48;2;%d;%d;%dmrgb\x1b[m", r.Intn(256), r.Intn(256), r.Intn(256), r.Intn(256))
		},
		func() { b.WriteString("\x1b[1;3;4;7;9;53mstyled\x1b[22;23;24;27;29;55m plain") },
		func() { b.WriteString("宽字符 and e\u0301 and 👍🏽 ") },
		func() { b.WriteString(strings.Repeat("wrapped-", 1+r.Intn(12))) },
		func() { fmt.Fprintf(&b, "\x1b[%d;%dH", 1+r.Intn(12), 1+r.Intn(40)) },
		func() { b.WriteString("\x1b[K\x1b[1J") },
		func() { b.WriteString("\r\n\r\n\r\n") },
		func() { b.WriteString("\x1b[?2004h\x1b[?1h\x1b[?1002h\x1b[?1006h\x1b[4 q") },
		func() { b.WriteString("\x1b[?25l") },
		func() { b.WriteString("\x1b[?25h") },
		func() { b.WriteString("\x1b]2;a title\x07") },
		func() { b.WriteString("\x1b[3;9r\x1b[5;1Hregion\n\n\n\n\n\n\x1b[r") },
		func() { b.WriteString("\x1b[?1049hfull screen app\x1b[5;5Hmenu\x1b[?1049l") },
		func() { b.WriteString("\x1b[31mpen left red") },
	}
	for i := 0; i < n; i++ {
		pieces[r.Intn(len(pieces))]()
	}
	return b.String()
}

// writerMain is the agent of these tests (CHORUS_HOST_TEST_MAIN=writer):
// its terminal made raw, it writes the file in small pieces, so the
// stream read is the file and an engine can die anywhere in it.
func writerMain(file string) {
	b, err := os.ReadFile(file)
	if err != nil {
		os.Exit(2)
	}
	r := rand.New(rand.NewSource(int64(len(b))))
	slow := os.Getenv("CHORUS_HOST_TEST_SLOW") == "1"
	for len(b) > 0 {
		n := min(len(b), 1+r.Intn(3000))
		if _, err := os.Stdout.Write(b[:n]); err != nil {
			os.Exit(3)
		}
		b = b[n:]
		if slow || r.Intn(8) == 0 {
			time.Sleep(time.Millisecond) // let the reader catch up now and then
		}
	}
	// It waits for a key before it exits, so an engine can still be
	// killed after the last byte; a test that cannot count the bytes to
	// know it is done learns it from the FIFO named by
	// CHORUS_HOST_TEST_DONE, opened once all is written.
	if fifo := os.Getenv("CHORUS_HOST_TEST_DONE"); fifo != "" {
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Close()
		}
	}
	var k [1]byte
	_, _ = os.Stdin.Read(k[:])
}

// resizeAt is a resize the engine's emulator took at a stream offset.
type resizeAt struct {
	at   int64
	w, h int
}

// reference is an emulator that saw stream[:upto] and the resizes at
// their offsets.
func reference(stream []byte, w, h int, rs []resizeAt, upto int64) *term.Emulator {
	e := term.New(w, h, term.WithScrollback(300))
	pos := int64(0)
	for _, r := range rs {
		if r.at > upto {
			break
		}
		e.Write(stream[pos:r.at])
		e.Resize(r.w, r.h)
		pos = r.at
	}
	e.Write(stream[pos:upto])
	return e
}

func writeNoise(t *testing.T, seed int64, n int) (string, []byte) {
	stream := []byte(noise(rand.New(rand.NewSource(seed)), n))
	f := filepath.Join(shortDir(t), "stream")
	if err := os.WriteFile(f, stream, 0o600); err != nil {
		t.Fatal(err)
	}
	return f, stream
}

func writerSpec(file string) Spec {
	return Spec{Argv: []string{"sh", "-c", `stty raw -echo; exec env CHORUS_HOST_TEST_MAIN=writer "$0" "$1"`, os.Args[0], file},
		Cols: 40, Rows: 12, Scrollback: 300}
}

// modes are the two ways an engine reads the agent: the host hands it
// the terminal (the agent has a log), or relays the output.
var modes = []struct {
	name  string
	relay bool
}{{"terminal", false}, {"relay", true}}

// modeSpec is writerSpec for a mode: with a log when the engine is to
// hold the terminal.
func modeSpec(t *testing.T, file string, relay bool) Spec {
	sp := writerSpec(file)
	if !relay {
		sp.LogPath = filepath.Join(shortDir(t), "agent.log")
	}
	return sp
}

// direct fails unless cl reads the terminal itself exactly when it
// should: held by the engine unless relayed, or the agent has ended (then
// its exit follows the screen).
func direct(t *testing.T, cl *Client, relay bool) {
	t.Helper()
	switch {
	case cl.Direct() && relay:
		t.Fatal("an engine asking for the output relayed holds the terminal")
	case !cl.Direct() && !relay:
		select {
		case <-cl.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the engine does not hold the terminal of a running agent")
		}
	}
}

// An engine that goes away at random points of random output, having
// resized its emulator at random points too, and engines that connect
// again: each sees, on connecting, the screen of an emulator that saw the
// whole stream up to there, cell by cell; and the last one's, fed the
// rest, is that of an emulator that saw it all. Checkpoints come often
// and the host's tail is small in some rounds, so every path is taken.
func TestReadoptedScreenIsTheWholeStream(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { readoptedScreen(t, m.relay) })
	}
}

func readoptedScreen(t *testing.T, relay bool) {
	onDisk := 0 // rounds that began with a checkpoint kept in its file
	for seed := int64(1); seed <= 12; seed++ {
		r := rand.New(rand.NewSource(seed))
		cad := fastCadence()
		cad.ckBytes = int64(1 + r.Intn(20000))
		cad.posBytes = int64(1 + r.Intn(5000))
		tailCap := int64(16 << 20)
		if seed%3 == 0 {
			// The host parses, up to where the engine read.
			cad.ckBytes, tailCap = 1<<30, int64(1+r.Intn(30000))
		}
		file, stream := writeNoise(t, seed, 3000)
		opt := Options{Orphan: time.Minute, tailCap: tailCap}
		if seed%2 == 0 {
			// Half the hosts keep their checkpoints on disk, as chorus's do.
			opt.CheckpointPath = filepath.Join(t.TempDir(), "a.ckpt")
		}
		sock, ended := serveWith(t, opt)
		var rs []resizeAt
		w, h := 40, 12
		started := false
		for round := 0; ; round++ {
			if opt.CheckpointPath != "" {
				if _, err := os.Stat(opt.CheckpointPath); err == nil {
					onDisk++
				}
			}
			cl, err := dial(ctx(t), sock, "", relay)
			if err != nil {
				t.Fatal(err)
			}
			cl.cad = cad
			if !started {
				if err := cl.Start(ctx(t), modeSpec(t, file, relay)); err != nil {
					t.Fatal(err)
				}
				started = true
			} else if err := cl.Wait4Info(ctx(t)); err != nil {
				t.Fatal(err)
			}
			direct(t, cl, relay)
			sw, sh, st := cl.Screen()
			emu := term.New(sw, sh, term.WithScrollback(300))
			emu.Write(st)
			same(t, fmt.Sprintf("seed %d, engine %d on connecting at %d", seed, round, cl.firstOff), reference(stream, 40, 12, rs, cl.firstOff), emu)
			stop := cl.Track(emu)
			off := cl.firstOff
			if off == int64(len(stream)) {
				_, _ = cl.Write([]byte("q")) // the writer exits on a key
			}
			quit := 1 + r.Intn(40) // chunks this engine reads before it goes
			resized, ended := false, true
			for chunk := range cl.Output() {
				emu.Write(chunk)
				off += int64(len(chunk))
				if r.Intn(6) == 0 {
					w, h = 20+r.Intn(40), 5+r.Intn(15)
					emu.Resize(w, h)
					if err := cl.Resize(uint16(w), uint16(h)); err != nil {
						t.Fatal(err)
					}
					rs = append(rs, resizeAt{off, w, h})
					resized = true
				}
				if off == int64(len(stream)) {
					// After the resize: the agent exits on it, and then
					// the client's connection closes.
					_, _ = cl.Write([]byte("q"))
				}
				if quit--; quit == 0 {
					ended = false
					break
				}
			}
			if ended {
				// The output ended: the exit comes (an engine holding
				// the terminal may see its end first).
				select {
				case <-cl.Done():
				case <-time.After(30 * time.Second):
					t.Fatalf("seed %d: no exit after the output's end", seed)
				}
			}
			select {
			case <-cl.Done():
				stop()
				if off != int64(len(stream)) {
					t.Fatalf("seed %d: stream ended at %d of %d", seed, off, len(stream))
				}
				same(t, fmt.Sprintf("seed %d, the last engine at the end", seed), reference(stream, 40, 12, rs, off), emu)
			default:
				if resized {
					// Every frame sent reached the host before it goes.
					if _, _, _, err := cl.Snapshot(ctx(t)); err != nil {
						t.Fatal(err)
					}
				}
				stop()
				cl.Close()
				continue
			}
			break
		}
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Fatal("the host did not end")
		}
		if opt.CheckpointPath != "" {
			if left, _ := filepath.Glob(opt.CheckpointPath + "*"); len(left) > 0 {
				t.Fatalf("seed %d: the host left %v behind", seed, left)
			}
		}
	}
	// A relayed engine reads its stream to the end: it never reconnects.
	if onDisk == 0 && !relay {
		t.Fatal("no engine connected to a host holding its checkpoint on disk: that path went untested")
	}
}

// fastCadence checkpoints every 5000 bytes, looking every millisecond,
// so a test's few kilobytes of output take every path.
func fastCadence() cadence {
	c := defaultCadence()
	c.ckBytes, c.poll = 5000, time.Millisecond
	return c
}

// engineMain is an engine of these tests in a process of its own
// (CHORUS_HOST_TEST_MAIN=engine): it connects, tracks an emulator with the
// output and prints the offset it read to after each chunk, until killed.
func engineMain(sock string) {
	cl, err := dial(context.Background(), sock, "", os.Getenv("CHORUS_HOST_TEST_RELAY") == "1")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cl.cad = fastCadence()
	if err := cl.Wait4Info(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	w, h, st := cl.Screen()
	emu := term.New(w, h, term.WithScrollback(300))
	emu.Write(st)
	cl.Track(emu)
	off := cl.firstOff
	fmt.Printf("%d\n", off)
	for chunk := range cl.Output() {
		emu.Write(chunk)
		off += int64(len(chunk))
		fmt.Printf("%d\n", off)
	}
	select {} // the test kills it
}

// Engines in processes of their own killed with SIGKILL at random points
// of random output: the next engine connecting sees the screen of an
// emulator that saw the whole stream up to there, and the last the
// whole stream. Holding the terminal, an engine writes the log before it
// uses what it read, and the host reads the log after it: a kill between
// a read and its write to the log (microseconds) loses that read, from
// the log as from the screen, so there the record is the log.
func TestEngineKilledAnywhereLosesNothing(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) { killedAnywhere(t, m.relay) })
	}
}

func killedAnywhere(t *testing.T, relay bool) {
	const kills = 5
	for seed := int64(1); seed <= 4; seed++ {
		r := rand.New(rand.NewSource(seed))
		file, stream := writeNoise(t, 100+seed, 6000)
		sock, ended := serve(t, time.Minute)
		cl, err := dial(ctx(t), sock, "", relay)
		if err != nil {
			t.Fatal(err)
		}
		sp := modeSpec(t, file, relay)
		fifo := filepath.Join(shortDir(t), "done")
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		sp.Env = []string{"CHORUS_HOST_TEST_SLOW=1", "CHORUS_HOST_TEST_DONE=" + fifo}
		if err := cl.Start(ctx(t), sp); err != nil {
			t.Fatal(err)
		}
		direct(t, cl, relay)
		cl.Close()
		// The writer says when it has written all: with a read lost to a
		// kill, no engine reaches the stream's length.
		written := make(chan struct{})
		go func(written chan struct{}) {
			defer close(written)
			if f, err := os.Open(fifo); err == nil {
				_, _ = io.Copy(io.Discard, f)
				f.Close()
			}
		}(written)
		for kill := 0; kill < kills; kill++ {
			cmd := exec.Command(os.Args[0], sock)
			cmd.Env = append(os.Environ(), "CHORUS_HOST_TEST_MAIN=engine")
			if relay {
				cmd.Env = append(cmd.Env, "CHORUS_HOST_TEST_RELAY=1")
			}
			cmd.Stderr = os.Stderr
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			read := make(chan struct{})
			lines := 1 + r.Intn(6)
			go func() {
				defer close(read)
				sc := bufio.NewScanner(out)
				// Killed after a few chunks, or once it read the last.
				for i := 0; i < lines && sc.Scan() && sc.Text() != strconv.Itoa(len(stream)); i++ {
				}
			}()
			select {
			case <-read:
			case <-written: // nothing more to print, maybe
			case <-time.After(30 * time.Second):
				t.Error("the engine printed nothing")
				_ = cmd.Process.Signal(syscall.SIGQUIT)
				pprof.Lookup("goroutine").WriteTo(os.Stderr, 2)
				select { // its own goroutines, on its way out
				case <-read:
				case <-time.After(10 * time.Second):
				}
			}
			_ = cmd.Process.Signal(syscall.SIGKILL)
			t.Logf("seed %d: engine %d killed after %d lines", seed, kill, lines)
			_ = cmd.Wait()
			if !testkit.WaitExit(t, cmd.Process.Pid, 30*time.Second) {
				t.Fatal("the engine did not die")
			}
		}
		cl, err = dial(ctx(t), sock, "", relay)
		if err != nil {
			t.Fatal(err)
		}
		cl.cad = fastCadence()
		if err := cl.Wait4Info(ctx(t)); err != nil {
			t.Fatal(err)
		}
		direct(t, cl, relay)
		record := stream
		if !relay {
			// The host has written its log and reads nothing now.
			if record, err = os.ReadFile(sp.LogPath); err != nil {
				t.Fatal(err)
			}
		}
		w, h, st := cl.Screen()
		t.Logf("seed %d: re-adopted at %d of %d bytes", seed, cl.firstOff, len(record))
		if cl.firstOff > int64(len(record)) {
			t.Fatalf("seed %d: re-adopted at %d, past the %d bytes recorded", seed, cl.firstOff, len(record))
		}
		emu := term.New(w, h, term.WithScrollback(300))
		emu.Write(st)
		same(t, fmt.Sprintf("seed %d, after the kills at %d", seed, cl.firstOff), reference(record, 40, 12, nil, cl.firstOff), emu)
		stop := cl.Track(emu)
		out := cl.Output()
		deadline := time.After(60 * time.Second)
		for out != nil {
			select {
			case chunk, ok := <-out:
				if !ok {
					out = nil
					continue
				}
				emu.Write(chunk)
			case <-written:
				written = nil
				_, _ = cl.Write([]byte("q")) // the writer exits on a key
			case <-deadline:
				t.Fatalf("seed %d: the agent's output did not end", seed)
			}
		}
		<-cl.Done()
		stop()
		if !relay {
			if record, err = os.ReadFile(sp.LogPath); err != nil {
				t.Fatal(err)
			}
			lost := len(stream) - len(record)
			if lost == 0 && string(record) != string(stream) || lost < 0 || lost > kills*32<<10 {
				t.Fatalf("seed %d: the log holds %d bytes of the %d written, and not the same", seed, len(record), len(stream))
			}
			if lost > 0 {
				t.Logf("seed %d: %d bytes lost to a kill between a read and its log", seed, lost)
			}
		}
		same(t, fmt.Sprintf("seed %d at the end", seed), reference(record, 40, 12, nil, int64(len(record))), emu)
		select {
		case <-ended:
		case <-time.After(30 * time.Second):
			t.Fatal("the host did not end")
		}
	}
}
