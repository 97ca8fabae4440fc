package remote

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/unixsock"
)

// engine is a minimal engine for the protocol's own tests: real
// emulators, commands recorded. The end-to-end path with the real engine
// is ui's TestDetachKillTerminalAttach.
type engine struct {
	mu      sync.Mutex
	snap    orchestrator.Snapshot
	emus    map[string]*term.Emulator
	typed   map[string][]byte
	cmds    []orchestrator.Command
	changed chan struct{}
	events  chan orchestrator.Event
}

func newEngine() *engine {
	e := &engine{emus: map[string]*term.Emulator{}, typed: map[string][]byte{}, changed: make(chan struct{}, 1), events: make(chan orchestrator.Event, 16)}
	e.snap.Agents = map[string]*orchestrator.AgentState{"a1": {ID: "a1", TaskID: "t-1", Status: orchestrator.AgentRunning}}
	e.snap.Running = 1
	e.emus["a1"] = term.New(40, 10, term.WithScrollback(3000))
	return e
}

func (e *engine) Changed() <-chan struct{}             { return e.changed }
func (e *engine) Subscribe() <-chan orchestrator.Event { return e.events }
func (e *engine) Snapshot() orchestrator.Snapshot {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.snap
}
func (e *engine) Do(_ context.Context, c orchestrator.Command) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.Kind == orchestrator.CmdStop && c.AgentID != "a1" {
		return orchestrator.ErrUnknownAgent
	}
	e.cmds = append(e.cmds, c)
	return nil
}
func (e *engine) Screen(id string) *term.Emulator { return e.emus[id] }
func (e *engine) Input(id string) io.Writer {
	return writerFunc(func(p []byte) { e.mu.Lock(); e.typed[id] = append(e.typed[id], p...); e.mu.Unlock() })
}
func (e *engine) Resize(id string, cols, rows int) {
	if m := e.emus[id]; m != nil {
		m.Resize(cols, rows)
	}
}
func (e *engine) Checkpoints(context.Context) ([]merge.Checkpoint, error) {
	return []merge.Checkpoint{{Ref: "refs/chorus/checkpoints/x", Commit: "abc"}}, nil
}
func (e *engine) Dependents(_ context.Context, id string) ([]string, error) {
	return []string{id + "-child"}, nil
}
func (e *engine) TaskDiff(_ context.Context, id string, stat bool) (orchestrator.TaskDiff, error) {
	return orchestrator.TaskDiff{TaskID: id, Text: fmt.Sprint("stat=", stat)}, nil
}
func (e *engine) ChangeTask(_ context.Context, op orchestrator.TaskOp) (beads.Task, error) {
	if op.ID == "missing" {
		return beads.Task{}, fmt.Errorf("task %s: %w", op.ID, beads.ErrNotFound)
	}
	return beads.Task{ID: "t-9", Title: op.Title}, nil
}

type writerFunc func(p []byte)

func (f writerFunc) Write(p []byte) (int, error) { f(p); return len(p), nil }

// serve runs a server for e on a fresh socket and returns its path.
func serve(t *testing.T, e Engine, stop func()) string {
	t.Helper()
	return serveWith(t, &Server{Eng: e, Stop: stop})
}

// serveWith runs srv on a fresh socket and returns its path.
func serveWith(t *testing.T, srv *Server) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "chorus-remote")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "engine", "engine.sock")
	ln, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { srv.Serve(ctx, ln); close(done) }()
	t.Cleanup(func() { cancel(); srv.Close(); <-done })
	return path
}

