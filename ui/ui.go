// Package ui is Chorus's full-screen interface: a header, the task panel,
// a grid of live agent terminals and a footer, with overlays for help,
// interventions, the merge queue, logs, learnings, rollback and task
// forms. It draws engine snapshots and sends engine commands; it never
// runs processes or git itself. tview and tcell are used here and nowhere
// else.
//
// Threads. tview primitives belong to the event goroutine. One pump
// goroutine reads the engine (Changed, Subscribe, Snapshot, Screen,
// Resize), the terminals' dirty notices and the results of worker
// goroutines, and is the only caller of QueueUpdateDraw; it sleeps while
// none of them has anything. Key handlers never block: engine
// commands and store calls run on workers whose results reach the pump
// through a queue that never blocks the sender. Shutdown stops the pump
// before app.Stop, because a QueueUpdateDraw after Stop never returns.
package ui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
	"github.com/chorus-dev/chorus/ui/tile"
)

// Engine is what the UI needs from the orchestrator; *orchestrator.Engine
// implements it in the same process, *remote.Client for an engine in
// another one. Every method may block on the engine loop, so the UI
// calls them only from its pump or worker goroutines.
type Engine interface {
	Changed() <-chan struct{}
	Snapshot() orchestrator.Snapshot
	Subscribe() <-chan orchestrator.Event
	Do(ctx context.Context, c orchestrator.Command) error
	Screen(agentID string) *term.Emulator
	Input(agentID string) io.Writer
	Resize(agentID string, cols, rows int)
	Checkpoints(ctx context.Context) ([]merge.Checkpoint, error)
	Dependents(ctx context.Context, taskID string) ([]string, error)
	TaskDiff(ctx context.Context, taskID string, stat bool) (orchestrator.TaskDiff, error)
}

// Options configure Run.
type Options struct {
	Engine  Engine
	Store   beads.Store
	Config  config.Config
	Version string
	// Dir locates the session log and learnings shown by `l` and `L`.
	Dir chorusdir.Dir
	// FirstFrame, if set, runs once the first frame is on the screen.
	FirstFrame func()
	// Notice, if set, is the flash the interface opens with (an attached
	// TUI back on an engine that replaced a dead one says so).
	Notice string
	// Screen replaces the terminal (tests use a tcell simulation screen).
	Screen tcell.Screen
	// Terminal is the terminal opened ahead (OpenTerminal), used when
	// Screen is nil.
	Terminal *Terminal
	// Terminfo is the description tcell drives Screen with; with it, busy
	// tiles are painted by a tile.Painter (tests of that path set both).
	Terminfo *terminfo.Terminfo
	// NoColor draws with attributes only; NO_COLOR in the environment
	// sets it too.
	NoColor bool
	// Now is the clock for elapsed times (tests pin it).
	Now func() time.Time
	// FrameInterval bounds how often busy tiles redraw (default ~30 Hz).
	FrameInterval time.Duration
	// QuitGrace is how long "wait for agents" waits before forcing them
	// to stop (default 30 s).
	QuitGrace time.Duration
	// Planner, when set, opens the planning screen: the Plan Agent's
	// tile, the tasks it creates and the chat line, then the review and
	// mode dialogs; the implementation view follows once a mode is chosen.
	Planner Planner
}

// panel is which side of the body has the keyboard.
type panel int

const (
	panelTasks panel = iota
	panelAgents
)

// UI is one running interface. Fields marked (ui) belong to the tview
// event goroutine, (pump) to the pump goroutine.
type UI struct {
	o       Options
	eng     Engine
	app     *tview.Application
	screen  tcell.Screen
	painter *tile.Painter // nil: tiles draw through screen
	theme   theme
	keys    *keymap
	prefix  keySpec

	ctx    context.Context // cancelled when the UI ends; workers use it
	cancel context.CancelFunc

	quitOnce sync.Once
	quitCh   chan struct{}

	// The rest is grouped by the goroutine that owns it.
	inboxState // any goroutine → the pump
	frameState // terminals → the pump
	pumpState  // the pump goroutine only
	viewState  // the event goroutine only
	testHooks  // tests and the latency benchmark
}

