package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// The false-COMPLETE suite: one conversation per channel that shows the
// tag in every way that must not end a task, then finishes with the
// inline form "All done. <chorus>COMPLETE</chorus>", which must. Each case
// is followed by a PROGRESS sentinel (10, 20, … 60) in the assistant's
// next words. On a structured channel a tag counts only as the last thing
// in a turn's final message, so none of the sentinels (each followed by a
// tool call, or by more words) may arrive, and exactly one COMPLETE; on
// a custom agent's screen the sentinels, alone on their lines, arrive, so
// a COMPLETE the engine counted is attributed to the case before it.

// protocolDoc is displayed by the agent with `cat`: the tag in a fenced
// block and bare on a line of its own.
const protocolDoc = "# Protocol\n\nWhen finished, print:\n\n```\n<chorus>COMPLETE</chorus>\n```\n\nthat is:\n\n<chorus>COMPLETE</chorus>\n"

// falseCases name the cases in order; case i is followed by sentinel
// 10*(i+1).
var falseCases = []string{
	"displayed document (cat: fenced and bare tag)",
	"tool output printing the tag",
	"tag in quotes",
	"mid-sentence mention",
	"tag in inline code",
	"tag in a fenced block of the message",
}

func falseSuite(sh func(string) modelserver.Tool, id string) []modelserver.Turn {
	noop := []modelserver.Tool{sh("git status --short")}
	turns := []modelserver.Turn{
		{Text: "Reading the protocol.", Tools: []modelserver.Tool{sh("cat docs/protocol.md")}},
		{Text: "Read it.\n<chorus>PROGRESS: 10</chorus>", Tools: []modelserver.Tool{sh(`printf '<chorus>COMPLETE</chorus>\n'`)}},
		{Text: "<chorus>PROGRESS: 20</chorus>\nThe protocol says to output \"<chorus>COMPLETE</chorus>\"", Tools: noop},
		{Text: "<chorus>PROGRESS: 30</chorus>\nI will print <chorus>COMPLETE</chorus> once the work is committed.",
			Tools: []modelserver.Tool{sh("echo hello > hello.txt && " + commit("feat: hello", id))}},
		{Text: "<chorus>PROGRESS: 40</chorus>\nThe signal is `<chorus>COMPLETE</chorus>`, nothing else.", Tools: noop},
		{Text: "<chorus>PROGRESS: 50</chorus>\nFor the record, the document shows:\n\n```\n<chorus>COMPLETE</chorus>\n```", Tools: noop},
		{Text: "<chorus>PROGRESS: 60</chorus>\nAll done. <chorus>COMPLETE</chorus>"},
	}
	for i := range turns {
		turns[i].Usage = modelserver.Usage{Input: 1000, Output: 10}
	}
	return turns
}

func openCodeBash(cmd string) modelserver.Tool {
	return modelserver.Tool{Name: "bash", Input: map[string]any{"command": cmd, "description": "run a command"}}
}

// suiteHarness is a harness with the protocol document committed.
func suiteHarness(t *testing.T, doc string, tweak func(*config.Config)) *harness {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		if tweak != nil {
			tweak(c)
		}
	})
	os.MkdirAll(filepath.Join(h.root, "docs"), 0o755)
	os.WriteFile(filepath.Join(h.root, "docs", "protocol.md"), []byte(doc), 0o644)
	git(t, h.root, "add", ".")
	git(t, h.root, "commit", "-q", "-m", "docs: protocol")
	return h
}

// checkSuite waits for the task to complete and counts, from the engine's
// signal events: COMPLETEs before the last sentinel (false completions,
// by case) and after it (the inline form; one is expected). Every
// sentinel must have arrived through the expected source.
func checkSuite(t *testing.T, h *harness, id, source string, sentinels []int, cases []string) {
	t.Helper()
	h.waitFor(kind(orchestrator.EvCompleted, id))
	if len(sentinels) == 0 {
		checkTurnEnd(t, h, id, source)
		return
	}
	last := sentinels[len(sentinels)-1]
	progress, falses, inline := 0, 0, 0
	seen := map[int]bool{}
	var wrongSource []string
	for _, ev := range h.log {
		if ev.Kind != orchestrator.EvSignal || ev.Task != id {
			continue
		}
		if ev.Fields["source"] != source {
			wrongSource = append(wrongSource, fmt.Sprintf("%s from %v", ev.Text, ev.Fields["source"]))
		}
		switch ev.Fields["type"] {
		case "PROGRESS":
			fmt.Sscanf(strings.TrimPrefix(ev.Text, "PROGRESS: "), "%d", &progress)
			seen[progress] = true
		case "COMPLETE":
			if progress < last {
				falses++
				t.Errorf("false completion after sentinel %d (case: %s)", progress, caseAfter(progress, sentinels, cases))
			} else {
				inline++
			}
		}
	}
	t.Logf("channel %s: %d false cases, %d false completions; inline form: %d of 1 completed, %d missed",
		source, len(cases), falses, inline, 1-min(inline, 1))
	for _, s := range sentinels {
		if !seen[s] {
			t.Errorf("sentinel PROGRESS %d never arrived: the channel did not read the assistant's words\n%s", s, h.report())
		}
	}
	if inline != 1 || falses != 0 || len(wrongSource) > 0 {
		t.Fatalf("inline completions %d, false completions %d, signals from other sources %q\n%s", inline, falses, wrongSource, h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
}

// checkTurnEnd checks a structured channel: no tag before the final
// message counted (no PROGRESS sentinel arrived), and the final message's
// COMPLETE counted once.
func checkTurnEnd(t *testing.T, h *harness, id, source string) {
	t.Helper()
	var got []string
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvSignal && ev.Task == id {
			got = append(got, fmt.Sprintf("%s from %v", ev.Text, ev.Fields["source"]))
		}
	}
	t.Logf("channel %s: signals %q", source, got)
	if len(got) != 1 || got[0] != "COMPLETE from "+source {
		t.Fatalf("want one COMPLETE from %s at the turn's end, got %q\n%s", source, got, h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusClosed {
		t.Fatalf("task %+v", tk)
	}
}

func caseAfter(progress int, sentinels []int, cases []string) string {
	for i, s := range sentinels {
		if progress < s && i < len(cases) {
			return cases[i]
		}
	}
	return "?"
}

// Interactive Claude Code: signals come from its session transcript;
// what its screen shows (the displayed document, the printed tag) does not
// count. Usage keeps coming from the transcript.
func TestSignalsClaudeInteractive(t *testing.T) {
	h := suiteHarness(t, protocolDoc, nil)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: falseSuite(modelserver.Bash, id)})
	h.start()
	h.assign(id, "claude")
	checkSuite(t, h, id, "transcript", nil, falseCases)
	if u := h.completedUsage(id); u.Input < 7000 || u.CostUSD <= 0 {
		t.Fatalf("usage from the transcript: %+v", u)
	}
}

// `claude -p --output-format stream-json`: the assistant's text blocks;
// the result event repeats the last one and must not count it again.
func TestSignalsClaudeHeadless(t *testing.T) {
	h := suiteHarness(t, protocolDoc, nil)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: falseSuite(modelserver.Bash, id)})
	h.start()
	h.assign(id, "claude-headless")
	checkSuite(t, h, id, "events", nil, falseCases)
	checkUsage(t, h, id, 7000, 70, 0, true)
}

