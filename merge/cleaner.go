package merge

import (
	"context"
	"strings"
)

// cleaner owns the goroutine that cleans up after landings, beside the
// integrator: removing a worktree waits on the worktree lock agents' starts
// hold, and the next merge should not wait for the last one's clean-up.
// What to clean and how are the service's (next, clean); the cleaner
// decides when, and never retries a batch it just failed to finish until
// something new happens.
type cleaner struct {
	next  func() []string                         // the next batch, oldest first
	clean func(ctx context.Context, ids []string) // cleans one batch
	after func()                                  // told after each batch (the integrator decides idleness)
	wake  chan struct{}
}

func newCleaner(next func() []string, clean func(context.Context, []string), after func()) *cleaner {
	return &cleaner{next: next, clean: clean, after: after, wake: make(chan struct{}, 1)}
}

// poke tells the cleaner there may be something to clean; it never blocks.
func (c *cleaner) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run cleans batches until ctx ends or stop closes.
func (c *cleaner) run(ctx context.Context, stop <-chan struct{}) {
	last := ""
	for {
		ids := c.next()
		key := strings.Join(ids, " ")
		if len(ids) == 0 || key == last {
			// Nothing to do, or the last clean-up could not finish (its
			// state was not saved): wait for news before trying again.
			last = ""
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-c.wake:
			}
			continue
		}
		c.clean(ctx, ids)
		last = key
		c.after()
	}
}
