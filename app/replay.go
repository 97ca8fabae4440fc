package app

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/ui/tile"
)

// replayStep is how many bytes → and ← move, and how many are played per
// frame: agent transcripts carry no timing, so playback goes at a fixed
// pace that a person can follow.
const replayStep = 512

func newReplayCmd() *cobra.Command {
	var size string
	var at int64
	var print bool
	cmd := &cobra.Command{
		Use:   "replay LOG",
		Short: "Play back an agent's terminal transcript (.chorus/logs/…)",
		Long: `Replay plays back the raw terminal output an agent produced, as it
appeared in its tile. Space pauses, → and ← step, q quits.

With --print it prints the screen's text after the first --at bytes (all of
them by default) and exits.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			w, h, err := parseSize(size)
			if err != nil {
				return withCode(ExitUsage, err)
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return withCode(ExitFailure, err)
			}
			if at < 0 || at > int64(len(data)) {
				at = int64(len(data))
			}
			if print {
				if w == 0 {
					w, h = 80, 24
				}
				text, err := term.Replay(strings.NewReader(string(data)), w, h, at)
				if err != nil {
					return withCode(ExitFailure, err)
				}
				fmt.Fprintln(cmd.OutOrStdout(), text)
				return nil
			}
			return runReplay(cmd.Context(), args[0], data, w, h, int(at))
		},
	}
	f := cmd.Flags()
	f.StringVar(&size, "size", "", "terminal size WxH the log was written at (default: 80x24 with --print, else the window)")
	f.Int64Var(&at, "at", -1, "stop after this many bytes (default: all)")
	f.BoolVar(&print, "print", false, "print the screen text and exit")
	return cmd
}

func parseSize(s string) (w, h int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	ws, hs, ok := strings.Cut(strings.ToLower(s), "x")
	w, err1 := strconv.Atoi(ws)
	h, err2 := strconv.Atoi(hs)
	if !ok || err1 != nil || err2 != nil || w < 1 || h < 1 || w > 1000 || h > 1000 {
		return 0, 0, fmt.Errorf("--size %q: want WxH, e.g. 120x40", s)
	}
	return w, h, nil
}

// player is the replay position. Its fields are shared by the playback
// goroutine and the key handler.
type player struct {
	mu     sync.Mutex
	emu    *term.Emulator
	data   []byte
	pos    int
	paused bool
	wake   chan struct{} // a key changed what plays; see the playback loop
}

// seek moves to byte n, replaying from the start when going back.
func (p *player) seek(n int) {
	n = max(0, min(n, len(p.data)))
	if n < p.pos {
		p.emu.Reset()
		p.pos = 0
	}
	_, _ = p.emu.Write(p.data[p.pos:n])
	p.pos = n
}

func (p *player) status(name string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	state := "playing"
	if p.paused || p.pos == len(p.data) {
		state = "paused"
	}
	return fmt.Sprintf("%s  %d/%d B  %s  (space: pause, ←/→: step, q: quit)", name, p.pos, len(p.data), state)
}

func runReplay(ctx context.Context, name string, data []byte, w, h, stopAt int) error {
	fixed := w > 0
	if !fixed {
		w, h = 80, 24
	}
	p := &player{emu: term.New(w, h), data: data[:stopAt], wake: make(chan struct{}, 1)}
	tl := tile.New(p.emu, nil).SetFixedSize(fixed)
	if !fixed {
		// Without a recorded size, follow the window, replaying what is
		// shown so far at the new size.
		tl.SetResizeFunc(func(int, int) {
			p.mu.Lock()
			pos := p.pos
			p.seek(0)
			p.seek(pos)
			p.mu.Unlock()
		})
	}
	app := tview.NewApplication().SetRoot(tl, true).SetFocus(tl)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	app.SetBeforeDrawFunc(func(tcell.Screen) bool {
		tl.SetLabel(p.status(name))
		return false
	})
	app.SetInputCapture(func(ev *tcell.EventKey) *tcell.EventKey {
		p.mu.Lock()
		defer p.mu.Unlock()
		switch {
		case ev.Key() == tcell.KeyRune && ev.Rune() == ' ':
			p.paused = !p.paused
		case ev.Key() == tcell.KeyRight:
			p.paused = true
			p.seek(p.pos + replayStep)
		case ev.Key() == tcell.KeyLeft:
			p.paused = true
			p.seek(p.pos - replayStep)
		case ev.Key() == tcell.KeyRune && ev.Rune() == 'q', ev.Key() == tcell.KeyEscape, ev.Key() == tcell.KeyCtrlC:
			cancel()
		default:
			return ev // PgUp/PgDn and the wheel reach the tile's scrollback view
		}
		p.emu.MarkDirty()
		select {
		case p.wake <- struct{}{}:
		default:
		}
		return nil
	})
	wg.Add(2)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(tile.DefaultFrameInterval)
		defer tick.Stop()
		for {
			p.mu.Lock()
			still := p.paused || p.pos == len(p.data)
			p.mu.Unlock()
			if still {
				// Nothing to play: sleep until a key changes that.
				select {
				case <-ctx.Done():
					return
				case <-p.wake:
				}
				continue
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			p.mu.Lock()
			if !p.paused {
				p.seek(p.pos + replayStep)
			}
			p.mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		tile.RunFrames(ctx, app, 0, []*tile.Tile{tl})
	}()
	go func() {
		// q or an interrupt: the pumps may be waiting for the event loop
		// to draw, so stop the app only once they are gone.
		<-ctx.Done()
		wg.Wait()
		app.Stop()
	}()
	err := app.Run()
	cancel()
	wg.Wait()
	return err
}
