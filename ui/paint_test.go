package ui

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
)

// ttyRec is a terminal for a real tcell screen that keeps what is written
// and pokes wrote after each write.
type ttyRec struct {
	w, h  int
	mu    sync.Mutex
	out   []byte
	wrote chan struct{}
	drain chan struct{}
}

func (t *ttyRec) Start() error        { t.drain = make(chan struct{}); return nil }
func (t *ttyRec) Stop() error         { return nil }
func (t *ttyRec) Drain() error        { close(t.drain); return nil }
func (t *ttyRec) NotifyResize(func()) {}
func (t *ttyRec) Close() error        { return nil }
func (t *ttyRec) Read([]byte) (int, error) {
	<-t.drain
	return 0, os.ErrClosed
}
func (t *ttyRec) WindowSize() (tcell.WindowSize, error) {
	return tcell.WindowSize{Width: t.w, Height: t.h}, nil
}
func (t *ttyRec) Write(p []byte) (int, error) {
	t.mu.Lock()
	t.out = append(t.out, p...)
	t.mu.Unlock()
	select {
	case t.wrote <- struct{}{}:
	default:
	}
	return len(p), nil
}

func (t *ttyRec) take() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.out
	t.out = nil
	return b
}

// On a real terminal busy tiles are drawn by the tile painter: what an
// agent writes reaches the terminal (read back by a model terminal), frame
// after frame, without a full redraw.
func TestTilesPaintedOnTerminal(t *testing.T) {
	t.Setenv("LANG", "C.UTF-8")
	t.Setenv("LC_ALL", "")
	t.Setenv("LC_CTYPE", "")
	t.Setenv("NO_COLOR", "")
	ti, err := tcell.LookupTerminfo("xterm-256color")
	if err != nil {
		t.Fatal(err)
	}
	tty := &ttyRec{w: 150, h: 40, wrote: make(chan struct{}, 1)}
	screen, err := tcell.NewTerminfoScreenFromTtyTerminfo(tty, ti)
	if err != nil {
		t.Fatal(err)
	}
	f, _, o := fixture()
	o.Screen, o.Terminfo = screen, ti
	// A clock that stands still: nothing but the agent's output changes
	// the screen, so the frames below are tile frames, not full draws.
	c := newFakeClock(t0)
	o.Now = c.Now
	u, err := newUI(o)
	if err != nil {
		t.Fatal(err)
	}
	u.clk = c
	u.pumpStarted = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	d := &driver{t: t, u: u, done: make(chan struct{})}
	go func() {
		d.err = u.run(ctx)
		close(d.done)
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-d.done:
		case <-time.After(waitLimit):
			t.Error("the UI did not stop")
		}
	})
	select {
	case <-u.pumpStarted:
	case <-d.done:
		t.Fatalf("the UI ended: %v", d.err)
	}
	model := term.New(150, 40, term.WithScrollback(0))
	shows := func(s string) {
		t.Helper()
		limit := time.After(waitLimit)
		for {
			model.Write(tty.take())
			if strings.Contains(model.Text(), s) {
				return
			}
			select {
			case <-tty.wrote:
			case <-limit:
				t.Fatalf("the terminal never showed %q:\n%s", s, model.Text())
			}
		}
	}
	shows("Reading config...")
	d.settle(c)
	model.Write(tty.take())
	// From here on only frames of tiles draw: each turn of the pump, with
	// the frame timer let through.
	framed := func(s string) {
		t.Helper()
		d.until("the terminal shows "+s, func() bool {
			model.Write(tty.take())
			return strings.Contains(model.Text(), s)
		}, func() {
			d.pumpTurns()
			if frameDue(c, u.o.FrameInterval) {
				c.Advance(u.o.FrameInterval)
			}
		})
	}
	// The agent writes twice, a frame each; the second changes part of
	// a line the first wrote.
	emu := f.Screen("claude-ch-2n6")
	emu.Write([]byte("\r\nhello from the agent"))
	framed("hello from the agent")
	emu.Write([]byte("\rHELLO"))
	framed("HELLO from the agent")
	if u.painter == nil {
		t.Fatal("no painter on an xterm-256color UTF-8 terminal")
	}
}
