package ptyproc

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// failSafe only keeps a broken test from hanging the run; nothing waits
// for it in a passing run.
const failSafe = 60 * time.Second

// collector drains Output into a buffer and wakes waiters on each chunk.
type collector struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	changed chan struct{}
	closed  bool
	wake    chan struct{} // one pending wake-up per chunk, never blocks
}

func collect(p *Proc) *collector {
	c := &collector{changed: make(chan struct{}), wake: make(chan struct{}, 1)}
	go func() {
		for b := range p.Output() {
			c.mu.Lock()
			c.buf.Write(b)
			close(c.changed)
			c.changed = make(chan struct{})
			c.mu.Unlock()
			select {
			case c.wake <- struct{}{}:
			default:
			}
		}
		c.mu.Lock()
		c.closed = true
		close(c.changed)
		c.mu.Unlock()
	}()
	return c
}

func (c *collector) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}

// waitFor blocks until the output matches re and returns the submatches.
func (c *collector) waitFor(t *testing.T, re string) []string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.NewTimer(failSafe)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		m := rx.FindStringSubmatch(c.buf.String())
		ch, closed := c.changed, c.closed
		c.mu.Unlock()
		if m != nil {
			return m
		}
		if closed {
			t.Fatalf("output ended without %q; got %q", re, c.String())
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("no %q in output %q", re, c.String())
		}
	}
}

// waitClosed blocks until Output has been closed and fully drained.
func (c *collector) waitClosed(t *testing.T) {
	t.Helper()
	deadline := time.NewTimer(failSafe)
	defer deadline.Stop()
	for {
		c.mu.Lock()
		ch, closed := c.changed, c.closed
		c.mu.Unlock()
		if closed {
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatal("output never closed")
		}
	}
}

func start(t *testing.T, spec Spec) *Proc {
	t.Helper()
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Stop(0) })
	return p
}

func TestOutputEnvExitCode(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("CHORUS_DROP_ME", "x")
	p := start(t, Spec{
		Argv:  []string{"sh", "-c", `echo "out:$FOO:$(pwd):${CHORUS_DROP_ME-unset}:$TERM"; exit 7`},
		Dir:   dir,
		Env:   []string{"FOO=bar", "TERM=xterm-256color"},
		Unset: []string{"CHORUS_DROP_ME"},
	})
	c := collect(p)
	code, err := p.Wait()
	if err != nil || code != 7 {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	// Done implies all output has been delivered.
	c.waitFor(t, `out:bar:`+regexp.QuoteMeta(dir)+`:unset:xterm-256color`)
	if p.Pid() <= 0 || p.StartTime() == 0 {
		t.Errorf("pid %d start %d", p.Pid(), p.StartTime())
	}
	if _, err := p.Write([]byte("x")); err == nil {
		t.Error("Write after exit should fail")
	}
}

// A child started directly (no shell to set it) sees PWD as its working
// directory, not the parent's: some CLIs take their project from PWD.
func TestPWDIsTheWorkingDirectory(t *testing.T) {
	dir := t.TempDir()
	p := start(t, Spec{Argv: []string{"printenv", "PWD"}, Dir: dir})
	c := collect(p)
	if code, err := p.Wait(); err != nil || code != 0 {
		t.Fatalf("Wait = %d, %v", code, err)
	}
	c.waitFor(t, regexp.QuoteMeta(dir))
}

func TestOwnProcessGroup(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", `echo "ids:$$:$(ps -o pgid= -p $$ | tr -d ' '):$(ps -o sid= -p $$ | tr -d ' ')"; read x`}})
	c := collect(p)
	m := c.waitFor(t, `ids:(\d+):(\d+):(\d+)`)
	pid := strconv.Itoa(p.Pid())
	if m[1] != pid || m[2] != pid || m[3] != pid {
		t.Errorf("pid/pgid/sid = %v, want all %s", m[1:], pid)
	}
}

func TestLogCapped(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "agent.log")
	const total, cap = 200000, 10000
	p := start(t, Spec{
		Argv:    []string{"sh", "-c", "head -c " + strconv.Itoa(total) + " /dev/zero | tr '\\0' x"},
		LogPath: logPath,
		LogCap:  cap,
	})
	c := collect(p)
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if err := p.LogErr(); err != nil {
		t.Fatal(err)
	}
	c.waitClosed(t)
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, bytes.Repeat([]byte("x"), cap)) {
		t.Error("log does not start with the first cap bytes")
	}
	rest := string(b[cap:])
	if strings.Count(rest, "log truncated") != 1 || strings.Contains(rest, "x") {
		t.Errorf("after the cap expected one truncation note, got %q", rest)
	}
	if got := strings.Count(c.String(), "x"); got != total {
		t.Errorf("consumer got %d bytes, want all %d", got, total)
	}
}

