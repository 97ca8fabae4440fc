package tile

import (
	"fmt"
	"testing"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
)

// In copy mode the view stays on the same text while the child keeps
// writing, and k/j, g/G move the cursor over the history.
func TestCopyModeViewHoldsWhileOutputScrolls(t *testing.T) {
	emu := term.New(20, 4, term.WithScrollback(100))
	for i := range 30 {
		fmt.Fprintf(emu, "line %d\r\n", i)
	}
	tl := New(emu, nil)
	tl.SetRect(0, 0, 22, 6)
	s := newScreen(t, 22, 6)
	tl.Draw(s)
	s.Show()
	key := func(r rune) { tl.CopyKey(tcell.NewEventKey(tcell.KeyRune, r, 0)) }
	var copied string
	tl.EnterCopy(func(text string) { copied = text })
	for range 6 {
		key('k')
	}
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 20); got != "line 24             " {
		t.Fatalf("top row after 6 rows up: %q", got)
	}
	for i := 30; i < 40; i++ {
		fmt.Fprintf(emu, "line %d\r\n", i)
	}
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 20); got != "line 24             " {
		t.Fatalf("top row moved with new output: %q", got)
	}
	key('g')
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 1, 20); got != "line 0              " {
		t.Fatalf("top row after g: %q", got)
	}
	key('v')
	key('j')
	key('$')
	tl.CopyKey(tcell.NewEventKey(tcell.KeyEnter, 0, 0))
	if copied != "line 0\nline 1" || tl.InCopy() {
		t.Fatalf("copied %q, still in copy mode: %v", copied, tl.InCopy())
	}
	tl.Draw(s)
	s.Show()
	if got := rowText(s, 1, 4, 20); got != "                    " || rowText(s, 1, 3, 20) != "line 39             " {
		t.Fatalf("after leaving, the view is not live:\n%q\n%q", rowText(s, 1, 3, 20), rowText(s, 1, 4, 20))
	}
}
