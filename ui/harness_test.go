package ui

import (
	"bytes"
	"context"
	"flag"
	"io"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

var update = flag.Bool("update", false, "rewrite the golden screen dumps in testdata/")

// waitLimit turns a hang into a failure; tests never wait on time itself.
const waitLimit = 90 * time.Second

// driver runs a UI on a simulation screen.
type driver struct {
	t     testing.TB
	u     *UI
	sim   tcell.SimulationScreen
	shown chan struct{} // poked after every Show
	done  chan struct{} // closed when run returned, with err set
	err   error
}

// showScreen tells the test each time a frame reaches the screen, full
// draws and tile-only frames alike.
type showScreen struct {
	tcell.SimulationScreen
	shown chan struct{}
}

func (s showScreen) Show() {
	s.SimulationScreen.Show()
	select {
	case s.shown <- struct{}{}:
	default:
	}
}

// startUI runs the UI for o on a w×h simulation screen.
func startUI(t testing.TB, o Options, w, h int) *driver {
	t.Helper()
	return startUIWith(t, o, w, h, nil)
}

// startUIWith is startUI with setup run on the UI before it starts
// (tests swap its clock there).
func startUIWith(t testing.TB, o Options, w, h int, setup func(*UI)) *driver {
	t.Helper()
	sim := tcell.NewSimulationScreen("UTF-8")
	shown := make(chan struct{}, 1)
	o.Screen = showScreen{sim, shown}
	u, err := newUI(o)
	if err != nil {
		t.Fatal(err)
	}
	if setup != nil {
		setup(u)
	}
	// SetScreen resets a simulation screen to 80×25: size it after.
	u.onScreen = func(tcell.Screen) { sim.SetSize(w, h) }
	u.keyDone = make(chan struct{}, 64)
	u.pumpStarted = make(chan struct{})
	d := &driver{t: t, u: u, sim: sim, shown: shown, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		d.err = u.run(ctx)
		close(d.done)
	}()
	select {
	case <-u.pumpStarted:
	case <-d.done:
		t.Fatalf("the UI ended: %v", d.err)
	}
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(waitLimit):
			t.Error("the UI did not stop")
		}
	})
	d.sync()
	return d
}

// sync is the idle barrier: every worker's result has reached the pump,
// the pump has read the engine's latest snapshot, and the screen shows it.
func (d *driver) sync() {
	d.t.Helper()
	for {
		for d.u.nBusy.Load() != 0 {
			select {
			case <-d.u.idle:
			case <-d.done:
				return
			case <-time.After(waitLimit):
				d.t.Fatal("workers never finished")
			}
		}
		// With nothing in flight before the round, every result is already
		// queued ahead of it.
		idle := d.u.nBusy.Load() == 0
		started := d.u.nWork.Load()
		done := make(chan struct{})
		d.u.toPump(func() {
			d.u.refresh(d.u.pumpApply)
			d.u.afterFlush = append(d.u.afterFlush, func() { close(done) })
		})
		select {
		case <-done:
		case <-d.done:
			return // it quit: nothing more to wait for
		case <-time.After(waitLimit):
			d.t.Fatal("the UI never became idle")
		}
		if idle && d.u.nWork.Load() == started {
			return
		}
	}
}

// quitted waits for the UI to end by itself.
func (d *driver) quitted() {
	d.t.Helper()
	select {
	case <-d.done:
		if d.err != nil {
			d.t.Fatal(d.err)
		}
	case <-time.After(waitLimit):
		d.t.Fatal("the UI did not quit")
	}
}

// key presses one key and waits for its handler, then for idle.
func (d *driver) key(k tcell.Key, r rune, mod tcell.ModMask) {
	d.t.Helper()
	d.sim.InjectKey(k, r, mod)
	select {
	case <-d.u.keyDone:
	case <-d.done:
		return
	case <-time.After(waitLimit):
		d.t.Fatalf("key %v %q never handled", k, r)
	}
	d.sync()
}

