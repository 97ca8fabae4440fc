package merge

import "testing"

// A reader that has handled every event it read is told when nothing is
// in transit, including when events were dropped unread because it fell
// behind: the engine's idleness waits on this, not only on the snapshot.
func TestDeliveredCountsEventsInTransit(t *testing.T) {
	r := newRepo(t)
	svc, err := New(baseOptions(r.dir), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !svc.Delivered(0) {
		t.Fatal("nothing emitted, yet something is in transit")
	}
	svc.emit(Event{Kind: EventLanded, TaskID: "c-1"})
	if svc.Delivered(0) {
		t.Fatal("an unread landing is not in transit")
	}
	<-svc.Events()
	if !svc.Delivered(1) {
		t.Fatal("the only event was read, yet one is in transit")
	}

	// Overflow: the oldest are dropped; reading what is left is all there is.
	n := cap(svc.events) + 10
	for i := 0; i < n; i++ {
		svc.emit(Event{Kind: EventPaused})
	}
	read := uint64(1)
	for len(svc.events) > 1 {
		<-svc.Events()
		read++
	}
	if svc.Delivered(read) {
		t.Fatal("one event left unread, yet none is in transit")
	}
	<-svc.Events()
	if !svc.Delivered(read + 1) {
		t.Fatalf("all read (%d, %d dropped), yet one is in transit", read+1, svc.dropped.Load())
	}
}
