package ptyproc

import "sync"

const recentCap = 64 << 10

// Recent keeps the output of a terminal while someone types into it
// (Type, between Watch and its stop), with absolute offsets, and wakes
// waiters on each chunk: what Type reads to confirm its input. Output
// nobody waits on is counted, not kept: an engine of 8 agents held 1–2 MB
// of it for nothing. The zero value is ready to use.
type Recent struct {
	mu       sync.Mutex
	total    int64         // bytes added so far
	watchers int           // Types under way
	recent   []byte        // while watched: the last recentCap bytes at least (up to twice that)
	changed  chan struct{} // closed on the next chunk; nil: nobody asked
}

// Add records a chunk of output.
func (r *Recent) Add(b []byte) {
	r.mu.Lock()
	r.total += int64(len(b))
	if r.watchers > 0 {
		r.recent = append(r.recent, b...)
		// Up to twice the cap is kept, so the last recentCap bytes move
		// down once per recentCap bytes read rather than on every chunk.
		if len(r.recent) > 2*recentCap {
			r.recent = append(r.recent[:0], r.recent[len(r.recent)-recentCap:]...)
		}
	}
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	r.mu.Unlock()
}

// Watch starts keeping output, from the current offset on, until the
// returned stop is called (once).
func (r *Recent) Watch() (stop func()) {
	r.mu.Lock()
	r.watchers++
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		if r.watchers--; r.watchers == 0 {
			r.recent = nil
		}
		r.mu.Unlock()
	}
}

// Since returns the output after absolute offset off (as much as is still
// kept: only what came while watched), the current offset, and a channel
// closed on the next chunk.
func (r *Recent) Since(off int64) ([]byte, int64, <-chan struct{}) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	start := int64(len(r.recent)) - (r.total - off)
	if start < 0 {
		start = 0
	}
	var b []byte
	if start < int64(len(r.recent)) {
		b = append([]byte(nil), r.recent[start:]...)
	}
	return b, r.total, r.changed
}

// Offset is the number of bytes added so far.
func (r *Recent) Offset() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.total
}
