package ui

import (
	"fmt"
	"strings"
)

// The init wizard answers questions typed at its prompt ("type to ask
// questions"): from what it knows of this setup and a short list of
// topics, without a model — init runs before any agent is set up.

// questionWords start a line that is a question even without its "?".
var questionWords = map[string]bool{"what": true, "why": true, "how": true, "which": true, "where": true,
	"when": true, "can": true, "do": true, "does": true, "is": true, "should": true, "help": true, "?": true}

// isQuestion says whether a typed line asks rather than commands.
func isQuestion(line string) bool {
	line = strings.TrimSpace(line)
	if strings.HasSuffix(line, "?") {
		return true
	}
	first, _, _ := strings.Cut(strings.ToLower(line), " ")
	return questionWords[first]
}

// topic is one thing the wizard can explain: the words that ask for it.
type topic struct {
	words  []string
	answer func(w *wizard) string
}

var initTopics = []topic{
	{[]string{"prefix", "task id", "ids"}, func(w *wizard) string {
		return fmt.Sprintf("Task ids start with the prefix: %s-3ae. Change it at step 2 with \"prefix P\"; tasks already made keep theirs.", w.s.Prefix)
	}},
	{[]string{"agents", "parallel", "how many"}, func(w *wizard) string {
		return fmt.Sprintf("Up to %d agents work at once, each in its own worktree and branch. Change it at step 2 with \"agents N\"; more agents cost more and merge more often.", w.s.MaxAgents)
	}},
	{[]string{"quality", "check", "test", "lint", "required", "optional"}, func(w *wizard) string {
		return "Quality commands run on each finished task before it merges; a required one that fails sends the agent back to work, an optional one only reports. Step 3: \"add NAME CMD\", \"toggle N\"."
	}},
	{[]string{"rule", "limit", "criteria", "task-rules"}, func(w *wizard) string {
		var b []string
		for _, l := range w.s.Limits {
			b = append(b, fmt.Sprintf("%s (%s, now %d)", l.Name, l.Description, l.Value))
		}
		return "Limits every planned task is checked against (.chorus/task-rules.md; 0: no limit): " + strings.Join(b, "; ")
	}},
	{[]string{"bd", "beads", "task store"}, func(w *wizard) string {
		return "Tasks live in Beads: with a bd database in .beads/ Chorus uses bd, otherwise its built-in store in .beads/issues.jsonl. Nothing to install for the built-in one."
	}},
	{[]string{"claude", "codex", "opencode", "agent cli"}, func(w *wizard) string {
		return "Agents are the coding CLIs found on PATH (step 1 lists them); agents.default in .chorus/config.json picks one; `chorus doctor` checks them later."
	}},
	{[]string{"write", "files", "create", "change later", "edit later", "undo"}, func(w *wizard) string {
		return "Confirming writes .chorus/ (config.json, task-rules.md, PATTERNS.md, prompts, hooks) and .agent/learnings.md, and adds runtime paths to .gitignore. All are plain files you can edit later; nothing else in the repository changes."
	}},
	{[]string{"quit", "cancel", "exit", "back"}, func(w *wizard) string {
		return "Esc or \"back\" goes back a step; Ctrl-C quits without writing anything."
	}},
	{[]string{"plan", "next", "after"}, func(w *wizard) string {
		return "After init, with no tasks yet, planning starts: you give a goal or a spec, a Plan Agent writes tasks, Chorus reviews them against the rules, then you choose Semi-Auto or Autopilot."
	}},
}

// answer answers a question about init, or says what it can answer.
func (w *wizard) answer(q string) string {
	low := strings.ToLower(q)
	for _, t := range initTopics {
		for _, word := range t.words {
			if strings.Contains(low, word) {
				return t.answer(w)
			}
		}
	}
	return "I can answer about: the task prefix, agents, quality commands, task rules, Beads (bd), agent CLIs, the files written, planning, quitting. " + stepHelp(w.step)
}

// stepHelp is what the current step takes.
func stepHelp(step int) string {
	return "Here: " + (&wizard{step: step}).hint() + "."
}
