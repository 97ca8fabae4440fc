package orchestrator

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

// promptData fills .chorus/prompts/impl-agent.md.
type promptData struct {
	TaskID, Title, Description, Acceptance, Branch, Agent string
	QualityCommands                                       string
	CompleteTag, BlockedTag, NothingTag                   string
	// Chorus is the command that runs chorus: an absolute path (quoted
	// for a shell where needed), because some CLIs run commands in a login
	// shell that rebuilds PATH without the directory Chorus put first.
	Chorus string
}

// buildPrompt renders the implementation prompt for a task, with
// PATTERNS.md and the learnings in front of it for every agent, and
// AGENTS.md too for profiles with injectContext.
func buildPrompt(d dirs, cfg config.Config, p config.AgentProfile, agent string, t beads.Task, branch string) (string, error) {
	src, err := os.ReadFile(filepath.Join(d.prompts, "impl-agent.md"))
	if err != nil {
		src = []byte(config.PromptTemplate("impl-agent.md"))
	}
	tpl, err := template.New("impl-agent.md").Option("missingkey=zero").Parse(string(src))
	if err != nil {
		return "", fmt.Errorf(".chorus/prompts/impl-agent.md: %v", err)
	}
	var q strings.Builder
	for _, c := range cfg.SortedQuality() {
		req := "required"
		if !c.Required {
			req = "optional"
		}
		fmt.Fprintf(&q, "   - %s (%s): `%s`\n", c.Name, req, c.Command)
	}
	if q.Len() == 0 {
		q.WriteString("   - (none configured)\n")
	}
	acc := t.AcceptanceCriteria
	if strings.TrimSpace(acc) == "" {
		acc = "All tests pass"
	}
	desc := t.Description
	if strings.TrimSpace(desc) == "" {
		desc = t.Title
	}
	data := promptData{TaskID: t.ID, Title: t.Title, Description: desc, Acceptance: acc, Branch: branch, Agent: agent,
		QualityCommands: strings.TrimRight(q.String(), "\n"),
		CompleteTag:     "<chorus>COMPLETE</chorus>", BlockedTag: "<chorus>BLOCKED: reason</chorus>",
		NothingTag: "<chorus>COMPLETE: " + signal.NothingToChange + ": why</chorus>",
		Chorus:     chorusCommand(d.chorus)}
	var b bytes.Buffer
	if err := tpl.Execute(&b, data); err != nil {
		return "", fmt.Errorf(".chorus/prompts/impl-agent.md: %v", err)
	}
	if !strings.Contains(string(src), "{{.Chorus}}") && data.Chorus != "chorus" {
		// A prompt written before {{.Chorus}} existed names a bare chorus.
		out := strings.ReplaceAll(b.String(), "`chorus signal", "`"+data.Chorus+" signal")
		b.Reset()
		b.WriteString(out)
	}
	// PATTERNS.md and the learnings reach every agent: no CLI reads them
	// by itself. AGENTS.md only where the profile asks (Claude Code, Codex
	// and OpenCode read project instructions on their own).
	parts := []struct{ head, path string }{
		{"# Project Patterns", d.patterns},
		{"# Relevant Learnings", d.learnings},
	}
	if p.InjectContext {
		parts = append([]struct{ head, path string }{{"# Project Context", filepath.Join(d.root, "AGENTS.md")}}, parts...)
	}
	var out strings.Builder
	for _, part := range parts {
		c, err := os.ReadFile(part.path)
		if err != nil || len(bytes.TrimSpace(c)) == 0 {
			continue
		}
		text := strings.TrimSpace(string(c))
		if strings.HasPrefix(text, "# ") {
			// The file names itself: one heading, not two.
			fmt.Fprintf(&out, "%s\n\n", text)
		} else {
			fmt.Fprintf(&out, "%s\n\n%s\n\n", part.head, text)
		}
	}
	if out.Len() == 0 {
		return b.String(), nil
	}
	out.WriteString("# Task\n\n")
	out.WriteString(b.String())
	return out.String(), nil
}

// dirs are the paths prompt building reads, and the chorus executable
// it names.
type dirs struct {
	root, prompts, patterns, learnings string
	chorus                             string
}

// chorusCommand is how a prompt names the chorus executable: its absolute
// path, single-quoted when a shell would split or expand it; plain
// "chorus" when it is not known.
func chorusCommand(exe string) string {
	if exe == "" {
		return "chorus"
	}
	for _, c := range exe {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("/._+-,:@", c)) {
			return shellQuote(exe)
		}
	}
	return exe
}

// handover is the prompt of a respawned agent: the task again, plus what
// the previous iteration changed and why it did not finish.
func handover(prompt string, iteration int, changes, failure, ledger string) string {
	var b strings.Builder
	b.WriteString(prompt)
	fmt.Fprintf(&b, "\n\n## Handover (iteration %d)\n", iteration)
	b.WriteString("You are continuing this task in the same worktree; earlier work is already here.\n")
	if strings.TrimSpace(changes) != "" {
		fmt.Fprintf(&b, "\nWhat changed so far:\n%s\n", strings.TrimSpace(changes))
	}
	if strings.TrimSpace(ledger) != "" {
		fmt.Fprintf(&b, "\nWhat earlier iterations recorded in the task's ledger (files changed, notes; record your own with `chorus note TEXT`):\n%s\n", strings.TrimSpace(ledger))
	}
	if strings.TrimSpace(failure) != "" {
		fmt.Fprintf(&b, "\nWhy the task is not finished yet:\n%s\n", strings.TrimSpace(failure))
	}
	return b.String()
}

// feedback is typed into a live agent when its COMPLETE did not pass.
func feedback(failure string) string {
	return "The task is not complete yet. " + oneLine(failure, 1500) + " Fix this, make sure every required quality command passes, then signal COMPLETE again."
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = "…" + s[len(s)-max:]
	}
	return s
}