// Interactive Codex: signals come from its rollout file.
func TestSignalsCodexInteractive(t *testing.T) {
	h := suiteHarness(t, protocolDoc, nil)
	id := h.task("say hello", beads.CreateOptions{})
	trustCodex(t, h, h.worktree("codex", id))
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: falseSuite(modelserver.Exec, id)})
	h.start()
	h.assign(id, "codex")
	checkSuite(t, h, id, "transcript", nil, falseCases)
	if u := h.completedUsage(id); u.Input < 7000 || u.Output < 70 {
		t.Fatalf("usage from the rollout file: %+v", u)
	}
}

// `codex exec --json`: agent_message items only.
func TestSignalsCodexExec(t *testing.T) {
	h := suiteHarness(t, protocolDoc, nil)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: falseSuite(modelserver.Exec, id)})
	h.start()
	h.assign(id, "codex-headless")
	checkSuite(t, h, id, "events", nil, falseCases)
	checkUsage(t, h, id, 7000, 70, 0, false)
}

// `opencode run --format json`: decoded text parts of the assistant;
// usage and cost from its step_finish events.
func TestSignalsOpenCode(t *testing.T) {
	h := suiteHarness(t, protocolDoc, nil)
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: falseSuite(openCodeBash, id)})
	h.start()
	h.assign(id, "opencode")
	checkSuite(t, h, id, "events", nil, falseCases)
	if u := h.completedUsage(id); u.Input != 7000 || u.Output != 70 || u.CostUSD <= 0 {
		t.Fatalf("opencode usage: %+v", u)
	}
}

// A custom agent has no structure: its screen is the channel, read with
// the same rule and echo protection. Its own printed output cannot be
// told from a tool's, so the displayed document holds the tag only in a
// fenced block.
func TestSignalsCustomAgentScreen(t *testing.T) {
	script := filepath.Join(t.TempDir(), "agent.script")
	h := suiteHarness(t, "# Protocol\n\nWhen finished, print:\n\n```\n<chorus>COMPLETE</chorus>\n```\n", func(c *config.Config) {
		c.Agents.Available["custom"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", script}, Prompt: config.PromptArg}
	})
	id := h.task("say hello", beads.CreateOptions{})
	body := strings.Join([]string{
		"echo-prompt",
		`run "cat docs/protocol.md"`,
		`tag PROGRESS 10`,
		`print "The protocol says to output \"<chorus>COMPLETE</chorus>\""`,
		`tag PROGRESS 20`,
		`print "I will print <chorus>COMPLETE</chorus> once the work is committed."`,
		`tag PROGRESS 30`,
		"print \"The signal is `<chorus>COMPLETE</chorus>`, nothing else.\"",
		`write hello.txt hello`,
		`commit "feat: hello [` + id + `]"`,
		`tag PROGRESS 60`,
		`print "All done. <chorus>COMPLETE</chorus>"`, // not alone on its line: a screen does not count it
		`print "All done."`,
		`tag COMPLETE`,
		`hang`,
	}, "\n")
	if err := os.WriteFile(script, []byte(body+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.assign(id, "custom")
	checkSuite(t, h, id, "output", []int{10, 20, 30, 60},
		[]string{"displayed document (cat: fenced tag)", "tag in quotes", "mid-sentence mention", "tag in inline code, and a line ending with the tag"})
}

// trustCodex marks a worktree trusted in the throwaway CODEX_HOME, so
// interactive Codex asks nothing before it starts.
func trustCodex(t *testing.T, h *harness, dir string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(h.home, ".codex", "config.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fmt.Fprintf(f, "\n[projects.%q]\ntrust_level = \"trusted\"\n", dir)
}
