package term

import (
	"math/rand"
	"testing"
)

// A copy built from a checkpoint shows what the original shows, and a
// checkpoint is refused amid a sequence.
func TestCheckpointRebuildsTheEmulator(t *testing.T) {
	for seed := int64(1); seed <= 20; seed++ {
		r := rand.New(rand.NewSource(seed))
		a := New(40, 12, WithScrollback(200))
		a.Write([]byte(noise(r, 200)))
		var b *Emulator
		if !a.Checkpoint(func(p Parts, hist []byte) {
			b = FromParts(p)
			if err := b.LoadHistory(hist); err != nil {
				t.Fatal(err)
			}
		}) {
			t.Fatalf("seed %d: no checkpoint between sequences", seed)
		}
		same(t, "checkpoint", a, b)
		rest := []byte(noise(r, 100))
		a.Write(rest)
		b.Write(rest)
		same(t, "checkpoint and the same bytes after it", a, b)
	}
	e := New(20, 5)
	for _, part := range []string{"\x1b[3", "\x1b]2;ti", "\xe5\xae", "\x1b"} {
		e.Write([]byte(part))
		if e.AtRest() || e.Checkpoint(func(Parts, []byte) { t.Fatal("called amid a sequence") }) {
			t.Fatalf("at rest after %q", part)
		}
		e.Write([]byte("\x18")) // CAN ends it
		if part == "\xe5\xae" {
			e.Write([]byte("\xb6"))
		}
	}
}