// waitText waits (on the emulator's dirty notices) until emu shows want.
func waitText(t *testing.T, emu *term.Emulator, want string) {
	t.Helper()
	wake := make(chan struct{}, 1)
	emu.OnDirty(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer emu.OnDirty(nil)
	timeout := time.After(30 * time.Second)
	for {
		emu.TakeDirty()
		if strings.Contains(emu.AllText(), want) {
			return
		}
		select {
		case <-wake:
		case <-timeout:
			t.Fatalf("the copy never showed %q:\n%s", want, emu.AllText())
		}
	}
}

// A TUI asks for every agent's screen with its hello: once that is
// answered the copies are there, with no request for each. An engine
// that does not know the request answers an error, and the client asks
// for each screen instead; the copies are the same.
func TestTUIAsksForEveryScreenWithItsHello(t *testing.T) {
	for _, old := range []bool{false, true} {
		t.Run(fmt.Sprintf("old engine %v", old), func(t *testing.T) {
			e := newEngine()
			e.snap.Agents["a2"] = &orchestrator.AgentState{ID: "a2", TaskID: "t-2", Status: orchestrator.AgentRunning}
			e.emus["a2"] = term.New(40, 5)
			fmt.Fprint(e.emus["a1"], "\x1b[31mfirst\x1b[m agent\r\n")
			fmt.Fprint(e.emus["a2"], "second agent\r\n")
			c, err := Dial(context.Background(), serveWith(t, &Server{Eng: e, noScreens: old}), RoleTUI)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			c.awaitAll()
			c.mu.Lock()
			held, asked := len(c.screens), len(c.fetching)
			c.mu.Unlock()
			// Asked for one by one, the screens may be on their way still.
			if (!old && (held != 2 || asked != 0)) || (old && asked != 2) {
				t.Fatalf("after the screens' answer: %d copies held, %d asked for one by one", held, asked)
			}
			for id, emu := range e.emus {
				if cp := c.Screen(id); cp == nil || cp.Text() != emu.Text() {
					t.Fatalf("%s's copy is not the engine's screen:\n%v", id, cp)
				}
			}
		})
	}
}

// The socket is private: 0600 in a 0700 directory.
func TestListenIsPrivate(t *testing.T) {
	path := serve(t, newEngine(), nil)
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 || st.Mode()&os.ModeSocket == 0 {
		t.Fatalf("socket mode %v, %v", st.Mode(), err)
	}
	if st, err := os.Stat(filepath.Dir(path)); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("directory mode %v, %v", st.Mode(), err)
	}
	// A second engine for the same socket is refused while the first answers.
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "already listens") {
		t.Fatalf("second Listen: %v", err)
	}
}

