package ui

import (
	"context"
	"runtime/debug"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/beads"
)

// gcPercent reads GOGC as the runtime has it.
func gcPercent() int {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	return p
}

// The collector comes back once every UI that held it off resumed it, at
// the setting it had, and a resume called twice counts once.
func TestPauseGCRestores(t *testing.T) {
	gcHold.Lock()
	busy := gcHold.n != 0 // another test's UI holds it
	gcHold.Unlock()
	if busy {
		t.Skip("another UI of this process holds the collector")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	a := pauseGC()
	b := pauseGC()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d while paused, want -1 (off)", p)
	}
	a()
	a()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d with one UI still holding it, want -1", p)
	}
	b()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GOGC %d after both resumed, want 150 as before", p)
	}
}

// FirstFrame runs once, after the first frame is on the screen, however
// many frames follow.
func TestFirstFrameRunsOnce(t *testing.T) {
	_, _, o := fixture()
	var calls atomic.Int32
	o.FirstFrame = func() { calls.Add(1) }
	d := startUI(t, o, 150, 40)
	d.press("<Tab>")
	d.sync()
	if n := calls.Load(); n != 1 {
		t.Fatalf("FirstFrame ran %d times, want once", n)
	}
}

// gatedStore lists its tasks once gate is closed.
type gatedStore struct {
	*fakeStore
	gate chan struct{}
}

func (s gatedStore) List(ctx context.Context) ([]beads.Task, error) {
	<-s.gate
	return s.fakeStore.List(ctx)
}

// firstShowScreen says when it is initialised (the terminal open) and
// what its first frame showed.
type firstShowScreen struct {
	tcell.SimulationScreen
	opened chan struct{}
	first  chan string
	shows  int
}

func (s *firstShowScreen) Init() error {
	err := s.SimulationScreen.Init()
	close(s.opened)
	return err
}

func (s *firstShowScreen) Show() {
	s.SimulationScreen.Show()
	if s.shows++; s.shows == 1 {
		s.first <- (&driver{sim: s.SimulationScreen}).text()
	}
}

// A task list read while the terminal opens is on the first frame, not
// on a second frame of the whole screen right after it: here the store
// answers only once the terminal is open.
func TestFirstFrameWaitsForTheTaskList(t *testing.T) {
	_, st, o := fixture()
	sim := &firstShowScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), opened: make(chan struct{}), first: make(chan string, 1)}
	o.Store = gatedStore{st, sim.opened}
	o.Screen = sim
	u, err := newUI(o)
	if err != nil {
		t.Fatal(err)
	}
	u.tasksWait = waitLimit
	u.onScreen = func(tcell.Screen) { sim.SetSize(150, 40) }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- u.run(ctx) }()
	defer func() { cancel(); <-done }()
	select {
	case text := <-sim.first:
		if !strings.Contains(text, "Agent-Task Link") {
			t.Fatalf("the first frame shows no task list:\n%s", text)
		}
	case <-time.After(waitLimit):
		t.Fatal("no frame was shown")
	}
}

// The collector is held off from the terminal's opening, ahead of the UI
// (chorus attach copies the agents' screens meanwhile), and comes back
// when it is closed unused.
func TestTerminalHoldsTheCollector(t *testing.T) {
	gcHold.Lock()
	busy := gcHold.n != 0
	gcHold.Unlock()
	if busy {
		t.Skip("another UI of this process holds the collector")
	}
	defer debug.SetGCPercent(debug.SetGCPercent(150))
	term := OpenTerminal()
	if p := gcPercent(); p != -1 {
		t.Fatalf("GOGC %d with the terminal opening, want -1 (off)", p)
	}
	term.Close()
	if p := gcPercent(); p != 150 {
		t.Fatalf("GOGC %d after Close, want 150 as before", p)
	}
}