func TestResizeSeenByChild(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", `echo "size:$(stty size)"; read x; echo "size2:$(stty size)"`}, Cols: 100, Rows: 30})
	c := collect(p)
	c.waitFor(t, `size:30 100`)
	if err := p.Resize(120, 40); err != nil {
		t.Fatal(err)
	}
	// A resize must not put the terminal back into blocking mode.
	if !nonBlocking(t, p) {
		t.Fatal("the terminal is blocking after Resize")
	}
	if _, err := p.Write([]byte("\r")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, `size2:40 120`)
}

// The master side is non-blocking: a read never holds a thread while
// there is nothing to read, a write never while the child's input is full.
func TestTerminalIsNonBlocking(t *testing.T) {
	p := start(t, Spec{Argv: []string{"cat"}})
	if !nonBlocking(t, p) {
		t.Fatal("the terminal's master side is in blocking mode")
	}
	c := collect(p)
	if _, err := p.Write([]byte("ping\r")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, `ping`)
}

func nonBlocking(t *testing.T, p *Proc) bool {
	t.Helper()
	rc, err := p.pty.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var fl int
	var ferr error
	if err := rc.Control(func(fd uintptr) { fl, ferr = unix.FcntlInt(fd, unix.F_GETFL, 0) }); err != nil || ferr != nil {
		t.Fatal(err, ferr)
	}
	return fl&unix.O_NONBLOCK != 0
}

func TestStopKillsStubbornGroup(t *testing.T) {
	script := `trap "" TERM HUP
sh -c 'trap "" TERM HUP; echo "gc:$$"; exec sleep 1000' &
wait`
	p := start(t, Spec{Argv: []string{"sh", "-c", script}})
	c := collect(p)
	m := c.waitFor(t, `gc:(\d+)`)
	gc, _ := strconv.Atoi(m[1])
	gcStart, err := StartTimeOf(gc)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(gc, gcStart) {
		t.Fatal("grandchild should be alive")
	}
	waitGone := watchExit(t, gc)

	p.Stop(100 * time.Millisecond)
	select {
	case <-p.Done():
	default:
		t.Fatal("Stop returned before the process was reaped")
	}
	if code, _ := p.Wait(); code != -1 {
		t.Errorf("exit code %d, want -1 (killed)", code)
	}
	if Alive(p.Pid(), p.StartTime()) {
		t.Error("leader still alive")
	}
	waitGone()
	if Alive(gc, gcStart) {
		t.Error("grandchild survived Stop")
	}
}

func TestStopGraceful(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", `trap 'echo bye; exit 3' TERM; echo ready; while :; do read x; done`}})
	c := collect(p)
	c.waitFor(t, "ready")
	p.Stop(failSafe)
	if code, _ := p.Wait(); code != 3 {
		t.Errorf("exit code %d, want 3 from the TERM trap", code)
	}
	c.waitFor(t, "bye")
}