// A client's screen starts as the engine's emulator (history included),
// then follows its output, batched: many small writes arrive in far fewer
// frames; input, resizes, commands, queries, events and stop get through.
func TestClientMirrorsTheEngine(t *testing.T) {
	e := newEngine()
	emu := e.emus["a1"]
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(emu, "\x1b[32mhistory line %d\x1b[m\r\n", i)
	}
	stopped := make(chan struct{})
	path := serve(t, e, func() { close(stopped) })
	c, err := Dial(context.Background(), path, RoleTUI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Snapshot().Agents["a1"] == nil {
		t.Fatalf("first snapshot: %+v", c.Snapshot())
	}
	events := c.Subscribe()
	cp := c.Screen("a1")
	if cp == nil {
		t.Fatal("no copy of a1's screen")
	}
	// The screen comes at once, the history when it is wanted.
	if cp.Text() != emu.Text() || cp.ScrollbackLines() != 0 {
		t.Fatalf("the copy at attach shows\n%s\nwith %d history rows; the engine's screen:\n%s", cp.Text(), cp.ScrollbackLines(), emu.Text())
	}
	cp.WantHistory()
	waitText(t, cp, "history line 1\n")
	if cp.AllText() != emu.AllText() || cp.ScrollbackLines() != emu.ScrollbackLines() {
		t.Fatalf("the copy at attach:\n%s\nthe engine's:\n%s", cp.AllText(), emu.AllText())
	}
	if c.Screen("nobody") != nil {
		t.Fatal("a screen for an unknown agent")
	}

	const writes = 2000
	for i := 1; i <= writes; i++ {
		fmt.Fprintf(emu, "live %d\r\n", i)
	}
	waitText(t, cp, fmt.Sprintf("live %d", writes))
	if cp.AllText() != emu.AllText() {
		t.Fatal("the copy differs from the engine's emulator after the stream")
	}
	if n := c.outFrames.Load(); n >= writes/4 {
		t.Fatalf("%d writes arrived in %d frames: output is not batched", writes, n)
	}

	c.Resize("a1", 30, 8)
	// A request after it is a barrier: the engine reads in order.
	if _, err := c.Checkpoints(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w, h := emu.Size(); w != 30 || h != 8 {
		t.Fatalf("the engine's emulator is %dx%d after the client's resize", w, h)
	}
	fmt.Fprintf(emu, "after resize\r\n")
	waitText(t, cp, "after resize")
	if w, h := cp.Size(); w != 30 || h != 8 {
		t.Fatalf("the copy is %dx%d after the engine's resize", w, h)
	}
	if cp.AllText() != emu.AllText() {
		t.Fatal("the copy differs from the engine's emulator after a resize")
	}

	if _, err := c.Input("a1").Write([]byte("typed\r")); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdPause}); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdStop, AgentID: "x"}); err == nil || err.Error() != orchestrator.ErrUnknownAgent.Error() {
		t.Fatalf("an engine's error: %v", err)
	}
	e.mu.Lock()
	typed, cmds := string(e.typed["a1"]), len(e.cmds)
	e.mu.Unlock()
	// Input is sent before the command on the same connection, and the
	// engine reads in order: it has arrived.
	if typed != "typed\r" || cmds != 1 {
		t.Fatalf("typed %q, %d commands", typed, cmds)
	}
	if cps, err := c.Checkpoints(ctx); err != nil || len(cps) != 1 || cps[0].Commit != "abc" {
		t.Fatalf("checkpoints %+v %v", cps, err)
	}
	if deps, err := c.Dependents(ctx, "t-1"); err != nil || len(deps) != 1 || deps[0] != "t-1-child" {
		t.Fatalf("dependents %v %v", deps, err)
	}
	if d, err := c.TaskDiff(ctx, "t-1", true); err != nil || d.TaskID != "t-1" || d.Text != "stat=true" {
		t.Fatalf("diff %+v %v", d, err)
	}
	// Task writes go to the engine; its errors keep their identity.
	if tk, err := c.ChangeTask(ctx, orchestrator.TaskOp{Op: orchestrator.TaskCreate, Title: "new"}); err != nil || tk.ID != "t-9" || tk.Title != "new" {
		t.Fatalf("create through the engine: %+v %v", tk, err)
	}
	if err := (Store{C: c}).Close(ctx, "missing", ""); !errors.Is(err, beads.ErrNotFound) || err.Error() != "task missing: task not found" {
		t.Fatalf("an engine's store error: %v", err)
	}
	if snap, err := c.Current(ctx); err != nil || snap.Agents["a1"] == nil {
		t.Fatalf("snapshot request: %+v %v", snap, err)
	}

	e.events <- orchestrator.Event{Kind: orchestrator.EvCompleted, Task: "t-1", Fields: map[string]any{"n": 1}}
	if ev := <-events; ev.Kind != orchestrator.EvCompleted || ev.Task != "t-1" {
		t.Fatalf("event %+v", ev)
	}
	e.mu.Lock()
	e.snap.Running = 0
	delete(e.snap.Agents, "a1")
	e.mu.Unlock()
	e.changed <- struct{}{}
	for c.Snapshot().Running != 0 {
		<-c.Changed()
	}

	if err := c.Stop(ctx, false); err != nil {
		t.Fatal(err)
	}
	<-stopped
}

