// Package taskrules checks tasks against the planning rules: the built-in
// ones (atomic, testable, acyclic, context-fit, as far as a program can
// judge them) and the limits and optional rules a project sets in
// .chorus/task-rules.md. It is pure: tasks and the file's text in,
// violations out.
package taskrules

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Setting and rule names, as task-rules.md spells them; a violation's Rule
// is one of these.
const (
	MaxAcceptanceCriteria = "max_acceptance_criteria"
	MaxDescriptionLength  = "max_description_length"
	MaxTitleLength        = "max_title_length"
	RequireTestFile       = "require_test_file"
	EnforceNaming         = "enforce_naming"
	ForbiddenWords        = "forbidden_words"

	// Built-in rules.
	RuleAcceptance = "acceptance_required" // testable: criteria present
	RuleVague      = "vague_criteria"      // testable: not vague words alone
	RuleAtomic     = "atomic"              // one responsibility
	RuleAcyclic    = "acyclic"             // no dependency cycles
	RuleMissingDep = "missing_dependency"  // a dependency names no task
	RuleContextFit = "context_fit"         // fits one agent's context window
)

// Rules is a parsed task-rules.md.
type Rules struct {
	MaxAcceptanceCriteria int // 0: no limit
	MaxDescriptionLength  int // characters; 0: no limit
	MaxTitleLength        int // characters; 0: no limit
	RequireTestFile       bool
	Naming                *regexp.Regexp // nil: any title
	NamingPattern         string
	ForbiddenWords        []string // lower case; empty: none
}

// Default is what the installed template says, used when a project has no
// task-rules.md.
func Default() Rules {
	return Rules{MaxAcceptanceCriteria: 10, MaxDescriptionLength: 500}
}

// limits are the table's settings: name → field.
var limits = map[string]func(*Rules) *int{
	MaxAcceptanceCriteria: func(r *Rules) *int { return &r.MaxAcceptanceCriteria },
	MaxDescriptionLength:  func(r *Rules) *int { return &r.MaxDescriptionLength },
	MaxTitleLength:        func(r *Rules) *int { return &r.MaxTitleLength },
}

var optional = []string{RequireTestFile, EnforceNaming, ForbiddenWords}

// ParseError is a malformed task-rules.md: the line and what is wrong.
type ParseError struct {
	Path string
	Line int
	Msg  string
}

func (e *ParseError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.Path, e.Line, e.Msg)
}