func TestAlive(t *testing.T) {
	self, err := StartTimeOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(os.Getpid(), self) {
		t.Error("self not alive")
	}
	// Same pid, different start time: a reused pid must read as dead.
	if Alive(os.Getpid(), self+1) {
		t.Error("start-time guard ignored")
	}
	if Alive(0, 0) || Alive(-1, 0) {
		t.Error("invalid pid alive")
	}
	p := start(t, Spec{Argv: []string{"true"}})
	collect(p)
	p.Wait()
	if Alive(p.Pid(), p.StartTime()) {
		t.Error("exited process alive")
	}
}

func TestTypeConfirmedByCat(t *testing.T) {
	for _, paste := range []bool{false, true} {
		// Echo off so that only cat's own output, which needs the Enter,
		// can confirm.
		p := start(t, Spec{Argv: []string{"sh", "-c", "stty -echo; echo ready; exec cat"}})
		c := collect(p)
		c.waitFor(t, "ready")
		err := p.Type(context.Background(), "hello typed", TypeOptions{Paste: paste, Marker: "hello typed", Delay: time.Millisecond})
		if err != nil {
			t.Fatalf("paste=%v: %v", paste, err)
		}
		if paste {
			c.waitFor(t, regexp.QuoteMeta(pasteStart+"hello typed"+pasteEnd))
		} else {
			c.waitFor(t, "hello typed")
		}
		p.Stop(0)
	}
}

