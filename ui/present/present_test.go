package present

import (
	"testing"
	"time"
)

// ElapsedChangesIn lands exactly on the next change of Elapsed.
func TestElapsedChangesIn(t *testing.T) {
	for _, d := range []time.Duration{
		-90 * time.Second, -time.Nanosecond, 0, 59 * time.Second, time.Minute, 61 * time.Second,
		59*time.Minute + 30*time.Second, time.Hour, 23*time.Hour + 59*time.Minute + 59*time.Second,
		24 * time.Hour, 49*time.Hour + 30*time.Minute,
	} {
		in := ElapsedChangesIn(d)
		if in <= 0 {
			t.Errorf("%v: changes in %v", d, in)
			continue
		}
		if before, at := Elapsed(d+in-time.Nanosecond), Elapsed(d+in); before != Elapsed(d) || at == before {
			t.Errorf("%v (%s): %v later shows %q, a nanosecond before %q", d, Elapsed(d), in, at, before)
		}
	}
}
