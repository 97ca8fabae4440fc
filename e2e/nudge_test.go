package e2e

import (
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// nudged says whether a conversation holds Chorus's question about a turn
// that ended without a signal that counts.
func nudged(userText string) bool {
	return strings.Contains(userText, "did not count as a signal") || strings.Contains(userText, "saw no completion signal")
}

// A turn's final message that ends on a tag which does not count is a
// question to the agent, not a timeout, on every channel of the real CLIs:
// a tag in backticks (a near miss of a model that meant it) is confirmed
// with `chorus signal COMPLETE` and the task closes within 90 s of that
// turn; a negation, on the tag's line or in the sentence above it, is
// asked about, never confirmed, never closes, and
// turns NEEDS_HUMAN past completion.maxNudges. An interactive agent whose
// turn ends with no tag at all and sits idle is asked too.
func TestNearMissConfirmed(t *testing.T) {
	type result struct {
		category, channel, outcome string
		nudges                     int
		took                       time.Duration
	}
	var mu sync.Mutex
	var results []result
	t.Cleanup(func() {
		sort.Slice(results, func(i, j int) bool {
			return results[i].category+results[i].channel < results[j].category+results[j].channel
		})
		took := map[string][]time.Duration{}
		for _, r := range results {
			t.Logf("%-10s %-16s %-15s nudges=%d turn end→closed=%v", r.category, r.channel, r.outcome, r.nudges, r.took.Round(100*time.Millisecond))
			if r.took > 0 {
				took[r.category] = append(took[r.category], r.took)
			}
		}
		for cat, d := range took {
			sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
			t.Logf("%s: median from the turn's end to the task closed %v over %d runs", cat, d[len(d)/2].Round(100*time.Millisecond), len(d))
		}
	})
	const (
		nearMiss = "Wrote hello.txt and committed it. `<chorus>COMPLETE</chorus>`"
		negation = "The check is not run yet, so this is NOT finished and I will not print <chorus>COMPLETE</chorus>"
		// A denial above a tag standing alone, a blank line between.
		deniedAbove = "The check fails, so this is not finished.\n\n<chorus>COMPLETE</chorus>"
		silent      = "Wrote hello.txt and committed it."
	)
	all := []string{"claude", "claude-headless", "codex", "codex-headless"}
	for _, cat := range []struct {
		name, final string
		profiles    []string
		denies      bool
	}{{"near-miss", nearMiss, all, false}, {"negation", negation, all, true}, {"denied-above", deniedAbove, all, true},
		{"no-signal", silent, []string{"claude", "codex"}, false}} {
		for _, profile := range cat.profiles {
			t.Run(cat.name+"/"+profile, func(t *testing.T) {
				h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
				id := h.task("say hello", beads.CreateOptions{})
				codex := strings.HasPrefix(profile, "codex")
				run := func(r modelserver.Request, cmd func(chorus string) string) modelserver.Turn {
					if codex {
						return codexRuns(r, cmd)
					}
					return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash(cmd("chorus"))}}
				}
				var endMu sync.Mutex
				var missEnd time.Time
				final := func() modelserver.Turn {
					endMu.Lock()
					if missEnd.IsZero() {
						missEnd = time.Now()
					}
					endMu.Unlock()
					return modelserver.Turn{Text: cat.final}
				}
				// Asked, the near miss confirms; the negation says it again.
				answer := func(r modelserver.Request) modelserver.Turn {
					if cat.denies {
						return modelserver.Turn{Text: cat.final}
					}
					return run(r, func(chorus string) string { return chorus + " signal COMPLETE" })
				}
				h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
					{Gen: func(r modelserver.Request) modelserver.Turn {
						if nudged(r.UserText) {
							return answer(r) // a new headless run, asked in its handover
						}
						return run(r, func(string) string { return "echo hello > hello.txt && " + commit("feat: hello", id) })
					}},
					{Gen: func(r modelserver.Request) modelserver.Turn {
						if nudged(r.UserText) {
							return modelserver.Turn{Text: "Signalled."}
						}
						return final()
					}},
					{Gen: answer},
				}, After: &modelserver.Turn{Gen: func(r modelserver.Request) modelserver.Turn {
					if cat.denies {
						return answer(r)
					}
					return modelserver.Turn{Text: "Signalled."}
				}}})
				h.start()
				h.assign(id, profile)
				ev := h.waitFor(func(e orchestrator.Event) bool {
					return e.Task == id && (e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvBlocked || e.Kind == orchestrator.EvFailed)
				})
				res := result{category: cat.name, channel: profile, outcome: string(ev.Kind), nudges: h.count(orchestrator.EvNudge)}
				defer func() { mu.Lock(); results = append(results, res); mu.Unlock() }()
				if cat.denies {
					if ev.Kind != orchestrator.EvBlocked || !strings.Contains(ev.Text, "did not confirm") {
						t.Fatalf("negation: %s %s\n%s", ev.Kind, ev.Text, h.report())
					}
					if res.nudges != 3 {
						t.Fatalf("negation asked %d times, want 3\n%s", res.nudges, h.report())
					}
					return
				}
				if ev.Kind != orchestrator.EvCompleted {
					t.Fatalf("near miss: %s %s\n%s", ev.Kind, ev.Text, h.report())
				}
				endMu.Lock()
				res.took = ev.Time.Sub(missEnd)
				endMu.Unlock()
				if res.nudges != 1 || res.took <= 0 || res.took > 90*time.Second {
					t.Fatalf("near miss closed %v after its turn with %d nudges\n%s", res.took, res.nudges, h.report())
				}
				sig := h.waitFor(kind(orchestrator.EvSignal, id))
				if sig.Fields["source"] != "signal" {
					t.Fatalf("closed by %v, not the confirmation\n%s", sig.Fields, h.report())
				}
			})
		}
	}
}
