package e2e

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/stuck"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// TestMeasureStuckLatency measures, for each way an agent gets stuck, the
// time from the dialog or error first appearing on the agent's screen to
// NEEDS_HUMAN in the engine's snapshot; it prints the median of
// CHORUS_MEASURE_STUCK runs (e.g. 10) and asserts nothing about time.
// Retried errors count from their first retry on screen, so the figure
// includes the wait for them to persist.
//
//	CHORUS_TOOLS_DIR=/work/tools/npm CHORUS_MEASURE_STUCK=10 go test ./e2e -run TestMeasureStuckLatency -v -timeout 2h
func TestMeasureStuckLatency(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CHORUS_MEASURE_STUCK"))
	if n <= 0 {
		t.Skip("set CHORUS_MEASURE_STUCK=<runs> to measure")
	}
	cases := []struct {
		name, profile string
		untrusted     bool
		tweak         func(*testing.T) func(*config.Config)
		script        func(h *harness, id string)
	}{
		{name: "claude not logged in", profile: "claude",
			tweak: func(*testing.T) func(*config.Config) { return envTweak("claude", "ANTHROPIC_API_KEY=") }},
		{name: "claude trust dialog", profile: "claude", untrusted: true},
		{name: "claude persistent 500", profile: "claude", script: func(h *harness, id string) {
			h.srv.Add(modelserver.Script{Match: []string{id}, After: &modelserver.Turn{Status: 500}})
		}},
		{name: "claude dead endpoint", profile: "claude",
			tweak: func(t *testing.T) func(*config.Config) { return envTweak("claude", "ANTHROPIC_BASE_URL="+closedURL(t)) }},
		{name: "codex 500", profile: "codex", script: func(h *harness, id string) {
			h.srv.Add(modelserver.Script{Match: []string{id}, After: &modelserver.Turn{Status: 500}})
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []time.Duration
			for range n {
				var tweak func(*config.Config)
				if c.tweak != nil {
					tweak = c.tweak(t)
				}
				h := newHarness(t, tweak)
				h.untrusted = c.untrusted
				id := h.task("say hello", beads.CreateOptions{})
				if c.script != nil {
					c.script(h, id)
				}
				h.start()
				h.assign(id, c.profile)
				got = append(got, h.stuckLatency(c.profile+"-"+id))
				h.stop()
				h.killCodexDaemons()
			}
			slices.Sort(got)
			t.Logf("%s: median %v over %d runs (min %v, max %v) %v", c.name, got[len(got)/2].Round(time.Millisecond), n,
				got[0].Round(time.Millisecond), got[len(got)-1].Round(time.Millisecond), got)
		})
	}
}

// stuckLatency polls the agent's screen and the snapshot every 10ms: there
// is no event for "the screen now shows an error".
func (h *harness) stuckLatency(agent string) time.Duration {
	h.t.Helper()
	var shown time.Time
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Now().Before(deadline) {
		now := time.Now()
		if a := h.eng.Snapshot().Agents[agent]; a != nil && a.Status == orchestrator.AgentNeedsHuman {
			if shown.IsZero() {
				h.t.Fatalf("NEEDS_HUMAN before the screen showed anything\n%s", h.report())
			}
			return now.Sub(shown)
		}
		if s := h.eng.Screen(agent); s != nil && shown.IsZero() && stuck.Classify(s.Text()).Cause != stuck.None {
			shown = now
		}
		select {
		case ev := <-h.events.C:
			h.events.Log = append(h.events.Log, ev)
			h.log = h.events.Log
		case <-tick.C:
		}
	}
	h.t.Fatalf("no NEEDS_HUMAN\n%s", h.report())
	return 0
}
