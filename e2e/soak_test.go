package e2e

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Prompt delivery into a live interactive Claude Code, many times over:
// the agent asks (NEEDS_HELP), the engine types the answer in, the model
// server checks that the answer arrived. CHORUS_SOAK=N sets the number of
// deliveries (CHORUS_SOAK=1 means 200).
func TestSoakPromptDelivery(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHORUS_SOAK"))
	if n <= 0 {
		t.Skip("set CHORUS_SOAK=1 (200 deliveries) or CHORUS_SOAK=N")
	}
	if n == 1 {
		n = 200
	}
	h := newHarness(t, nil)
	id := h.task("answer questions", beads.CreateOptions{})
	var mu sync.Mutex
	arrived := map[int]time.Time{}
	got := make(chan int, n+1)
	h.srv.Add(modelserver.Script{Match: []string{id}, After: &modelserver.Turn{Gen: func(r modelserver.Request) modelserver.Turn {
		if r.Index%2 == 1 {
			return modelserver.Turn{Text: fmt.Sprintf("Asked question %d.", r.Index/2), Usage: modelserver.Usage{Input: 50, Output: 5}}
		}
		q := r.Index / 2
		if q > 0 {
			mu.Lock()
			if strings.Contains(r.LastUser, fmt.Sprintf("answer-%d.", q-1)) {
				if _, ok := arrived[q-1]; !ok {
					arrived[q-1] = time.Now()
					got <- q - 1
				}
			}
			mu.Unlock()
		}
		if q >= n {
			// Something to merge: a COMPLETE with nothing is refused.
			return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash("echo answered > answers.txt && " + commit("feat: answers", id) + " && chorus signal COMPLETE")}}
		}
		return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash(fmt.Sprintf(`chorus signal NEEDS_HELP "question %d"`, q))},
			Usage: modelserver.Usage{Input: 50, Output: 5}}
	}}})
	h.start()
	h.assign(id, "claude")
	var lat []time.Duration
	for i := 0; i < n; i++ {
		ev := h.waitFor(func(ev orchestrator.Event) bool {
			return ev.Kind == orchestrator.EvNeedsHelp || ev.Kind == orchestrator.EvFinished
		})
		if ev.Kind == orchestrator.EvFinished {
			t.Fatalf("agent finished after %d deliveries\n%s", i, h.report())
		}
		want := fmt.Sprintf("question %d", i)
		if ev.Text != want {
			// A lost answer makes the agent respawn and start over.
			t.Fatalf("asked %q, want %q (delivery %d lost)\n%s", ev.Text, want, i-1, h.report())
		}
		sent := time.Now()
		if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: ev.Agent,
			Text: fmt.Sprintf("answer-%d.", i)}); err != nil {
			t.Fatal(err)
		}
		select {
		case k := <-got:
			if k != i {
				t.Fatalf("answer %d arrived while waiting for %d", k, i)
			}
			lat = append(lat, time.Since(sent))
		case <-time.After(wait):
			t.Fatalf("answer %d never reached the model\n%s", i, h.report())
		}
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	retries := 0
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvAlert && strings.Contains(ev.Text, "attempts") {
			retries++
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	t.Logf("deliveries: %d, needed a retry: %d, restarts: %d; answer→model latency median %s, p95 %s, max %s",
		n, retries, h.count(orchestrator.EvStarted)-1, lat[len(lat)/2].Round(time.Millisecond),
		lat[len(lat)*95/100].Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond))
}
