package e2e

import (
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

var quality = []config.QualityCommand{{Name: "hello", Command: "grep -q hello hello.txt", Required: true, Order: 1}}

// `claude -p … --output-format stream-json`: completion comes from the
// result event's final text, usage and cost from its totals.
func TestClaudeHeadlessCompletes(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id))},
			Usage: modelserver.Usage{Input: 1000, Output: 50}},
		{Text: "Wrote hello.txt and committed it.\n<chorus>COMPLETE</chorus>", Usage: modelserver.Usage{Input: 1200, Output: 30, CacheRead: 400}},
	}})
	h.start()
	h.assign(id, "claude-headless")
	sig := h.waitFor(kind(orchestrator.EvSignal, id))
	if sig.Fields["source"] != "events" || sig.Fields["type"] != "COMPLETE" {
		t.Fatalf("signal %+v; want COMPLETE from the structured events", sig)
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	h.waitIdle()
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
	if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	checkUsage(t, h, id, 2200, 80, 400, true)
}

// `codex exec --json`: completion from turn.completed and the last agent
// message, usage from turn.completed.
func TestCodexHeadlessCompletes(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Exec("echo hello > hello.txt && " + commit("feat: hello", id))},
			Usage: modelserver.Usage{Input: 900, Output: 40, CacheRead: 100}},
		{Text: "Done.\n<chorus>COMPLETE</chorus>", Usage: modelserver.Usage{Input: 1000, Output: 20, CacheRead: 500}},
	}})
	h.start()
	h.assign(id, "codex-headless")
	sig := h.waitFor(kind(orchestrator.EvSignal, id))
	if sig.Fields["source"] != "events" || sig.Fields["type"] != "COMPLETE" {
		t.Fatalf("signal %+v; want COMPLETE from the structured events\n%s", sig, h.report())
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	h.waitIdle()
	if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	checkUsage(t, h, id, 1900, 60, 600, false)
}

// checkUsage compares the engine's per-task and per-session usage with
// what the model server reported.
func checkUsage(t *testing.T, h *harness, id string, in, out, cacheRead int64, costed bool) {
	t.Helper()
	snap := h.eng.Snapshot()
	u := h.completedUsage(id)
	if u.Input != in || u.Output != out || u.CacheRead != cacheRead {
		t.Errorf("task usage %+v; want input %d, output %d, cache read %d", u, in, out, cacheRead)
	}
	if costed && u.CostUSD <= 0 {
		t.Errorf("task cost %v; want the CLI's reported cost", u.CostUSD)
	}
	if s := snap.Usage; s.Input < in || s.Output < out {
		t.Errorf("session usage %+v below the task's %+v", s, u)
	}
}