// press types runes (and names: <Enter>, <Esc>, <Tab>, <Space>, <Down>,
// <Up>, <C-g>, <C-\> (the prefix key), <C-c>, <C-s>).
func (d *driver) press(keys ...string) {
	d.t.Helper()
	for _, k := range keys {
		switch k {
		case "<Enter>":
			d.key(tcell.KeyEnter, 0, 0)
		case "<Esc>":
			d.key(tcell.KeyEsc, 0, 0)
		case "<Tab>":
			d.key(tcell.KeyTab, 0, 0)
		case "<Space>":
			d.key(tcell.KeyRune, ' ', 0)
		case "<Down>":
			d.key(tcell.KeyDown, 0, 0)
		case "<Up>":
			d.key(tcell.KeyUp, 0, 0)
		case "<C-g>":
			d.key(tcell.KeyCtrlG, 0, tcell.ModCtrl)
		case "<C-\\>": // the default prefix key
			d.key(tcell.KeyCtrlBackslash, 0, tcell.ModCtrl)
		case "<C-c>":
			d.key(tcell.KeyCtrlC, 0, tcell.ModCtrl)
		case "<C-s>":
			d.key(tcell.KeyCtrlS, 0, tcell.ModCtrl)
		default:
			for _, r := range k {
				d.key(tcell.KeyRune, r, 0)
			}
		}
	}
}

// contents copies the screen under the simulation screen's own lock:
// GetContents hands out the live buffer, which a frame may be drawing.
func (d *driver) contents() ([]tcell.SimCell, int, int) {
	cells, w, h := d.sim.GetContents()
	l := d.sim.(sync.Locker)
	l.Lock()
	defer l.Unlock()
	return append([]tcell.SimCell(nil), cells...), w, h
}

