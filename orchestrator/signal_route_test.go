package orchestrator

import (
	"context"

	"github.com/chorus-dev/chorus/agent/signal"
)

// routeSignalsForTest does what the app does: `chorus signal` files become
// engine commands.
func routeSignalsForTest(ctx context.Context, h *harness) {
	ch, err := signal.Watch(ctx, h.dir.Path)
	if err != nil {
		return
	}
	for env := range ch {
		if env.Err == nil {
			c := Command{Kind: CmdSignal, AgentID: env.AgentID, Signal: env.Signal.String()}
			if q := env.Question; q != nil {
				c.Question, c.Options = q.ID, q.Options
			}
			_ = h.eng.Do(ctx, c)
		}
		_ = env.Ack()
	}
}
