package ui

import (
	"errors"
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
	err    error

	mu     sync.Mutex
	taken  bool // a UI runs on it and ends it
	closed bool
}

// OpenTerminal starts opening and initialising the terminal; it returns
// at once. Close it unless a UI ran on it.
func OpenTerminal() *Terminal {
	t := &Terminal{done: make(chan struct{})}
	go func() {
		defer close(t.done)
		s, ti, err := openTerminal()
		if err == nil {
			err = s.Init()
		}
		t.screen, t.ti, t.err = s, ti, err
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
	return t.screen, t.ti, nil
}

// Close gives the terminal back as it was, unless a UI took it (the UI
// does that when it ends). Safe to call more than once.
func (t *Terminal) Close() {
	<-t.done
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.taken || t.closed || t.err != nil {
		return
	}
	t.closed = true
	t.screen.Fini()
}

var errTerminalClosed = errors.New("the terminal was closed before the interface started")

// startedScreen is a screen initialised before tview got it: tview's
// SetScreen initialises what it is given.
type startedScreen struct{ tcell.Screen }

func (startedScreen) Init() error { return nil }
