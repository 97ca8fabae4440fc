package ui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdamore/tcell/v2"
)

// Copy mode, as tmux's: the prefix key then [ freezes the selected tile's
// view; the keys move, search and select without reaching the agent, and
// Enter puts the selection on the clipboard (OSC 52 through tcell).
func TestCopyModeScrollsSearchesCopies(t *testing.T) {
	f, _, o := fixture()
	emu := f.screens["claude-ch-ah6"]
	for i := 0; i < 100; i++ {
		fmt.Fprintf(emu, "line %d of the history\r\n", i)
	}
	d := startUI(t, o, 150, 40)
	d.press("<Tab>")
	d.ui(func() { d.u.selAgent = "claude-ch-ah6" })
	d.press("<C-\\>", "[")
	d.expect("[copy]")
	if d.u.passthrough != "" {
		t.Fatal("copy mode left the keys typing to the agent")
	}
	// Search back for an old line: the view follows the cursor there.
	d.press("?", "line 7 of", "<Enter>")
	d.expect("[copy]")
	d.expect("line 7 of the history")
	d.expectNot("line 99 of")
	// n finds the same text again around the history (it occurs once).
	d.press("n")
	d.expect("line 7 of the history")
	// Select two lines from the start of line 7 and copy them.
	d.press("0", "v", "j", "$")
	d.expect("[copy: selecting]")
	d.golden("copy_mode_selecting")
	if !reversedAt(d, "line 7 of the history") || !reversedAt(d, "line 8 of the history") || reversedAt(d, "line 9 of the history") {
		t.Fatal("the selection is not shown in reverse video on lines 7-8 only")
	}
	d.key(tcell.KeyEnter, 0, 0)
	if got, want := string(d.sim.GetClipboardData()), "line 7 of the history\nline 8 of the history"; got != want {
		t.Fatalf("clipboard %q, want %q", got, want)
	}
	d.expect("copied 43 characters to the clipboard")
	d.expectNot("[copy")
	d.expect("line 99 of") // back to the live view
	if got := f.input("claude-ch-ah6"); got != "" {
		t.Fatalf("copy mode keys reached the agent: %q", got)
	}

	// [ from the grid, g to the oldest row, a forward search that wraps
	// round to the end; a soft-wrapped line is copied as one line; q leaves.
	long := "start-" + strings.Repeat("x", 50) + "-end" // wider than the tile
	fmt.Fprintf(emu, "%s\r\n", long)
	d.waitShown("-end")
	d.press("[", "g")
	d.expect("line 0 of the history")
	d.press("/", "start-x", "<Enter>")
	d.press("v", "j", "$", "y")
	if got, want := string(d.sim.GetClipboardData()), long; got != want {
		t.Fatalf("clipboard %q, want the wrapped line whole", got)
	}
	d.press("[", "/", "no such text", "<Enter>")
	d.expect("not found: no such text")
	d.press("q")
	d.expectNot("[copy")
	if got := f.input("claude-ch-ah6"); got != "" {
		t.Fatalf("copy mode keys reached the agent: %q", got)
	}
}

// reversedAt reports whether the first cell of the screen text s is drawn
// in reverse video.
func reversedAt(d *driver, s string) bool {
	cells, w, _ := d.contents()
	for y, line := range strings.Split(d.text(), "\n") {
		if i := strings.Index(line, s); i >= 0 {
			x := len([]rune(line[:i]))
			_, _, attr := cells[y*w+x].Style.Decompose()
			return attr&tcell.AttrReverse != 0
		}
	}
	d.t.Fatalf("screen lacks %q", s)
	return false
}