// inboxState is the pump's inbox: appended by any goroutine, never
// blocking the sender, and the count of workers still running.
type inboxState struct {
	inMu   sync.Mutex
	inbox  []func()
	inWake chan struct{}
	nBusy  atomic.Int64  // workers whose result has not reached the inbox
	idle   chan struct{} // poked when nBusy drops to zero
	nWork  atomic.Int64  // workers ever started (the test barrier's clock)
}

// frameState: terminals wake the pump through wakeFrame.
type frameState struct {
	frameWake  chan struct{}
	frameArmed atomic.Bool  // a wake was sent since the pump last took the dirty flags
	turns      atomic.Int64 // pump turns, for tests that check an idle UI sleeps
	clk        clock
}

// pumpState belongs to the pump goroutine.
type pumpState struct {
	tiles       map[string]*tile.Tile
	finished    []finishedTile // agents gone from the engine, newest first (pump)
	tasks       []beads.Task
	loading     bool
	reloadMore  bool
	taskGen     uint64 // the snapshot's TaskGen the tasks were last loaded for
	snap        orchestrator.Snapshot
	labels      map[string]string
	waitQuit    <-chan time.Time // set while "wait for agents" runs
	clock       timer            // fires when a shown time changes
	clockC      <-chan time.Time // clock's channel while armed, else nil
	logRing     []string
	pumpPending []func()
	lastRuntime time.Duration
	wasIdle     bool // the last snapshot's Idle
}

// viewState belongs to the event goroutine (tview's): the widgets and
// what is selected, open and typed.
type viewState struct {
	vm          viewModel
	pages       *tview.Pages
	header      *lineView
	footer      *lineView
	taskList    *taskList
	grid        *gridView
	body        *tview.Flex
	focus       panel
	selTask     string
	selAgent    string
	gridSpec    string
	full        bool
	passthrough string
	flash       present.Seg
	flashNeeds  string // the task the NEEDS HELP/HUMAN message is about
	over        *overlay
	undo        []undoEntry
	undoEnded   string            // the action that ended the undo history, for `u`'s message
	undoGen     int               // counts endUndo: an undoable action sent before one is not pushed
	logView     func(line string) // feeds the open log overlay
	quitting    bool
	main        *tview.Flex
	chat        *tview.InputField // the "> " chat line
	chatOn      bool              // the chat line has the keyboard
	plan        PlanView          // the last planning stage shown
	attached    bool              // the engine runs in another process (RunAttached)
	prefixFrom  string            // the prefix key just ended typing into this agent
	prefixTo    string            // the prefix key just started typing into this agent
	copying     string            // the agent whose tile is in copy mode
	outcome     Outcome           // attached: detach or stop, once quitting
}

// testHooks: onScreen runs right after SetScreen (a simulation screen is
// sized there, as SetScreen resets it); keyDone hears about every key once
// its handler ran; afterFlush (pump) runs once the next QueueUpdateDraw has
// drawn. keySeq and afterFn let the latency benchmark see when a key's
// effect reached the screen.
type testHooks struct {
	keySeq      atomic.Int64
	afterFn     func()
	onScreen    func(tcell.Screen)
	tasksWait   time.Duration // firstTasksWait; tests wait longer
	pumpStarted chan struct{} // closed once the pump's first load is under way
	keyDone     chan struct{}
	afterFlush  []func()
}

// viewModel is what the pump hands the event goroutine: immutable once
// built.
type viewModel struct {
	snap    orchestrator.Snapshot
	tasks   []beads.Task
	rows    []present.TaskRow
	counts  present.Counts
	agents  []string
	tiles   map[string]*tile.Tile
	labels  map[string]string
	done    map[string]bool // agents whose tile shows their last screen
	now     time.Time
	runtime time.Duration
	loaded  bool
}

// Run shows the interface until the user quits or ctx ends. The terminal
// is restored on return and on a panic.
func Run(ctx context.Context, o Options) error {
	u, err := newUI(o)
	if err != nil {
		return err
	}
	return u.run(ctx)
}

