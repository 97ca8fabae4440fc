package term

import (
	"fmt"
	"testing"
	"time"
)

// A copy attached while the stream is in the middle of a sequence (a
// chunk boundary inside "\x1b[31m", an OSC title or a UTF-8 character)
// still ends up identical: the attach waits until the input is at rest,
// so the copy never receives the second half of a sequence it did not
// see begin.
func TestAttachMidSequence(t *testing.T) {
	for i, c := range []struct{ before, after string }{
		{"plain \x1b[3", "1mred\x1b[0m text"},
		{"title \x1b]0;my ti", "tle\x07 after"},
		{"wide \xe4\xb8", "\xad done"},
		{"csi \x1b", "[2Jcleared"},
	} {
		a := New(30, 5, WithScrollback(50))
		a.Write([]byte(c.before))
		var b *Emulator
		detach := a.AttachPartsAtRest(&Tap{
			Output: func(p []byte) { b.Write(p) },
			Resize: func(w, h int) { b.Resize(w, h) },
		}, func(p Parts) { b = FromParts(p) })
		a.Write([]byte(c.after))
		if b == nil {
			t.Fatalf("case %d: no copy after the sequence ended", i)
		}
		a.History(func(h []byte) {
			if err := b.LoadHistory(h); err != nil {
				t.Fatal(err)
			}
		})
		same(t, fmt.Sprintf("case %d %q|%q", i, c.before, c.after), a, b)
		detach()
	}
}

// A sequence that never ends does not hold an attach forever: the copy
// is made after a short wait, as it was before attaches waited at all.
func TestAttachMidSequenceGivesUp(t *testing.T) {
	a := New(30, 5)
	a.Write([]byte("stuck \x1b[3"))
	got := make(chan Parts, 1)
	detach := a.AttachPartsAtRest(&Tap{Output: func([]byte) {}, Resize: func(int, int) {}}, func(p Parts) { got <- p })
	defer detach()
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the attach never happened")
	}
}