// A peer of another protocol version is told which versions meet and what
// to do, both ways round.
func TestVersionMismatch(t *testing.T) {
	path := serve(t, newEngine(), nil)
	nc, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, _ := appendMsg(nil, &Msg{T: "hello", Version: Version + 1, Role: RoleTUI})
	nc.Write(b)
	_, p, err := readFrame(bufio.NewReader(nc), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(p), "speaks protocol version") || !strings.Contains(string(p), "chorus stop") {
		t.Fatalf("the engine's refusal: %s", p)
	}

	// An engine of another version: the client says so.
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		readFrame(bufio.NewReader(c), nil)
		b, _ := appendMsg(nil, &Msg{T: "hello", Version: Version + 1, PID: 4242})
		c.Write(b)
	}()
	_, err = Dial(context.Background(), filepath.Join(dir, "s"), RoleTUI)
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("speaks protocol version %d and this chorus speaks %d", Version+1, Version)) || !strings.Contains(err.Error(), "4242") {
		t.Fatalf("Dial to another version: %v", err)
	}
	if _, err := Dial(context.Background(), filepath.Join(dir, "none"), RoleTUI); err == nil || !strings.Contains(err.Error(), ErrNoEngine.Error()) {
		t.Fatalf("Dial with no engine: %v", err)
	}
}

// The peer check reads the connecting process's uid.
func TestPeerUID(t *testing.T) {
	dir := t.TempDir()
	ln, err := net.Listen("unix", filepath.Join(dir, "s"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := net.Dial("unix", filepath.Join(dir, "s"))
		if err == nil {
			defer c.Close()
			io.Copy(io.Discard, c)
		}
	}()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	uid, err := unixsock.PeerUID(c.(*net.UnixConn))
	if err != nil || uid != os.Getuid() {
		t.Fatalf("peer uid %d, %v; want %d", uid, err, os.Getuid())
	}
}

// A frame a client waits for is sent at once, even when it is queued
// while the writer waits out the batching interval for output queued
// before it: an attach's screens came a whole interval late when a
// snapshot had just been sent.
func TestAnswerDoesNotWaitOutTheInterval(t *testing.T) {
	e := newEngine()
	held := make(chan struct{}, 8)
	srv := &Server{Eng: e, Interval: time.Hour, onHold: func() { held <- struct{}{} }}
	c, err := Dial(context.Background(), serveWith(t, srv), RoleTUI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.awaitAll()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// An answer sent now: the writer's last batch is from now on.
	if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdPause}); err != nil {
		t.Fatal(err)
	}
	// A change: its snapshot is batched, so the writer waits an interval.
	e.changed <- struct{}{}
	select {
	case <-held:
	case <-ctx.Done():
		t.Fatal("the writer never waited out the interval for the snapshot")
	}
	if err := c.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdResume}); err != nil {
		t.Fatalf("the answer waited for the batching interval: %v", err)
	}
}

// countingEngine tells each snapshot the server takes.
type countingEngine struct {
	*engine
	took chan orchestrator.Snapshot
}

func (e countingEngine) Snapshot() orchestrator.Snapshot {
	s := e.engine.Snapshot()
	e.took <- s
	return s
}

// An engine change that leaves the snapshot as it was (an agent resized,
// a read) sends the TUI nothing: the UI drew its whole screen again for
// each one, a few milliseconds after an attach's first frame.
func TestUnchangedSnapshotIsNotSentAgain(t *testing.T) {
	e := countingEngine{newEngine(), make(chan orchestrator.Snapshot, 8)}
	nc, err := net.Dial("unix", serveWith(t, &Server{Eng: e, Interval: time.Millisecond}))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	b, _ := appendMsg(nil, &Msg{T: "hello", Version: Version, Role: RoleTUI})
	if _, err := nc.Write(b); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(nc)
	var snaps []int // each snapshot's Running, in the order read
	next := func() {
		for {
			kind, p, err := readFrame(r, nil)
			if err != nil {
				t.Fatal(err)
			}
			var m Msg
			if kind == frameMsg && json.Unmarshal(p, &m) == nil && m.T == "snap" {
				snaps = append(snaps, m.Snap.Running)
				return
			}
		}
	}
	next() // the first, after the hello
	<-e.took
	// A change that changed nothing, taken by the server before the
	// next one that did.
	e.changed <- struct{}{}
	<-e.took
	e.mu.Lock()
	e.snap.Running = 2
	e.mu.Unlock()
	e.changed <- struct{}{}
	<-e.took
	next()
	if len(snaps) != 2 || snaps[1] != 2 {
		t.Fatalf("snapshots read (their Running): %v; want [1 2]", snaps)
	}
}
