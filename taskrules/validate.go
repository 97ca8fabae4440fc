package taskrules

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/beads"
)

// Violation is one broken rule.
type Violation struct {
	TaskID  string `json:"taskId"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

func (v Violation) String() string { return v.TaskID + " [" + v.Rule + "] " + v.Message }

// Criteria splits acceptance criteria into items: one per line, list
// markers and checkboxes removed; a single line with semicolons counts as
// several.
func Criteria(s string) []string {
	var out []string
	lines := strings.Split(s, "\n")
	if len(lines) == 1 && strings.Contains(s, ";") {
		lines = strings.Split(s, ";")
	}
	for _, l := range lines {
		l = strings.TrimSpace(listMarkRe().ReplaceAllString(strings.TrimSpace(l), ""))
		if l != "" {
			out = append(out, l)
		}
	}
	return out
}

var (
	listMarkRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:[-*+•]|\d+[.)])?\s*(?:\[[ xX]\])?\s*`) })
	wordRe     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[\p{L}\p{N}_']+`) })
	// A test file named anywhere: Go, JS/TS, Python, Ruby, Rust and a tests/ directory.
	testFileRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)[\w./-]*(?:_test\.go|\.(?:test|spec)\.[cm]?[jt]sx?|test_\w+\.py|\w+_test\.py|_spec\.rb|\btests?/[\w./-]+\.\w+)`)
	})
	// Verbs that start a job: "Add X and write Y" is two tasks.
	jobVerbs = map[string]bool{
		"add": true, "implement": true, "write": true, "create": true, "fix": true, "refactor": true, "build": true,
		"update": true, "remove": true, "delete": true, "document": true, "deploy": true, "migrate": true, "rewrite": true,
		"design": true, "set": true, "setup": true, "configure": true, "introduce": true, "replace": true, "rename": true,
		"test": true, "support": true, "integrate": true,
	}
	// Words that promise nothing checkable on their own.
	vagueWords = map[string]bool{
		"it": true, "this": true, "that": true, "the": true, "a": true, "an": true, "everything": true, "all": true,
		"should": true, "must": true, "will": true, "is": true, "are": true, "be": true, "and": true, "as": true,
		"works": true, "work": true, "working": true, "correctly": true, "correct": true, "properly": true, "proper": true,
		"fine": true, "good": true, "well": true, "expected": true, "intended": true, "done": true, "complete": true,
		"completed": true, "finished": true, "ok": true, "okay": true, "feature": true, "functionality": true,
		"code": true, "implemented": true, "nicely": true, "right": true, "handled": true, "handles": true,
		"looks": true, "clean": true, "better": true, "improved": true, "great": true, "fast": true, "robust": true,
	}
)

// Validate checks tasks against r. Closed tasks are history and only count
// for dependency checks. Violations come in task order, then rule order.
func Validate(tasks []beads.Task, r Rules) []Violation {
	var out []Violation
	for _, t := range tasks {
		if t.Status == beads.StatusClosed {
			continue
		}
		out = append(out, Check(t, r)...)
	}
	out = append(out, Dependencies(tasks)...)
	return out
}

// Check applies the per-task rules (everything but the dependency graph).
func Check(t beads.Task, r Rules) []Violation {
	var out []Violation
	add := func(rule, format string, a ...any) {
		out = append(out, Violation{TaskID: t.ID, Rule: rule, Message: fmt.Sprintf(format, a...)})
	}
	crit := Criteria(t.AcceptanceCriteria)
	if len(crit) == 0 {
		add(RuleAcceptance, "no acceptance criteria: add at least one that a command or a test can check (--acceptance)")
	}
	for _, c := range crit {
		switch {
		case isVague(c):
			add(RuleVague, "criterion %q is vague: say what can be checked (a command's output, a test that passes, a value returned)", clip(c, 60))
		case tooShort(c):
			add(RuleVague, "criterion %q is too short to check: name what is checked and the result (e.g. \"go test ./cache passes\", \"GET /todos returns 200\")", clip(c, 60))
		}
	}
	if why := contextFit(t); why != "" {
		add(RuleContextFit, "%s: one agent works a task in one context window; split it into smaller tasks", why)
	}
	if a, b, ok := twoJobs(t.Title); ok {
		add(RuleAtomic, "title %q names two jobs (%s … and %s …): split it into two tasks", clip(t.Title, 60), a, b)
	}
	if r.MaxAcceptanceCriteria > 0 && len(crit) > r.MaxAcceptanceCriteria {
		add(MaxAcceptanceCriteria, "%d acceptance criteria (max: %d): split the task", len(crit), r.MaxAcceptanceCriteria)
	}
	if n := utf8.RuneCountInString(t.Description); r.MaxDescriptionLength > 0 && n > r.MaxDescriptionLength {
		add(MaxDescriptionLength, "description is %d characters (max: %d): shorten it or split the task", n, r.MaxDescriptionLength)
	}
	if n := utf8.RuneCountInString(t.Title); r.MaxTitleLength > 0 && n > r.MaxTitleLength {
		add(MaxTitleLength, "title is %d characters (max: %d)", n, r.MaxTitleLength)
	}
	if r.RequireTestFile && !testFileRe().MatchString(t.Description+"\n"+t.AcceptanceCriteria) {
		add(RequireTestFile, "no test file named: name the test that proves it (e.g. auth_test.go, login.spec.ts) in the description or criteria")
	}
	if r.Naming != nil && !r.Naming.MatchString(t.Title) {
		add(EnforceNaming, "title %q does not match the pattern %s", clip(t.Title, 60), r.NamingPattern)
	}
	if len(r.ForbiddenWords) > 0 {
		seen := map[string]bool{}
		var found []string
		for _, w := range wordRe().FindAllString(strings.ToLower(t.Title+"\n"+t.Description+"\n"+t.AcceptanceCriteria), -1) {
			for _, f := range r.ForbiddenWords {
				if w == f && !seen[w] {
					seen[w] = true
					found = append(found, w)
				}
			}
		}
		if len(found) > 0 {
			add(ForbiddenWords, "uses forbidden word(s): %s", strings.Join(found, ", "))
		}
	}
	return out
}

// isVague: every word is one that promises nothing checkable.
func isVague(c string) bool {
	ws := wordRe().FindAllString(strings.ToLower(c), -1)
	if len(ws) == 0 {
		return true
	}
	for _, w := range ws {
		if !vagueWords[w] {
			return false
		}
	}
	return true
}

// tooShort: a criterion of one word ("a", "tests", "x") names neither
// what is checked nor the result.
func tooShort(c string) bool {
	return len(wordRe().FindAllString(c, -1)) < 2
}

// Context-fit limits: what a task may carry and still be one agent's work
// in one context window. A task naming more files than this, or whose
// text alone is this long, spans more than one agent reads and keeps.
const (
	ContextFitFiles = 8
	ContextFitChars = 8000 // about 2000 tokens of instructions
)

var (
	// A source file, with or without its directory: main.go, web/app.tsx.
	pathRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?:[\w.-]+/)*[\w-]+\.(?:go|py|rb|rs|js|jsx|ts|tsx|mjs|cjs|java|kt|c|h|cc|cpp|hpp|cs|php|swift|scala|sql|sh|md|json|ya?ml|toml|html|css|vue|svelte)\b`)
	})
	// The whole of something: a task over it does not fit one context.
	wholeRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)\b(?:(?:the\s+)?(?:entire|whole)\s+(?:codebase|code\s*base|repo|repository|project|application|app|system|monorepo)|(?:all|every)\s+(?:files?|modules?|packages?|services?|endpoints?|components?)\s+(?:in|of|across)\b)`)
	})
)

// contextFit says why a task would not fit one agent's context window, or
// "": its text is too long, it names too many files, or it covers the
// whole code base.
func contextFit(t beads.Task) string {
	text := t.Title + "\n" + t.Description + "\n" + t.AcceptanceCriteria
	if n := utf8.RuneCountInString(text); n > ContextFitChars {
		return fmt.Sprintf("its text is %d characters (max: %d)", n, ContextFitChars)
	}
	files := map[string]bool{}
	for _, p := range pathRe().FindAllString(text, -1) {
		if !strings.Contains(p, "://") {
			files[strings.TrimPrefix(p, "./")] = true
		}
	}
	if len(files) > ContextFitFiles {
		return fmt.Sprintf("it names %d files (max: %d)", len(files), ContextFitFiles)
	}
	if m := wholeRe().FindString(text); m != "" {
		return fmt.Sprintf("it covers %q", strings.Join(strings.Fields(m), " "))
	}
	return ""
}

// twoJobs finds "<verb> … and <verb> …" in a title.
func twoJobs(title string) (string, string, bool) {
	ws := wordRe().FindAllString(strings.ToLower(title), -1)
	if len(ws) == 0 || !jobVerbs[ws[0]] {
		return "", "", false
	}
	for i := 1; i+1 < len(ws); i++ {
		if ws[i] == "and" && jobVerbs[ws[i+1]] {
			return ws[0], ws[i+1], true
		}
	}
	return "", "", false
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// Dependencies checks the graph: dependencies on tasks that do not exist,
// and every cycle (one violation per cycle, on its first task in id order).
func Dependencies(tasks []beads.Task) []Violation {
	var out []Violation
	deps := map[string][]string{}
	for _, t := range tasks {
		deps[t.ID] = t.BlockedBy()
	}
	for _, t := range tasks {
		for _, d := range deps[t.ID] {
			if _, ok := deps[d]; !ok {
				out = append(out, Violation{TaskID: t.ID, Rule: RuleMissingDep, Message: fmt.Sprintf("depends on %s, which is not a task: remove the dependency (chorus task dep remove %s %s)", d, t.ID, d)})
			}
		}
	}
	for _, c := range Cycles(deps) {
		out = append(out, Violation{TaskID: c[0], Rule: RuleAcyclic,
			Message: fmt.Sprintf("circular dependency %s → %s: remove one of these dependencies", strings.Join(c, " → "), c[0])})
	}
	return out
}

// Cycles returns one cycle per strongly connected component that has one
// (Tarjan), each as a path starting at its smallest id, in id order.
func Cycles(deps map[string][]string) [][]string {
	ids := make([]string, 0, len(deps))
	for id := range deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	index, low := map[string]int{}, map[string]int{}
	onStack := map[string]bool{}
	var stack []string
	var comps [][]string
	n := 0
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = n, n
		n++
		stack = append(stack, v)
		onStack[v] = true
		for _, w := range deps[v] {
			if _, ok := deps[w]; !ok {
				continue
			}
			if _, seen := index[w]; !seen {
				visit(w)
				low[v] = min(low[v], low[w])
			} else if onStack[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for _, id := range ids {
		if _, seen := index[id]; !seen {
			visit(id)
		}
	}
	var out [][]string
	for _, comp := range comps {
		in := map[string]bool{}
		for _, c := range comp {
			in[c] = true
		}
		sort.Strings(comp)
		start := comp[0]
		if len(comp) == 1 && !contains(deps[start], start) {
			continue
		}
		out = append(out, cyclePath(start, deps, in))
	}
	sort.Slice(out, func(i, j int) bool { return out[i][0] < out[j][0] })
	return out
}

// cyclePath walks from start back to start inside one component (BFS, so
// the path is a shortest one).
func cyclePath(start string, deps map[string][]string, in map[string]bool) []string {
	prev := map[string]string{}
	queue := []string{start}
	seen := map[string]bool{}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		ns := append([]string(nil), deps[v]...)
		sort.Strings(ns)
		for _, w := range ns {
			if !in[w] {
				continue
			}
			if w == start {
				path := []string{v}
				for p := v; p != start; {
					p = prev[p]
					path = append(path, p)
				}
				// path is v … start backwards; reverse to start … v.
				for i, j := 0, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return path
			}
			if !seen[w] {
				seen[w] = true
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return []string{start}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

// CycleThrough returns the shortest dependency cycle through id among the
// tasks not closed (id first, and last again), or nil: a task on one
// waits on itself and never becomes ready.
func CycleThrough(tasks []beads.Task, id string) []string {
	deps := map[string][]string{}
	for _, t := range tasks {
		if t.Status != beads.StatusClosed {
			deps[t.ID] = t.BlockedBy()
		}
	}
	if _, ok := deps[id]; !ok {
		return nil
	}
	// Breadth first from id's dependencies back to id.
	prev := map[string]string{}
	queue := []string{id}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, w := range deps[v] {
			if _, open := deps[w]; !open {
				continue
			}
			if w == id {
				path := []string{id}
				for x := v; x != id; x = prev[x] {
					path = append(path, x)
				}
				// path is id, then v back towards id: reverse all but the first.
				for i, j := 1, len(path)-1; i < j; i, j = i+1, j-1 {
					path[i], path[j] = path[j], path[i]
				}
				return append(path, id)
			}
			if _, seen := prev[w]; !seen {
				prev[w] = v
				queue = append(queue, w)
			}
		}
	}
	return nil
}