func newUI(o Options) (*UI, error) {
	if o.Engine == nil || o.Store == nil {
		return nil, errors.New("ui: an engine and a task store are needed")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.FrameInterval <= 0 {
		o.FrameInterval = tile.DefaultFrameInterval
	}
	if o.QuitGrace <= 0 {
		o.QuitGrace = 30 * time.Second
	}
	if os.Getenv("NO_COLOR") != "" {
		o.NoColor = true
	}
	prefix, err := parseKey(o.Config.TUI.PrefixKey)
	if err != nil {
		return nil, fmt.Errorf("tui.prefixKey: %w", err)
	}
	u := &UI{o: o, eng: o.Engine, app: tview.NewApplication(), prefix: prefix, quitCh: make(chan struct{}),
		inboxState: inboxState{inWake: make(chan struct{}, 1), idle: make(chan struct{}, 1)},
		frameState: frameState{frameWake: make(chan struct{}, 1), clk: realClock{}},
		pumpState:  pumpState{tiles: map[string]*tile.Tile{}, labels: map[string]string{}},
		viewState:  viewState{gridSpec: o.Config.TUI.AgentGrid, focus: panelTasks}}
	if u.gridSpec == "" {
		u.gridSpec = "auto"
	}
	u.tasksWait = firstTasksWait
	u.theme = newTheme(o.NoColor)
	u.keys = newKeymap()
	if u.keys.has(prefix) {
		return nil, fmt.Errorf("tui.prefixKey %s is already a Chorus key", o.Config.TUI.PrefixKey)
	}
	u.ctx, u.cancel = context.WithCancel(context.Background())
	u.build()
	return u, nil
}

// run owns the shutdown order: pump first, then app.Stop, then return so
// the caller can stop the engine.
func (u *UI) run(ctx context.Context) error {
	defer u.cancel()
	// No collection until the first frame is on screen (gcpause.go).
	resumeGC := pauseGC()
	defer resumeGC()
	// Setting up the terminal takes tens of milliseconds (tcell's Init);
	// meanwhile the engine's state is read and the first view built, so
	// the first frame drawn already shows the agents' screens.
	opened := make(chan openedScreen, 1)
	go func() { opened <- u.openScreen() }()
	events := u.eng.Subscribe()
	u.clock = u.clk.NewTimer()
	var first []func()
	// The first refresh reads the engine's latest state: a change it
	// told of before covers nothing newer, and answering it would draw
	// the whole screen again right after the first frame.
	select {
	case <-u.eng.Changed():
	default:
	}
	// The task list is read meanwhile too: when it is in by the time the
	// terminal is open, the first frame shows it, and no second frame of
	// the whole screen follows a few milliseconds later.
	u.taskGen = u.eng.Snapshot().TaskGen
	u.loadTasks()
	u.refresh(func(fn func()) { first = append(first, fn) })
	o := <-opened
	u.awaitTasks(u.tasksWait)
	u.takeInbox()
	first = append(first, u.pumpPending...)
	u.pumpPending = nil
	if o.err != nil {
		u.clock.Stop()
		for _, t := range u.tiles {
			t.Emulator().OnDirty(nil)
		}
		return fmt.Errorf("opening the terminal: %w", o.err)
	}
	u.screen, u.painter = o.screen, o.painter
	if u.onScreen != nil {
		u.onScreen(o.screen)
	}
	// tview's event goroutine is this one and has not started: the first
	// view is installed here, before app.Run draws it.
	for _, fn := range first {
		fn()
	}
	u.app.EnableMouse(true).EnablePaste(true)
	u.app.SetInputCapture(u.capture)
	// Once the first frame is out: the collector back on, FirstFrame.
	shown := func() {
		resumeGC()
		if t := u.o.Terminal; t != nil {
			t.resumeGC()
		}
		if f := u.o.FirstFrame; f != nil {
			u.o.FirstFrame = nil
			f()
		}
	}
	if u.painter != nil {
		// After the painter's write, not before tview's Show (below).
		u.painter.OnShown(shown)
		shown = func() {}
	}
	u.app.SetAfterDrawFunc(func(tcell.Screen) {
		shown()
		if u.afterFn != nil {
			u.afterFn()
		}
	})

	pumpCtx, stopPump := context.WithCancel(ctx)
	pumpDone := make(chan struct{})
	u.goSafe(func() {
		defer close(pumpDone)
		u.pump(pumpCtx, events)
	})
	appDone := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		select {
		case <-ctx.Done():
		case <-u.quitCh:
		case <-appDone:
		}
		stopPump()
		<-pumpDone
		u.app.Stop()
	}()
	err := u.app.Run()
	close(appDone)
	<-stopped
	return err
}