var (
	checkboxRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[-*]\s+\[( |x|X)\]\s*(.*)$`) })
	backtickRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("`([^`]*)`") })
)

// Parse reads a task-rules.md. Settings missing from the file keep their
// defaults; unknown settings and rules, bad numbers and bad patterns are
// errors naming the line, so a typo never silently disables a rule. path
// is only used in messages.
func Parse(path, text string) (Rules, error) {
	r := Default()
	section := ""
	bad := func(n int, format string, a ...any) (Rules, error) {
		return Rules{}, &ParseError{Path: path, Line: n, Msg: fmt.Sprintf(format, a...)}
	}
	known := func(m map[string]func(*Rules) *int) string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return strings.Join(ks, ", ")
	}
	for i, raw := range strings.Split(text, "\n") {
		n := i + 1
		l := strings.TrimSpace(raw)
		if strings.HasPrefix(l, "#") {
			h := strings.ToLower(strings.TrimSpace(strings.TrimLeft(l, "#")))
			switch {
			case strings.HasPrefix(h, "configurable limits"):
				section = "limits"
			case strings.HasPrefix(h, "optional rules"):
				section = "optional"
			default:
				section = ""
			}
			continue
		}
		switch section {
		case "limits":
			if !strings.HasPrefix(l, "|") {
				continue
			}
			cells := strings.Split(strings.Trim(l, "|"), "|")
			for j := range cells {
				cells[j] = strings.TrimSpace(cells[j])
			}
			name := strings.Trim(cells[0], "`")
			if strings.EqualFold(name, "setting") || strings.Trim(name, "-: ") == "" {
				continue // header or separator row
			}
			field, ok := limits[name]
			if !ok {
				return bad(n, "unknown setting %q; known settings: %s", name, known(limits))
			}
			if len(cells) < 2 || cells[1] == "" {
				return bad(n, "setting %s has no value; put a whole number in the Value column (0 for no limit)", name)
			}
			v, err := strconv.Atoi(cells[1])
			if err != nil || v < 0 {
				return bad(n, "setting %s: %q is not valid; allowed: a whole number, 0 for no limit", name, cells[1])
			}
			*field(&r) = v
		case "optional":
			if !strings.HasPrefix(l, "-") && !strings.HasPrefix(l, "*") {
				continue
			}
			m := checkboxRe().FindStringSubmatch(l)
			if m == nil {
				return bad(n, "an optional rule is written `- [ ] name: …` (off) or `- [x] name: …` (on); got %q", l)
			}
			on := m[1] != " "
			name, arg, _ := strings.Cut(m[2], ":")
			name, arg = strings.TrimSpace(name), strings.TrimSpace(arg)
			switch name {
			case RequireTestFile:
				r.RequireTestFile = on
			case EnforceNaming:
				if !on {
					continue
				}
				p := arg
				if bm := backtickRe().FindStringSubmatch(arg); bm != nil {
					p = bm[1]
				} else {
					p = strings.TrimSpace(strings.TrimPrefix(strings.TrimPrefix(p, "Pattern"), "pattern"))
				}
				if p == "" {
					return bad(n, "enforce_naming needs a pattern, e.g. `- [x] enforce_naming: Pattern `^F\\d+: .+``")
				}
				re, err := regexp.Compile(p)
				if err != nil {
					return bad(n, "enforce_naming: pattern %q is not a valid regular expression: %v", p, err)
				}
				r.Naming, r.NamingPattern = re, p
			case ForbiddenWords:
				if !on {
					continue
				}
				r.ForbiddenWords = nil
				for _, w := range strings.Split(arg, ",") {
					if w = strings.ToLower(strings.Trim(strings.TrimSpace(w), "`\"'")); w != "" {
						r.ForbiddenWords = append(r.ForbiddenWords, w)
					}
				}
				if len(r.ForbiddenWords) == 0 {
					return bad(n, "forbidden_words is on but lists no words; write them comma-separated after the colon")
				}
			default:
				return bad(n, "unknown optional rule %q; known rules: %s", name, strings.Join(optional, ", "))
			}
		}
	}
	return r, nil
}

// Summary describes the rules in force in a few lines, for prompts.
func (r Rules) Summary() string {
	var b strings.Builder
	b.WriteString("- Every task has acceptance criteria, each one checkable by a command or a test (not vague words like \"works correctly\").\n")
	b.WriteString("- One responsibility per task: a title joining two jobs with \"and\" should be two tasks.\n")
	b.WriteString("- No circular dependencies, and dependencies only on tasks that exist.\n")
	fmt.Fprintf(&b, "- Each task fits one agent's context window: at most %d files named, no task over the whole code base, at most %d characters of text.\n", ContextFitFiles, ContextFitChars)
	if r.MaxAcceptanceCriteria > 0 {
		fmt.Fprintf(&b, "- At most %d acceptance criteria per task (one per line).\n", r.MaxAcceptanceCriteria)
	}
	if r.MaxDescriptionLength > 0 {
		fmt.Fprintf(&b, "- Descriptions of at most %d characters.\n", r.MaxDescriptionLength)
	}
	if r.MaxTitleLength > 0 {
		fmt.Fprintf(&b, "- Titles of at most %d characters.\n", r.MaxTitleLength)
	}
	if r.RequireTestFile {
		b.WriteString("- Name the test file (e.g. auth_test.go, login.spec.ts, test_api.py) in the description or criteria.\n")
	}
	if r.Naming != nil {
		fmt.Fprintf(&b, "- Titles match the pattern %s.\n", r.NamingPattern)
	}
	if len(r.ForbiddenWords) > 0 {
		fmt.Fprintf(&b, "- Never use these words: %s.\n", strings.Join(r.ForbiddenWords, ", "))
	}
	return b.String()
}
