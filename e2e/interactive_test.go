package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Interactive Claude Code in a PTY finishes by running `chorus signal
// COMPLETE` from its Bash tool; its usage comes from its transcript.
func TestClaudeInteractiveSignalCommand(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")},
			Usage: modelserver.Usage{Input: 3000, Output: 120, CacheWrite: 500}},
		{Text: "Committed hello.txt and signalled completion.", Usage: modelserver.Usage{Input: 3200, Output: 20, CacheRead: 500}},
	}})
	h.start()
	h.assign(id, "claude")
	sig := h.waitFor(kind(orchestrator.EvSignal, id))
	if sig.Fields["source"] != "signal" || sig.Fields["type"] != "COMPLETE" {
		t.Fatalf("signal %+v; want COMPLETE from `chorus signal`\n%s", sig, h.report())
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	h.waitIdle()
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
	if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	u := h.completedUsage(id)
	if u.Input < 3000 || u.Output < 120 || u.CacheWrite < 500 || u.CostUSD <= 0 {
		t.Fatalf("usage from the transcript: %+v", u)
	}
	if s := h.eng.Snapshot().Usage; s.Tokens() < u.Tokens() {
		t.Fatalf("session usage %+v below the task's %+v", s, u)
	}
}

// A <chorus> tag the agent prints completes its task, read from its
// transcript; the same tag in the prompt it echoes never does, even
// standing alone on its line.
func TestClaudeInteractiveTagNotEcho(t *testing.T) {
	h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
	id := h.task("say hello", beads.CreateOptions{})
	// A prompt that puts the tag on a line of its own, like an agent would.
	tpl := "# Task: {{.TaskID}}\n\n{{.Title}}\n\nWhen you are done and committed, print this line:\n\n{{.CompleteTag}}\n"
	os.WriteFile(filepath.Join(h.root, ".chorus", "prompts", "impl-agent.md"), []byte(tpl), 0o644)
	echoed := make(chan struct{})
	script := h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id))}, Hold: echoed},
		{Text: "I wrote hello.txt and committed it.\n\n<chorus>COMPLETE</chorus>"},
	}})
	h.start()
	h.assign(id, "claude")
	agent := "claude-" + id
	// The first reply waits until the prompt, tag included, is on screen.
	h.until("the echoed prompt", func() bool { return strings.Count(h.screen(agent), "<chorus>COMPLETE</chorus>") >= 1 })
	close(echoed)
	sig := h.waitFor(kind(orchestrator.EvSignal, id))
	if sig.Fields["source"] != "transcript" || sig.Fields["type"] != "COMPLETE" {
		t.Fatalf("signal %+v\n%s", sig, h.report())
	}
	if !h.served(script, 1) {
		t.Fatalf("COMPLETE counted before the agent printed it: the echo counted\n%s", h.report())
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
}

// A required quality command fails after COMPLETE: the failure is typed
// into the live session, delivery is verified (the model receives it), the
// next turn fixes the work and the task closes, all in one process.
func TestClaudeInteractiveQualityFeedback(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = []config.QualityCommand{{Name: "check", Command: "grep -q good result.txt", Required: true, Order: 1}}
	})
	id := h.task("write a good result", beads.CreateOptions{})
	script := h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo bad > result.txt && " + commit("feat: result", id) + " && chorus signal COMPLETE")}},
		{Text: "Done: result.txt is written."},
		{Gen: func(r modelserver.Request) modelserver.Turn {
			if !strings.Contains(r.LastUser, "not complete yet") || !strings.Contains(r.LastUser, "check") {
				return modelserver.Turn{Text: "unexpected message: " + r.LastUser}
			}
			return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash("echo good > result.txt && " + commit("fix: result", id) + " && chorus signal COMPLETE")}}
		}},
		{Text: "Fixed."},
	}})
	h.start()
	h.assign(id, "claude")
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if n := h.count(orchestrator.EvStarted); n != 1 {
		t.Fatalf("the agent was started %d times; the feedback belongs in the live session\n%s", n, h.report())
	}
	if n := h.count(orchestrator.EvIteration); n != 2 {
		t.Fatalf("iterations: %d\n%s", n, h.report())
	}
	if !h.served(script, 2) {
		t.Fatalf("the feedback never reached the model\n%s", h.report())
	}
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvAlert && strings.Contains(ev.Text, "deliver") {
			t.Fatalf("delivery trouble: %s", ev.Text)
		}
	}
	if got := h.committed(t, id, "agent/claude/"+id, "result.txt"); got != "good" {
		t.Fatalf("result.txt = %q", got)
	}
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
}

// BLOCKED from a real agent stops it and blocks the task with its reason.
func TestClaudeInteractiveBlocked(t *testing.T) {
	h := newHarness(t, nil)
	id := h.task("needs a key", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash(`chorus signal BLOCKED "no API key for the payment sandbox"`)}},
		{Text: "I am blocked: there is no API key."},
	}})
	h.start()
	h.assign(id, "claude")
	ev := h.waitFor(kind(orchestrator.EvBlocked, id))
	if !strings.Contains(ev.Text, "no API key") {
		t.Fatalf("blocked with %q", ev.Text)
	}
	if tk := h.get(id); tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "payment sandbox") {
		t.Fatalf("task %+v", tk)
	}
	h.waitIdle()
	if s := h.eng.Snapshot(); len(s.Agents) != 0 {
		t.Fatalf("agents left: %+v", s.Agents)
	}
}

// NEEDS_HELP from a real agent waits for a person; the answer is typed
// into the live session and the agent finishes with it.
func TestClaudeInteractiveNeedsHelpAnswered(t *testing.T) {
	h := newHarness(t, nil)
	id := h.task("paint it", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash(`chorus signal NEEDS_HELP "which colour?"`)}},
		{Text: "I asked which colour to use."},
		{Gen: func(r modelserver.Request) modelserver.Turn {
			colour := "unknown"
			if strings.Contains(r.LastUser, "blue") {
				colour = "blue"
			}
			return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Bash("echo " + colour + " > colour.txt && " + commit("feat: paint", id) + " && chorus signal COMPLETE")}}
		}},
		{Text: "Painted."},
	}})
	h.start()
	h.assign(id, "claude")
	ev := h.waitFor(kind(orchestrator.EvNeedsHelp, id))
	if ev.Text != "which colour?" {
		t.Fatalf("question %q", ev.Text)
	}
	h.waitSnap("the question in the agent's state", func(s orchestrator.Snapshot) bool {
		a := s.Agents[ev.Agent]
		return a != nil && a.Question == "which colour?" && a.Status == orchestrator.AgentNeedsHelp
	})
	if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: ev.Agent, Text: "blue, please"}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if got := h.committed(t, id, "agent/claude/"+id, "colour.txt"); got != "blue" {
		t.Fatalf("colour.txt = %q\n%s", got, h.report())
	}
}
