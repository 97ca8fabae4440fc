package merge

import (
	"context"
	"strings"
	"sync"
	"testing"
)

// The cleaner takes batches until none is left, leaves a batch that did
// not finish alone until it is poked, and ends with stop. No git: the
// batches are the test's, and every step of the loop reports on a channel.
func TestCleanerLoop(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	pending := [][]string{{"a", "b"}, {"c"}}
	stuck := false // the batch does not finish
	asked := make(chan string, 16)
	cleaned := make(chan string, 16)
	afters := make(chan struct{}, 16)
	next := func() []string {
		mu.Lock()
		defer mu.Unlock()
		var b []string
		if len(pending) > 0 {
			b = pending[0]
		}
		asked <- strings.Join(b, " ")
		return b
	}
	clean := func(_ context.Context, ids []string) {
		mu.Lock()
		defer mu.Unlock()
		cleaned <- strings.Join(ids, " ")
		if !stuck {
			pending = pending[1:]
		}
	}
	c := newCleaner(next, clean, func() { afters <- struct{}{} })
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		c.run(context.Background(), stop)
		close(done)
	}()
	expect := func(ch <-chan string, want string) {
		t.Helper()
		if got := <-ch; got != want {
			t.Fatalf("got %q, want %q", got, want)
		}
	}
	expect(asked, "a b")
	expect(cleaned, "a b")
	<-afters
	expect(asked, "c")
	expect(cleaned, "c")
	<-afters
	expect(asked, "") // idle: waits for a poke
	mu.Lock()
	pending, stuck = [][]string{{"d"}}, true
	mu.Unlock()
	c.poke()
	expect(asked, "d")
	expect(cleaned, "d")
	<-afters
	expect(asked, "d") // not finished: waits for news instead of retrying
	c.poke()
	expect(asked, "d")
	expect(cleaned, "d")
	<-afters
	expect(asked, "d")
	close(stop)
	<-done
	if len(cleaned) > 0 || len(asked) > 0 {
		t.Fatalf("worked on without news: %d cleaned, %d asked", len(cleaned), len(asked))
	}
}
