package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/orchestrator"
)

// promptedChorus is the chorus command the prompt tells the agent to run,
// as a model would copy it; "" when the prompt names none.
func promptedChorus(userText string) string {
	const lead = "Run Chorus by this exact path: `"
	i := strings.Index(userText, lead)
	if i < 0 {
		return ""
	}
	rest := userText[i+len(lead):]
	j := strings.IndexByte(rest, '`')
	if j < 0 {
		return ""
	}
	return rest[:j]
}

// codexRuns is a shell command run by Codex's exec_command: Codex wraps it
// in `bash -lc`, a login shell whose PATH no longer has the directory
// Chorus put first, so only the path from the prompt reaches chorus.
func codexRuns(r modelserver.Request, cmd func(chorus string) string) modelserver.Turn {
	exe := promptedChorus(r.UserText)
	if exe == "" || !strings.HasPrefix(exe, "/") {
		return modelserver.Turn{Text: "The prompt names no absolute chorus command: " + exe}
	}
	return modelserver.Turn{Tools: []modelserver.Tool{modelserver.Exec(cmd(exe))}}
}

// Codex, interactive under the PTY and `codex exec --json`, finishes by
// running `chorus signal COMPLETE` by the path its prompt gives; the task
// completes through that signal.
func TestCodexSignalCommand(t *testing.T) {
	for _, profile := range []string{"codex", "codex-headless"} {
		t.Run(profile, func(t *testing.T) {
			h := newHarness(t, func(c *config.Config) { c.QualityCommands = quality })
			id := h.task("say hello", beads.CreateOptions{})
			h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
				{Gen: func(r modelserver.Request) modelserver.Turn {
					t := codexRuns(r, func(chorus string) string {
						return "echo hello > hello.txt && " + commit("feat: hello", id) + " && " + chorus + " signal COMPLETE"
					})
					t.Usage = modelserver.Usage{Input: 900, Output: 40}
					return t
				}},
				{Text: "Committed hello.txt and signalled completion.", Usage: modelserver.Usage{Input: 1000, Output: 20}},
			}})
			h.start()
			h.assign(id, profile)
			sig := h.waitFor(kind(orchestrator.EvSignal, id))
			if sig.Fields["source"] != "signal" || sig.Fields["type"] != "COMPLETE" {
				t.Fatalf("signal %+v; want COMPLETE from `chorus signal`\n%s", sig, h.report())
			}
			h.waitFor(kind(orchestrator.EvCompleted, id))
			h.waitIdle()
			if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
				t.Fatalf("main:hello.txt = %q", got)
			}
			if profile == "codex-headless" {
				// The run was let finish: its last turn's usage is booked.
				if u := h.completedUsage(id); u.Input != 1900 || u.Output != 60 {
					t.Fatalf("usage %+v; want both turns\n%s", u, h.report())
				}
			}
		})
	}
}

// NEEDS_HELP from Codex through `chorus signal`: the question waits for a
// person; the answer reaches the model (typed into the live session, or in
// the handover of a new `codex exec`), which finishes with it.
func TestCodexNeedsHelpAnswered(t *testing.T) {
	for _, profile := range []string{"codex", "codex-headless"} {
		t.Run(profile, func(t *testing.T) {
			h := newHarness(t, nil)
			id := h.task("paint it", beads.CreateOptions{})
			work := func(r modelserver.Request) modelserver.Turn {
				if !strings.Contains(r.UserText, "blue") {
					return codexRuns(r, func(chorus string) string { return chorus + ` signal NEEDS_HELP "which colour?"` })
				}
				return codexRuns(r, func(chorus string) string {
					return "echo blue > colour.txt && " + commit("feat: paint", id) + " && " + chorus + " signal COMPLETE"
				})
			}
			h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
				{Gen: work}, {Text: "I asked which colour to use."}, {Gen: work}, {Text: "Painted."},
			}})
			h.start()
			h.assign(id, profile)
			ev := h.waitFor(kind(orchestrator.EvNeedsHelp, id))
			if ev.Text != "which colour?" {
				t.Fatalf("question %q\n%s", ev.Text, h.report())
			}
			h.waitSnap("the question in the agent's state", func(s orchestrator.Snapshot) bool {
				a := s.Agents[ev.Agent]
				return a != nil && a.Status == orchestrator.AgentNeedsHelp
			})
			if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: ev.Agent, Text: "blue, please"}); err != nil {
				t.Fatal(err)
			}
			h.waitFor(kind(orchestrator.EvCompleted, id))
			if got := h.committed(t, id, "agent/"+profile+"/"+id, "colour.txt"); got != "blue" {
				t.Fatalf("colour.txt = %q\n%s", got, h.report())
			}
		})
	}
}
