package host

import "testing"

// Output is reported dropped (and so left out of the mirror) only while
// an engine is too far behind; once its connection is gone the mirror
// must keep it, or the next engine's screen misses those bytes.
func TestOutboxDropsOnlyForAnEngineBehind(t *testing.T) {
	o := newOutbox()
	if !o.put(fOutput, []byte("hello")) {
		t.Fatal("output refused by an empty outbox")
	}
	if o.put(fOutput, make([]byte, outboxCap)) {
		t.Fatal("output past the cap was queued")
	}
	o.close()
	if !o.put(fOutput, []byte("after")) {
		t.Fatal("output after the engine went away reported dropped: the mirror would leave it out")
	}
}
