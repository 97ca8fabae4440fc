package ui

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
)

// The painter's frames (the first one clears the terminal and leaves
// blank cells out, then everything goes out in one write) show on a real
// terminal what tcell alone draws: the same UI runs in two tmux panes, one
// as chorus runs it (the painter on /dev/tty) and one drawn only by tcell's
// Show, and the panes' cells, colours and attributes end up equal.
func TestPaintedFramesEqualTcells(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the UI in tmux")
	}
	x := newTmux(t, "chorus-frame")
	t.Cleanup(func() { exec.Command(x.bin, "-L", x.sock, "kill-server").Run() })
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	run := func(mode string) string {
		return "env TERM=xterm-256color LANG=C.UTF-8 NO_COLOR= CHORUS_FRAME_HELPER=" + mode + " " + exe +
			" -test.run=^TestFrameHelper$ -test.timeout=5m; sleep 600"
	}
	x.cmd("new-session", "-d", "-x", "160", "-y", "45", "-s", "painted", run("painted"))
	x.cmd("new-session", "-d", "-x", "160", "-y", "45", "-s", "tcell", run("tcell"))
	want := []string{"wide 界 end", "Signal Parser", "tests passed"}
	for _, s := range []string{"painted", "tcell"} {
		if out, ok := x.shows(s, want); !ok {
			t.Fatalf("pane %s never showed %q:\n%s", s, want, out)
		}
	}
	// Both show everything; their last writes may still be on the way
	// into tmux.
	deadline := time.Now().Add(waitLimit)
	for {
		a, b := x.cmd("capture-pane", "-e", "-p", "-t", "painted"), x.cmd("capture-pane", "-e", "-p", "-t", "tcell")
		if a == b {
			return
		}
		if time.Now().After(deadline) {
			al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
			for i := range min(len(al), len(bl)) {
				if al[i] != bl[i] {
					t.Errorf("row %d:\npainted %q\ntcell   %q", i, al[i], bl[i])
				}
			}
			t.Fatalf("the painted screen differs from tcell's (%d and %d rows)", len(al), len(bl))
		}
		x.cmd("wait-for", "-S", "nothing") // a round trip to the tmux server, not a sleep
	}
}

// shows polls the session's pane until it shows every one of want; it
// returns the pane's last text and whether it did within waitLimit.
func (x *tmuxServer) shows(session string, want []string) (string, bool) {
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p", "-t", session)
		all := true
		for _, w := range want {
			all = all && strings.Contains(out, w)
		}
		if all || time.Now().After(deadline) {
			return out, all
		}
		x.cmd("wait-for", "-S", "nothing")
	}
}

// TestFrameHelper is the UI run in a pane by TestPaintedFramesEqualTcells:
// the fixture with agents' screens in colours, reverse, wide characters
// and coloured blanks.
func TestFrameHelper(t *testing.T) {
	mode := os.Getenv("CHORUS_FRAME_HELPER")
	if mode == "" {
		t.Skip("run by TestPaintedFramesEqualTcells")
	}
	f, _, o := fixture()
	f.screens["claude-ch-2n6"].Write([]byte("\x1b[41m  red blanks  \x1b[m plain \x1b[7mreverse\x1b[m\r\n" +
		"\x1b[1;4munder bold\x1b[m \x1b[38;2;10;200;30mrgb\x1b[m \x1b[44m\x1b[K\x1b[m\r\nwide 界 end\r\n"))
	switch mode {
	case "tcell":
		s, err := tcell.NewScreen()
		if err != nil {
			t.Fatal(err)
		}
		o.Screen = s // no terminfo: no painter
	case "painted":
	default:
		t.Fatalf("CHORUS_FRAME_HELPER=%q", mode)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	if err := Run(ctx, o); err != nil {
		t.Fatal(err)
	}
}