// text is the screen as text, one line per row, trailing blanks cut.
func (d *driver) text() string {
	cells, w, h := d.contents()
	var b strings.Builder
	for y := 0; y < h; y++ {
		var row strings.Builder
		for x := 0; x < w; x++ {
			c := cells[y*w+x]
			if len(c.Runes) == 0 {
				row.WriteByte(' ')
				continue
			}
			row.WriteString(string(c.Runes))
		}
		b.WriteString(strings.TrimRight(row.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// waitShown waits until the screen shows substr, looking again after
// every frame.
func (d *driver) waitShown(substr string) {
	d.t.Helper()
	limit := time.After(waitLimit)
	for !strings.Contains(d.text(), substr) {
		select {
		case <-d.shown:
		case <-d.done:
			d.t.Fatalf("the UI stopped before showing %q", substr)
		case <-limit:
			d.t.Fatalf("screen never showed %q:\n%s", substr, d.text())
		}
	}
}

// waitGone waits until the screen no longer shows substr.
func (d *driver) waitGone(substr string) {
	d.t.Helper()
	limit := time.After(waitLimit)
	for strings.Contains(d.text(), substr) {
		select {
		case <-d.shown:
		case <-d.done:
			d.t.Fatalf("the UI stopped while showing %q", substr)
		case <-limit:
			d.t.Fatalf("screen still shows %q:\n%s", substr, d.text())
		}
	}
}

func (d *driver) expect(substr string) {
	d.t.Helper()
	if s := d.text(); !strings.Contains(s, substr) {
		d.t.Fatalf("screen lacks %q:\n%s", substr, s)
	}
}

func (d *driver) expectNot(substr string) {
	d.t.Helper()
	if s := d.text(); strings.Contains(s, substr) {
		d.t.Fatalf("screen still shows %q:\n%s", substr, s)
	}
}

// ui runs fn on the event goroutine (UI state belongs to it) and waits.
func (d *driver) ui(fn func()) {
	d.t.Helper()
	ran := make(chan struct{})
	go d.u.app.QueueUpdateDraw(func() { fn(); close(ran) })
	select {
	case <-ran:
	case <-d.done:
		d.t.Fatal("the UI stopped")
	case <-time.After(waitLimit):
		d.t.Fatal("the event goroutine never ran the update")
	}
}

// overlay is the name of the open overlay ("" for none).
func (d *driver) overlay() string {
	name := ""
	d.ui(func() {
		if d.u.over != nil {
			name = d.u.over.name
		}
	})
	return name
}

// golden compares the screen with testdata/name.golden.
func (d *driver) golden(name string) {
	d.t.Helper()
	got := d.text()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			d.t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			d.t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		d.t.Fatalf("%v (run with -update to create it)", err)
	}
	if got != string(want) {
		d.t.Errorf("screen differs from %s (run with -update after checking):\n--- got\n%s--- want\n%s", path, got, want)
	}
}

// fakeEngine serves fixed snapshots and records commands, for screen
// tests that must not depend on timing.
type fakeEngine struct {
	mu      sync.Mutex
	snap    orchestrator.Snapshot
	screens map[string]*term.Emulator
	inputs  map[string]*bytes.Buffer
	cmds    []orchestrator.Command
	resized map[string][2]int
	changed chan struct{}
	events  chan orchestrator.Event
	cps     []merge.Checkpoint
	deps    []string
	diff    orchestrator.TaskDiff
	doErr   error
	onDo    func(c orchestrator.Command)
	blockDo chan struct{} // when set, Do waits for it (a slow command)
}

func newFakeEngine(snap orchestrator.Snapshot) *fakeEngine {
	return &fakeEngine{snap: snap, screens: map[string]*term.Emulator{}, inputs: map[string]*bytes.Buffer{},
		resized: map[string][2]int{}, changed: make(chan struct{}, 1), events: make(chan orchestrator.Event, 64)}
}

func (f *fakeEngine) Changed() <-chan struct{} { return f.changed }
func (f *fakeEngine) Snapshot() orchestrator.Snapshot {
	f.mu.Lock()
	defer f.mu.Unlock()
	// As the engine's: the UI's copy shares no map with what a test
	// changes next under f.mu.
	s := f.snap
	s.Agents = maps.Clone(f.snap.Agents)
	s.Tasks = maps.Clone(f.snap.Tasks)
	return s
}
func (f *fakeEngine) Subscribe() <-chan orchestrator.Event { return f.events }
func (f *fakeEngine) Do(ctx context.Context, c orchestrator.Command) error {
	if f.blockDo != nil {
		select {
		case <-f.blockDo:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	f.cmds = append(f.cmds, c)
	if f.onDo != nil {
		f.onDo(c)
	}
	err := f.doErr
	f.mu.Unlock()
	f.notify()
	return err
}
func (f *fakeEngine) notify() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}
func (f *fakeEngine) Screen(id string) *term.Emulator {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.screens[id]
}
func (f *fakeEngine) Input(id string) io.Writer {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.inputs[id]
	if b == nil {
		b = &bytes.Buffer{}
		f.inputs[id] = b
	}
	return lockedWriter{&f.mu, b}
}
func (f *fakeEngine) Resize(id string, cols, rows int) {
	f.mu.Lock()
	f.resized[id] = [2]int{cols, rows}
	f.mu.Unlock()
}
func (f *fakeEngine) Checkpoints(context.Context) ([]merge.Checkpoint, error) { return f.cps, nil }
func (f *fakeEngine) Dependents(context.Context, string) ([]string, error)    { return f.deps, nil }
func (f *fakeEngine) TaskDiff(_ context.Context, id string, stat bool) (orchestrator.TaskDiff, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	d := f.diff
	d.TaskID = id
	if stat {
		d.Text = "stat of " + id
	}
	return d, nil
}

func (f *fakeEngine) commands() []orchestrator.Command {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]orchestrator.Command(nil), f.cmds...)
}

func (f *fakeEngine) input(id string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if b := f.inputs[id]; b != nil {
		return b.String()
	}
	return ""
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// fakeStore lists fixed tasks and creates new ones in memory; the other
// Store methods are never called by the UI.
type fakeStore struct {
	beads.Store
	mu    sync.Mutex
	tasks []beads.Task
}

func (s *fakeStore) List(context.Context) ([]beads.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]beads.Task(nil), s.tasks...), nil
}

func (s *fakeStore) Create(_ context.Context, title string, o beads.CreateOptions) (beads.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := beads.Task{ID: "t-new", Title: title, Status: beads.StatusOpen, Priority: o.Priority, Description: o.Description, AcceptanceCriteria: o.Acceptance}
	s.tasks = append(s.tasks, t)
	return t, nil
}

func (s *fakeStore) Get(_ context.Context, id string) (beads.Task, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, t := range s.tasks {
		if t.ID == id {
			return t, nil
		}
	}
	return beads.Task{}, beads.ErrNotFound
}