func TestTypeConfirmFunc(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", "stty -echo; echo ready; read line; echo \"busy:$line\"; read x"}})
	c := collect(p)
	c.waitFor(t, "ready")
	err := p.Type(context.Background(), "go", TypeOptions{
		Confirm: func() bool { return strings.Contains(c.String(), "busy:go") },
		Wake:    c.wake,
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestTypeNotConfirmed(t *testing.T) {
	p := start(t, Spec{Argv: []string{"sh", "-c", "stty -echo; echo ready; exec sleep 1000"}})
	c := collect(p)
	c.waitFor(t, "ready")
	err := p.Type(context.Background(), "ignored", TypeOptions{Delay: time.Millisecond, Attempts: 2, AttemptWait: 50 * time.Millisecond})
	if !errors.Is(err, ErrNotConfirmed) {
		t.Fatalf("want ErrNotConfirmed, got %v", err)
	}
	// A cancelled context ends Type at once.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.Type(ctx, "x", TypeOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestStuckConsumerDoesNotHangAgent(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "log")
	const total = 1 << 20
	p := start(t, Spec{
		Argv:         []string{"sh", "-c", "head -c " + strconv.Itoa(total) + " /dev/zero | tr '\\0' y"},
		OutputBuffer: 1,
		StallTimeout: 10 * time.Millisecond,
		LogPath:      logPath,
	})
	// Nobody reads Output: the child must still run to the end.
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	delivered := 0
	for b := range p.Output() {
		delivered += len(b)
	}
	if p.Dropped() == 0 || int64(delivered)+p.Dropped() != total {
		t.Errorf("delivered %d + dropped %d != %d", delivered, p.Dropped(), total)
	}
	if st, err := os.Stat(logPath); err != nil || st.Size() != total {
		t.Errorf("log should hold everything: %v %v", st.Size(), err)
	}
}

func TestStopOrphan(t *testing.T) {
	// A group whose leader ignores SIGTERM, like a stuck agent left by a
	// Chorus that died.
	p, err := Start(Spec{Argv: []string{"sh", "-c", "trap '' TERM; echo up; while :; do sleep 1; done"}})
	if err != nil {
		t.Fatal(err)
	}
	for chunk := range p.Output() {
		if strings.Contains(string(chunk), "up") {
			break
		}
	}
	go func() {
		for range p.Output() {
		}
	}()
	if StopOrphan(p.Pid(), p.StartTime()+1, time.Second) {
		t.Fatal("a different start time must not be stopped")
	}
	if !StopOrphan(p.Pid(), p.StartTime(), 200*time.Millisecond) {
		t.Fatal("not found")
	}
	<-p.Done()
	if StopOrphan(p.Pid(), p.StartTime(), time.Second) {
		t.Fatal("a dead process reported found")
	}
}

// TestBusyOutputCoalesced: a child writing a byte every few milliseconds
// is read at most once per coalescing window, so a stream of small writes
// costs one wake-up and one delivery per window, not per write. (Reads are
// on a grid of the window; two reads never share a grid point.)
func TestBusyOutputCoalesced(t *testing.T) {
	const writes = 60
	for _, c := range []time.Duration{DefaultCoalesce, 40 * time.Millisecond} {
		// The span is from before the start to after the last delivery: it
		// holds every read however late the deliveries come on a loaded
		// machine, so the bound is loose but cannot fail spuriously; without
		// coalescing there would be a chunk per write.
		chunks, n, span := countReads(t, Spec{Argv: []string{"sh", "-c", `i=0; while [ $i -lt ` + strconv.Itoa(writes) + ` ]; do printf x; sleep 0.005; i=$((i+1)); done`}, Coalesce: c}, 'x')
		if n != writes {
			t.Fatalf("got %d bytes, want %d", n, writes)
		}
		// One grid point per window in the span, the first read (at
		// once, after quiet) and one read after the child's exit, which
		// ends the pacing wait off the grid.
		if limit := int(span/c) + 3; chunks > limit {
			t.Errorf("window %v: %d chunks over %v, want at most %d", c, chunks, span, limit)
		}
	}
}

// countReads runs spec to its end and counts the reads of its output, the
// bytes c in them, and the time from before the start to after the last
// delivery (it holds every read however late deliveries come on a loaded
// machine).
func countReads(t *testing.T, spec Spec, c byte) (reads, n int, span time.Duration) {
	t.Helper()
	start := time.Now()
	p, err := Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	for b := range p.Output() {
		reads++
		n += bytes.Count(b, []byte{c})
	}
	return reads, n, time.Since(start)
}

// TestMain lets the test binary play a busy full-screen program for
// TestBusyScreenCoalesced.
func TestMain(m *testing.M) {
	if os.Getenv("PTYPROC_TEST_BUSY_SCREEN") != "" {
		busyScreen()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const (
	screenFrames = 60
	frameWrites  = 20
)

// busyScreen draws frames of 2,400 bytes in 20 writes each, about one
// frame per grid window, as a TUI redrawing in small writes does.
func busyScreen() {
	line := append(bytes.Repeat([]byte("y"), 119), '\n')
	for range screenFrames {
		for range frameWrites {
			os.Stdout.Write(line)
			time.Sleep(500 * time.Microsecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestBusyScreenCoalesced: frames of a few KiB written in many small
// writes are read a few times per window, not once per write: the
// reader's rule for floods (a short read right after a full one is
// followed at once) must not take a busy screen for one. The bound holds
// however slow the machine: a late reader reads more at once.
func TestBusyScreenCoalesced(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	chunks, n, span := countReads(t, Spec{Argv: []string{exe}, Env: []string{"PTYPROC_TEST_BUSY_SCREEN=1"}}, 'y')
	if want := screenFrames * frameWrites * 119; n != want {
		t.Fatalf("read %d bytes, want %d", n, want)
	}
	t.Logf("%d reads over %v", chunks, span)
	if limit := 4*int(span/DefaultCoalesce) + 4; chunks > limit {
		t.Errorf("%d reads over %v, want at most %d (a read per write would be %d)", chunks, span, limit, screenFrames*frameWrites)
	}
}

// TestFloodNotThrottled: a child writing as fast as it can is read at full
// speed whatever the coalescing window: full reads are followed at once by
// the next, and so is a short one while full ones keep coming (the reader
// caught up for a moment). The terminal buffers a few dozen KiB, so a
// reader that waited a five-second window at each catch-up would need
// well over the fail-safe for these 8 MiB; one that does not needs well
// under a second.
func TestFloodNotThrottled(t *testing.T) {
	const size = 8 << 20
	p, err := Start(Spec{Argv: []string{"sh", "-c", "head -c " + strconv.Itoa(size) + " /dev/zero | tr '\\0' x"}, Coalesce: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int)
	go func() {
		n := 0
		for b := range p.Output() {
			n += len(b)
		}
		got <- n
	}()
	select {
	case n := <-got:
		if n != size {
			t.Fatalf("read %d bytes, want %d", n, size)
		}
	case <-time.After(failSafe):
		p.Stop(0)
		t.Fatal("a flood was read at the coalescing window's pace")
	}
}

// TestPacer: when the reader waits for the next grid point, read by read.
func TestPacer(t *testing.T) {
	const w = 10 * time.Millisecond
	t0 := time.Unix(1_000_000, 0) // on the grid
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	type read struct {
		ms, n int
		wait  bool // waits until the end of its window
	}
	for _, tc := range []struct {
		name  string
		reads []read
	}{
		{"a trickle waits for the next grid point", []read{{1, 100, true}, {10, 100, true}, {25, 5, true}}},
		{"full reads never wait", []read{{1, 4095, false}, {1, 4095, false}, {2, 1024, false}}},
		{"a short read right after a full one does not wait, the next does", []read{{1, 2400, false}, {2, 120, false}, {3, 120, true}, {10, 2400, false}, {11, 120, false}, {12, 120, true}}},
		{"a flood's short reads never wait", []read{{1, 4095, false}, {1, 4095, false}, {1, 4095, false}, {1, 4095, false}, {2, 500, false}, {2, 300, false}, {12, 300, false}, {13, 200, false}}},
		{"the window before counts, not the one before that", []read{{1, 16 << 10, false}, {2, 10, false}, {12, 10, false}, {13, 10, false}, {25, 10, true}}},
		{"a window with no reads forgets the rate", []read{{11, 16 << 10, false}, {12, 10, false}, {31, 10, true}}},
	} {
		p := pacer{window: w}
		for i, r := range tc.reads {
			got := p.after(r.n, at(r.ms))
			want := time.Time{}
			if r.wait {
				want = at(r.ms).Truncate(w).Add(w)
			}
			if !got.Equal(want) {
				t.Errorf("%s: read %d (%d bytes at %d ms): next read at %v, want %v", tc.name, i, r.n, r.ms, got, want)
			}
		}
	}
}

// A reader pacing a quiet child's output does not hold its exit back: with
// a window of an hour, a child that prints a line and exits is still done
// (and its line read) as soon as it is reaped.
func TestExitEndsPacing(t *testing.T) {
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo hello"}, Coalesce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	c := collect(p)
	select {
	case <-p.Done():
	case <-time.After(failSafe):
		t.Fatal("the child's exit waited for the reader's window")
	}
	c.waitFor(t, "hello")
}

// Typing is read at once, not at the grid's next point: after a child's
// output the reader looks at the terminal on the grid (here an hour
// apart), and the terminal's echo of what was typed still comes back
// while the child sleeps.
func TestTypingEndsPacing(t *testing.T) {
	p, err := Start(Spec{Argv: []string{"sh", "-c", "echo ready; exec sleep 600"}, Coalesce: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second)
	c := collect(p)
	c.waitFor(t, "ready")
	if _, err := p.Write([]byte("zq")); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "zq")
}

// OnGrid moves a time up to the readers' grid, and leaves one on it.
func TestOnGrid(t *testing.T) {
	base := time.Unix(1_800_000_000, 0).Truncate(DefaultCoalesce)
	for _, c := range []struct{ in, want time.Time }{
		{base, base},
		{base.Add(time.Nanosecond), base.Add(DefaultCoalesce)},
		{base.Add(DefaultCoalesce - time.Nanosecond), base.Add(DefaultCoalesce)},
		{base.Add(DefaultCoalesce), base.Add(DefaultCoalesce)},
	} {
		if got := OnGrid(c.in); !got.Equal(c.want) {
			t.Errorf("OnGrid(base+%v) = base+%v, want base+%v", c.in.Sub(base), got.Sub(base), c.want.Sub(base))
		}
	}
}
