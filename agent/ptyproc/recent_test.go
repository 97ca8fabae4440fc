package ptyproc

import "testing"

func TestRecentKeepsOnlyWatchedOutput(t *testing.T) {
	var r Recent
	r.Add([]byte("before "))
	stop := r.Watch()
	off := r.Offset()
	_, _, changed := r.Since(off)
	r.Add([]byte("typed"))
	select {
	case <-changed:
	default:
		t.Fatal("a chunk did not close the channel Since returned")
	}
	if out, total, _ := r.Since(off); string(out) != "typed" || total != 12 {
		t.Fatalf("Since = %q, %d; want \"typed\", 12", out, total)
	}
	stop()
	r.Add([]byte(" after"))
	if out, total, _ := r.Since(off); len(out) != 0 || total != 18 {
		t.Fatalf("after stop: Since = %q, %d; want nothing, 18", out, total)
	}
	if r.recent != nil {
		t.Fatalf("kept %d bytes with nobody watching", len(r.recent))
	}
}
