package ui

import (
	"errors"
	"os"
	"sync"

	"github.com/gdamore/tcell/v2"
	"github.com/gdamore/tcell/v2/terminfo"
)

// Terminal is the user's terminal opened ahead of the UI (OpenTerminal):
// tcell's setup (the tty in raw mode, the alternate screen, its reader)
// took a few milliseconds an attach spent after dialing the engine; a
// caller starts it first and hands it to RunAttached in Options.Terminal.
type Terminal struct {
	done   chan struct{}
	screen tcell.Screen
	ti     *terminfo.Terminfo
	held   *heldTTY // nil: tcell opened the terminal itself
	err    error
	// resumeGC ends the hold on the collector taken with the terminal
	// (pauseGC): the UI's first frame or Close ends it.
	resumeGC func()

	mu     sync.Mutex
	taken  bool // a UI runs on it and ends it
	closed bool
}

// OpenTerminal starts opening and initialising the terminal; it returns
// at once. Close it unless a UI ran on it.
func OpenTerminal() *Terminal {
	// The collector is held off from here, not only from the UI's start:
	// dialing the engine and copying the agents' screens crossed the
	// runtime's first heap goal, and the collection then still running
	// when the UI paused it made the UI wait for its marking (8 to 20 ms
	// of a loaded machine's attach; GODEBUG=gctrace=1).
	t := &Terminal{done: make(chan struct{}), resumeGC: pauseGC()}
	go func() {
		defer close(t.done)
		s, ti, held, err := openHeldTerminal()
		if err == nil {
			err = s.Init()
		}
		t.screen, t.ti, t.held, t.err = s, ti, held, err
	}()
	return t
}

// take waits for the terminal and gives it to a UI, which ends it.
func (t *Terminal) take() (tcell.Screen, *terminfo.Terminfo, error) {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err == nil && !t.closed {
		t.taken = true
	}
	switch {
	case t.err != nil:
		return nil, nil, t.err
	case t.closed:
		return nil, nil, errTerminalClosed
	}
	if t.held != nil {
		if err := t.held.release(); err != nil {
			return nil, nil, err
		}
	}
	return t.screen, t.ti, nil
}

// Close gives the terminal back as it was, unless a UI took it (the UI
// does that when it ends): nothing tcell wrote reaches it, so an attach
// that goes no further prints its error without a flash of the
// alternate screen. Safe to call more than once.
func (t *Terminal) Close() {
	t.resumeGC()
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taken || t.closed || t.err != nil {
		return
	}
	t.closed = true
	t.screen.Fini()
}

// openHeldTerminal is openTerminal on /dev/tty through a heldTTY.
func openHeldTerminal() (tcell.Screen, *terminfo.Terminfo, *heldTTY, error) {
	ti, err := tcell.LookupTerminfo(os.Getenv("TERM"))
	if err != nil {
		s, err := tcell.NewScreen()
		return s, nil, nil, err
	}
	tty, err := tcell.NewDevTty()
	if err != nil {
		return nil, nil, nil, err
	}
	held := &heldTTY{Tty: tty, hold: true}
	s, err := tcell.NewTerminfoScreenFromTtyTerminfo(held, ti)
	return s, ti, held, err
}

// heldTTY keeps what tcell writes while the terminal is set up ahead of
// the UI (entering the alternate screen, hiding the cursor) until a UI
// takes it; given back unshown, it is never written.
type heldTTY struct {
	tcell.Tty
	mu   sync.Mutex
	hold bool
	buf  []byte
}

func (t *heldTTY) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.hold {
		t.buf = append(t.buf, p...)
		return len(p), nil
	}
	return t.Tty.Write(p)
}

// release writes what was held and lets later writes through.
func (t *heldTTY) release() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.hold {
		return nil
	}
	t.hold = false
	b := t.buf
	t.buf = nil
	_, err := t.Tty.Write(b)
	return err
}

var errTerminalClosed = errors.New("the terminal was closed before the interface started")

// startedScreen is a screen initialised before tview got it: tview's
// SetScreen initialises what it is given.
type startedScreen struct{ tcell.Screen }

func (startedScreen) Init() error { return nil }
