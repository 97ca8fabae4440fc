package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/report"
)

// The real Claude Code and codex (headless) against a model server that
// answers every request with 429 and a retry-after for a window: the first
// agent to see it holds the run (until the retry-after Claude reports;
// codex exec reports only "exceeded retry limit, last status: 429", so a
// backoff and a probe), the other is parked, no task is blocked or failed,
// no agent starts during the window, and every task lands after it, each
// in its first iteration.
func TestUsageWindowHoldsRun(t *testing.T) {
	// Headless: claude's api_retry event names the 429 at the first refusal.
	// (An interactive Claude Code shows "429 … · retrying in 41s ·
	// attempt 3/10" only from its third attempt, about 85 s in with a
	// retry-after of 40: agent/usage's fixture.)
	for _, profile := range []string{"claude-headless", "codex-headless"} {
		t.Run(profile, func(t *testing.T) { usageWindow(t, profile) })
	}
}

func usageWindow(t *testing.T, profile string) {
	h := newHarness(t, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.Agents.Default = profile
		c.QualityCommands = []config.QualityCommand{{Name: "files", Command: "ls t-*.txt", Required: true, Order: 1}}
	})
	var ids []string
	for _, n := range []string{"one", "two", "three"} {
		ids = append(ids, h.task("write "+n, beads.CreateOptions{Priority: 2}))
	}
	var end time.Time // set before the engine starts
	window := func(t modelserver.Turn) modelserver.Turn {
		return modelserver.Turn{Gen: func(modelserver.Request) modelserver.Turn {
			if left := time.Until(end); left > 0 {
				return modelserver.Turn{Status: 429, Message: "Number of requests has exceeded your rate limit",
					Header: map[string]string{"retry-after": strconv.Itoa(int(left.Seconds()) + 1)}}
			}
			return t
		}}
	}
	run := modelserver.Bash
	if strings.HasPrefix(profile, "codex") {
		run = modelserver.Exec
	}
	for _, id := range ids {
		h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
			window(modelserver.Turn{Tools: []modelserver.Tool{run("echo " + id + " > " + id + ".txt && " + commit("feat: "+id, id))}}),
			window(modelserver.Turn{Text: "Wrote the file.\n<chorus>COMPLETE</chorus>"}),
		}})
	}
	end = time.Now().Add(20 * time.Second)
	h.start()
	held := h.waitFor(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvHeld })
	until, _ := held.Fields["until"].(time.Time)
	// Claude's api_retry carries the retry-after; codex exec only says
	// "exceeded retry limit, last status: 429", so its hold backs off.
	knows := profile == "claude-headless"
	if held.Fields["hold"] != orchestrator.HoldUsage || held.Fields["resetKnown"] != knows || (knows && until.Before(end)) {
		t.Fatalf("held %v until %v; the window ends %v\n%s", held.Fields, until, end, h.report())
	}
	// The snapshot carries the wait and its reset time for the TUI.
	h.waitSnap("the usage hold", func(s orchestrator.Snapshot) bool {
		return s.Hold != nil && s.Hold.Kind == orchestrator.HoldUsage && s.Hold.ResetKnown == knows && (!knows || !s.Hold.Until.Before(end))
	})
	resumed := h.waitFor(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvResumed })
	for _, id := range ids {
		h.waitFor(kind("merge_landed", id))
	}
	h.waitIdle()
	var timeline []string
	for _, ev := range h.log {
		switch ev.Kind {
		case orchestrator.EvStarted, orchestrator.EvHeld, orchestrator.EvProbe, orchestrator.EvResumed, orchestrator.EvReleased, orchestrator.EvCompleted, "merge_landed":
			timeline = append(timeline, fmt.Sprintf("%s %s %s %s", ev.Time.Format("15:04:05.0"), ev.Kind, ev.Task, ev.Text))
		}
		if ev.Kind == orchestrator.EvFailed || ev.Kind == orchestrator.EvBlocked || ev.Kind == orchestrator.EvNeedsHuman {
			t.Errorf("%s %s: %s", ev.Kind, ev.Task, ev.Text)
		}
		if ev.Kind == orchestrator.EvStarted && ev.Time.After(held.Time) && ev.Time.Before(end) {
			t.Errorf("an agent started at %s, during the window (ends %s)", ev.Time.Format("15:04:05.0"), end.Format("15:04:05.0"))
		}
		if ev.Kind == orchestrator.EvIteration && ev.Fields["iteration"] != 1 {
			t.Errorf("%s spent iteration %v", ev.Task, ev.Fields["iteration"])
		}
	}
	t.Logf("window ends %s; held until %s; resumed %s\n%s", end.Format("15:04:05.0"), until.Format("15:04:05.0"),
		resumed.Time.Format("15:04:05.0"), strings.Join(timeline, "\n"))
	rejected := 0
	for _, r := range h.srv.Requests() {
		if r.Status == 429 {
			rejected++
		}
	}
	t.Logf("%d requests answered 429", rejected)
	// The morning report shows the window.
	ts, err := h.store.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := report.Build(h.dir, ts, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Pauses) != 1 || rep.Pauses[0].Hold != orchestrator.HoldUsage || rep.Pauses[0].ResetKnown != knows || rep.Pauses[0].Until.IsZero() {
		t.Fatalf("report pauses %+v\n%s", rep.Pauses, rep.Markdown())
	}
	t.Logf("report:\n%s", rep.Markdown())
}
