// Package patterns turns learnings that several tasks found on their own
// into suggested additions to `.chorus/PATTERNS.md`: a learning seen in the
// learnings file from two or more different tasks is a pattern every agent
// should know. A person accepts a suggestion (it becomes an entry under
// "## Learned") or dismisses it. Pure functions: the callers read and
// write the files.
package patterns

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode"
)

// Learning is one entry of the learnings file: its text (continuation
// lines joined) and the task its Source line names.
type Learning struct {
	Text string
	Task string
}

// Suggestion is a learning found by at least MinTasks different tasks.
type Suggestion struct {
	ID    string   // short and stable: from the normalised text
	Text  string   // the first wording seen
	Tasks []string // the tasks that found it, in file order
}

// MinTasks is how many different tasks must find a learning before it is
// suggested: one task's discovery may be about that task alone.
const MinTasks = 2

// sourceRE is compiled on first use: every command of the binary runs
// package init, and only a few read learnings.
var sourceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^Source:\s*(\S+)\s*\(`) })

// Parse reads the learnings file's entries ("- " or "* " items, each
// followed by its "  Source: <task> (<date>, <agent>)" line).
func Parse(learnings string) []Learning {
	var out []Learning
	var cur *Learning
	flush := func() {
		if cur != nil && strings.TrimSpace(cur.Text) != "" {
			out = append(out, *cur)
		}
		cur = nil
	}
	for _, l := range strings.Split(learnings, "\n") {
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flush()
			cur = &Learning{Text: strings.TrimSpace(t[2:])}
		case cur == nil:
		case sourceRE().MatchString(t):
			cur.Task = sourceRE().FindStringSubmatch(t)[1]
			flush()
		case t == "" || strings.HasPrefix(t, "#"):
			flush()
		default:
			cur.Text += " " + t
		}
	}
	flush()
	return out
}

// words is the learning's normalised word set: lower case, punctuation
// gone, so "Run `go generate` after editing schema.go." and "run go
// generate after editing schema.go" are one.
func words(s string) []string {
	f := strings.FieldsFunc(strings.ToLower(s), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '_' && r != '.' && r != '/' && r != '-'
	})
	var out []string
	seen := map[string]bool{}
	for _, w := range f {
		w = strings.Trim(w, ".-/")
		if w != "" && !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	sort.Strings(out)
	return out
}

// Same says whether two learnings say the same thing: equal word sets, or
// (for learnings of four words or more) at least 70% of the words shared.
func Same(a, b string) bool {
	wa, wb := words(a), words(b)
	if len(wa) == 0 || len(wb) == 0 {
		return false
	}
	if strings.Join(wa, " ") == strings.Join(wb, " ") {
		return true
	}
	if len(wa) < 4 || len(wb) < 4 {
		return false
	}
	set := map[string]bool{}
	for _, w := range wa {
		set[w] = true
	}
	both := 0
	for _, w := range wb {
		if set[w] {
			both++
		}
	}
	union := len(wa) + len(wb) - both
	return both*10 >= union*7
}

// ID is a learning's suggestion id: the first 8 hex digits of its
// normalised words' hash.
func ID(text string) string {
	h := sha256.Sum256([]byte(strings.Join(words(text), " ")))
	return hex.EncodeToString(h[:4])
}

// Suggest groups the learnings that say the same thing and returns those
// found by MinTasks different tasks, leaving out what PATTERNS.md holds
// already and the ids dismissed.
func Suggest(learnings, patternsMD string, dismissed map[string]bool) []Suggestion {
	var groups []Suggestion
	for _, l := range Parse(learnings) {
		placed := false
		for i := range groups {
			if Same(groups[i].Text, l.Text) {
				if l.Task != "" && !contains(groups[i].Tasks, l.Task) {
					groups[i].Tasks = append(groups[i].Tasks, l.Task)
				}
				placed = true
				break
			}
		}
		if !placed {
			g := Suggestion{ID: ID(l.Text), Text: l.Text}
			if l.Task != "" {
				g.Tasks = []string{l.Task}
			}
			groups = append(groups, g)
		}
	}
	have := Parse(patternsMD)
	var out []Suggestion
	for _, g := range groups {
		if len(g.Tasks) < MinTasks || dismissed[g.ID] || held(have, g.Text) {
			continue
		}
		out = append(out, g)
	}
	return out
}

func held(have []Learning, text string) bool {
	for _, h := range have {
		if Same(h.Text, text) {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// LearnedHeading is the section of PATTERNS.md accepted suggestions go to.
const LearnedHeading = "## Learned"

// Accept returns PATTERNS.md with text added as an entry at the end of the
// "## Learned" section (made at the end when missing). Empty "-"
// placeholders of the template are left as they are.
func Accept(patternsMD, text string) string {
	entry := "- " + strings.Join(strings.Fields(text), " ")
	if strings.TrimSpace(patternsMD) == "" {
		patternsMD = "# Project Patterns\n"
	}
	lines := strings.Split(strings.TrimRight(patternsMD, "\n"), "\n")
	at := -1
	for i, l := range lines {
		if strings.TrimSpace(l) == LearnedHeading {
			at = i
			break
		}
	}
	if at < 0 {
		return strings.Join(lines, "\n") + "\n\n" + LearnedHeading + "\n" + entry + "\n"
	}
	end := at + 1
	for end < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[end]), "#") {
		end++
	}
	last := end // after the section's last non-blank line
	for last > at+1 && strings.TrimSpace(lines[last-1]) == "" {
		last--
	}
	out := append([]string{}, lines[:last]...)
	out = append(out, entry)
	out = append(out, lines[last:]...)
	return strings.Join(out, "\n") + "\n"
}