// firstTasksWait bounds how long the first frame waits for the task list
// once the terminal is open: a list read after the first frame redrew
// the whole screen, every tile's cells again (17 KB for eight agents),
// a few milliseconds after it, and an attach then showed the agents
// only with that second frame. The built-in store's list takes about a
// millisecond; a slow store's comes with a later frame, as before.
const firstTasksWait = 10 * time.Millisecond

// awaitTasks waits up to max for the task load under way, taking the
// pump's inbox as results arrive. Before the pump starts only.
func (u *UI) awaitTasks(max time.Duration) {
	if !u.loading {
		return
	}
	t := time.NewTimer(max)
	defer t.Stop()
	for u.loading {
		select {
		case <-u.inWake:
			u.takeInbox()
		case <-t.C:
			return
		}
	}
}

// openedScreen is the terminal run draws on, once set up.
type openedScreen struct {
	screen  tcell.Screen
	painter *tile.Painter // nil: tiles draw through screen
	err     error
}

// openScreen opens and initialises the terminal (or Options.Screen) for
// the application, with a tile painter where one can speak for tcell. It
// touches no other state of u, so it runs beside the first refresh.
func (u *UI) openScreen() openedScreen {
	screen, ti := u.o.Screen, u.o.Terminfo
	started := false
	onTTY := screen == nil // opened by openTerminal: tcell's screen on /dev/tty
	switch {
	case screen != nil:
	case u.o.Terminal != nil:
		s, t, err := u.o.Terminal.take()
		if err != nil {
			return openedScreen{err: err}
		}
		screen, ti, started = s, t, true
	default:
		s, t, err := openTerminal()
		if err != nil {
			return openedScreen{err: err}
		}
		screen, ti = s, t
	}
	p := tile.NewPainter(screen, ti)
	if p != nil && onTTY {
		p.WriteToTTY()
	}
	switch {
	case p != nil && started:
		screen = p.StartedScreen()
	case p != nil:
		screen = p.Screen()
	case started:
		screen = startedScreen{screen}
	}
	u.app.SetScreen(screen)
	// After SetScreen, which initialised the screen and its terminal.
	if p != nil && !p.Start() {
		p = nil
	}
	return openedScreen{screen: screen, painter: p}
}

// openTerminal opens the terminal as tcell.NewScreen does, keeping the
// terminal description tcell drives it with for the tile painter.
func openTerminal() (tcell.Screen, *terminfo.Terminfo, error) {
	ti, err := tcell.LookupTerminfo(os.Getenv("TERM"))
	if err != nil {
		s, err := tcell.NewScreen()
		return s, nil, err
	}
	s, err := tcell.NewTerminfoScreenFromTtyTerminfo(nil, ti)
	return s, ti, err
}

// quit ends the UI; safe from any goroutine, never blocks.
func (u *UI) quit() { u.quitOnce.Do(func() { close(u.quitCh) }) }

// goSafe runs fn on a goroutine that restores the terminal before a panic
// takes the process down.
func (u *UI) goSafe(fn func()) {
	go func() {
		defer func() {
			if p := recover(); p != nil {
				if u.screen != nil {
					u.screen.Fini()
				}
				fmt.Fprintf(os.Stderr, "chorus: panic: %v\n%s", p, debug.Stack())
				panic(p)
			}
		}()
		fn()
	}()
}

// toPump queues fn for the pump goroutine. It never blocks, so key
// handlers and Draw may call it.
func (u *UI) toPump(fn func()) {
	u.inMu.Lock()
	u.inbox = append(u.inbox, fn)
	u.inMu.Unlock()
	select {
	case u.inWake <- struct{}{}:
	default:
	}
}

// work runs fn on a worker goroutine; the func it returns runs on the
// pump afterwards (nil for nothing).
func (u *UI) work(fn func(ctx context.Context) func()) {
	u.nBusy.Add(1)
	u.nWork.Add(1)
	u.goSafe(func() {
		defer func() {
			if u.nBusy.Add(-1) == 0 {
				select {
				case u.idle <- struct{}{}:
				default:
				}
			}
		}()
		if next := fn(u.ctx); next != nil {
			u.toPump(next)
		} else {
			u.toPump(func() {})
		}
	})
}
