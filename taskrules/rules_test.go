package taskrules

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// The file init installs parses to the defaults it documents.
func TestParseTemplate(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", ".chorus-template", "task-rules.md"))
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse("task-rules.md", string(b))
	if err != nil {
		t.Fatal(err)
	}
	if r.MaxAcceptanceCriteria != 10 || r.MaxDescriptionLength != 500 || r.RequireTestFile || r.Naming != nil || r.ForbiddenWords != nil {
		t.Fatalf("template parsed to %+v", r)
	}
}

const specRules = `# Task Rules

## Configurable Limits

| Setting | Value | Description |
|---------|-------|-------------|
| max_acceptance_criteria | 10 | Maximum criteria per task |
| max_description_length | 500 | Maximum chars for description |

## Optional Rules

- [ ] require_test_file: Require explicit test file reference
- [x] enforce_naming: Pattern ` + "`^F\\d+[a-z]?: .+`" + `
- [ ] forbidden_words: simple, easy, just, obviously
`

func TestParseSpecExample(t *testing.T) {
	r, err := Parse("task-rules.md", specRules)
	if err != nil {
		t.Fatal(err)
	}
	if r.NamingPattern != `^F\d+[a-z]?: .+` || r.RequireTestFile || r.ForbiddenWords != nil {
		t.Fatalf("parsed %+v", r)
	}
	on := strings.NewReplacer("- [ ] require_test_file", "- [x] require_test_file", "- [ ] forbidden_words", "- [X] forbidden_words",
		"| 10 |", "| 3 |", "| 500 |", "| 0 |").Replace(specRules)
	r, err = Parse("task-rules.md", on)
	if err != nil {
		t.Fatal(err)
	}
	if !r.RequireTestFile || !reflect.DeepEqual(r.ForbiddenWords, []string{"simple", "easy", "just", "obviously"}) ||
		r.MaxAcceptanceCriteria != 3 || r.MaxDescriptionLength != 0 {
		t.Fatalf("parsed %+v", r)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, text, want string
		line             int
	}{
		{"unknown setting", "## Configurable Limits\n| max_criteria | 4 | x |\n", `unknown setting "max_criteria"; known settings: max_acceptance_criteria, max_description_length, max_title_length`, 2},
		{"not a number", "## Configurable Limits\n| Setting | Value |\n|--|--|\n| max_description_length | lots | x |\n", `setting max_description_length: "lots" is not valid`, 4},
		{"negative", "## Configurable Limits\n| max_acceptance_criteria | -1 |\n", `"-1" is not valid`, 2},
		{"empty value", "## Configurable Limits\n| max_acceptance_criteria |  | x |\n", "has no value", 2},
		{"unknown rule", "## Optional Rules\n- [x] require_tests: yes\n", `unknown optional rule "require_tests"; known rules: require_test_file, enforce_naming, forbidden_words`, 2},
		{"bad checkbox", "## Optional Rules\n- [y] forbidden_words: a\n", "is written `- [ ] name: …`", 2},
		{"bad pattern", "## Optional Rules\n- [x] enforce_naming: Pattern `^F(`\n", "not a valid regular expression", 2},
		{"no pattern", "## Optional Rules\n- [x] enforce_naming:\n", "needs a pattern", 2},
		{"no words", "## Optional Rules\n- [x] forbidden_words: \n", "lists no words", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("rules.md", tc.text)
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a ParseError", err)
			}
			if pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "rules.md:") {
				t.Fatalf("got %q (line %d), want line %d containing %q", err, pe.Line, tc.line, tc.want)
			}
		})
	}
	// Disabled rules are not checked for their arguments, and prose outside
	// the two sections is ignored.
	if _, err := Parse("r", "Intro | with | pipes\n## Optional Rules\n- [ ] enforce_naming: Pattern `(`\n"); err != nil {
		t.Fatal(err)
	}
}

func task(id, title, desc, acc string, deps ...string) beads.Task {
	t := beads.Task{ID: id, Title: title, Description: desc, AcceptanceCriteria: acc, Status: beads.StatusOpen}
	for _, d := range deps {
		t.Dependencies = append(t.Dependencies, beads.Dependency{IssueID: id, DependsOnID: d, Type: "blocks"})
	}
	return t
}

func rules(t *testing.T, text string) Rules {
	t.Helper()
	r, err := Parse("task-rules.md", text)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRules(t *testing.T) {
	fifteen := strings.Repeat("- GET /items returns 200\n", 15)
	good := "`go test ./auth` passes"
	all := rules(t, strings.NewReplacer("- [ ] require_test_file", "- [x] require_test_file", "- [ ] forbidden_words", "- [x] forbidden_words").Replace(specRules))
	for _, tc := range []struct {
		name  string
		rules Rules
		task  beads.Task
		want  []string // rule ids, in order
		msg   string   // part of the first message
	}{
		{"valid", Default(), task("T01", "Add login endpoint", "POST /login", "POST /login with a good password returns 200 and a token"), nil, ""},
		{"no criteria", Default(), task("T02", "Add login endpoint", "", ""), []string{RuleAcceptance}, "no acceptance criteria"},
		{"spec T03: 15 criteria, max 10", Default(), task("T03", "Build auth system", "", fifteen), []string{MaxAcceptanceCriteria}, "15 acceptance criteria (max: 10)"},
		{"ten criteria is the limit", Default(), task("T03", "Build auth system", "", strings.Repeat("- x returns 1\n", 10)), nil, ""},
		{"semicolons count", Default(), task("T04", "Add cache", "", "a returns 1; b returns 2; c is 3; d is 4; e is 5; f is 6; g is 7; h is 8; i is 9; j is 10; k is 11"), []string{MaxAcceptanceCriteria}, "11 acceptance criteria"},
		{"spec T11: works correctly", Default(), task("T11", "Add checkout", "", "works correctly"), []string{RuleVague}, `"works correctly" is vague`},
		{"vague among good", Default(), task("T12", "Add checkout", "", "1. POST /checkout returns 201\n2. It should work as expected"), []string{RuleVague}, `"It should work as expected"`},
		{"two jobs", Default(), task("T13", "Add login and write docs", "", good), []string{RuleAtomic}, "names two jobs (add … and write …)"},
		{"and inside one job", Default(), task("T14", "Add login and logout buttons", "", good), nil, ""},
		{"description 501", Default(), task("T15", "Add x", strings.Repeat("é", 501), good), []string{MaxDescriptionLength}, "501 characters (max: 500)"},
		{"description 500", Default(), task("T15", "Add x", strings.Repeat("é", 500), good), nil, ""},
		{"naming", rules(t, specRules), task("T16", "Add login", "", good), []string{EnforceNaming}, "does not match the pattern ^F\\d+[a-z]?: .+"},
		{"naming ok", rules(t, specRules), task("T16", "F12b: Add login", "", good), nil, ""},
		{"forbidden", all, task("F1: x", "F1: Just add a simple cache", "See cache_test.go", "GET returns 200"), []string{ForbiddenWords}, "just, simple"},
		{"forbidden is whole words", all, task("F2", "F2: Adjust the cache", "cache_test.go", "easyjson output parses"), nil, ""},
		{"test file", all, task("F3", "F3: Add cache", "", "GET returns 200"), []string{RequireTestFile}, "no test file named"},
		{"test file in criteria", all, task("F3", "F3: Add cache", "", "web/cache.spec.ts passes"), nil, ""},
		{"limit off", rules(t, "## Configurable Limits\n| max_acceptance_criteria | 0 |\n"), task("T20", "Add x", "", fifteen), nil, ""},
		{"one letter is not checkable", Default(), task("T22", "Add cache", "", "a"), []string{RuleVague}, `"a" is vague`},
		{"one word is too short", Default(), task("T22", "Add cache", "", "x"), []string{RuleVague}, `"x" is too short to check`},
		{"one word among good", Default(), task("T22", "Add cache", "", "GET /cache returns 200\n- tested"), []string{RuleVague}, `"tested" is too short to check`},
		{"two words pass", Default(), task("T22", "Add cache", "", "tests pass"), nil, ""},
		{"nine files", Default(), task("T23", "Add cache", "Touch a.go b.go c.go d.go e.go f.go g.go h.go i.go", good), []string{RuleContextFit}, "names 9 files (max: 8)"},
		{"eight files fit", Default(), task("T23", "Add cache", "Touch a.go b.go c.go d.go e.go f.go g.go cmd/h.go", good), nil, ""},
		{"same file twice", Default(), task("T23", "Add cache", "a.go ./a.go b/c.go b/c.go", good), nil, ""},
		{"whole code base", Default(), task("T24", "Rename the logger", "Across the entire codebase", good), []string{RuleContextFit}, `covers "the entire codebase"`},
		{"every file in", Default(), task("T24", "Add license headers", "to all files in the repository", good), []string{RuleContextFit}, `covers "all files in"`},
		{"long text", rules(t, "## Configurable Limits\n| max_description_length | 0 |\n"), task("T25", "Add x", strings.Repeat("word ", 1700), good), []string{RuleContextFit}, "characters (max: 8000)"},
		{"title limit", rules(t, "## Configurable Limits\n| max_title_length | 10 |\n"), task("T21", "Add the login endpoint", "", good), []string{MaxTitleLength}, "22 characters (max: 10)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Check(tc.task, tc.rules)
			var ids []string
			for _, v := range got {
				ids = append(ids, v.Rule)
				if v.TaskID != tc.task.ID {
					t.Errorf("violation on %q, want %q", v.TaskID, tc.task.ID)
				}
			}
			if !reflect.DeepEqual(ids, tc.want) {
				t.Fatalf("rules %v, want %v: %v", ids, tc.want, got)
			}
			if tc.msg != "" && !strings.Contains(got[0].Message, tc.msg) {
				t.Fatalf("message %q does not say %q", got[0].Message, tc.msg)
			}
		})
	}
}

func TestDependencies(t *testing.T) {
	ok := "GET returns 200"
	for _, tc := range []struct {
		name  string
		tasks []beads.Task
		want  []string // messages' key parts
	}{
		{"chain", []beads.Task{task("T01", "Add a", "", ok), task("T02", "Add b", "", ok, "T01"), task("T03", "Add c", "", ok, "T02", "T01")}, nil},
		{"spec: T07 → T03 → T07", []beads.Task{task("T03", "Add a", "", ok, "T07"), task("T07", "Add b", "", ok, "T03")}, []string{"T03 acyclic circular dependency T03 → T07 → T03"}},
		{"self", []beads.Task{task("T01", "Add a", "", ok, "T01")}, []string{"T01 acyclic circular dependency T01 → T01"}},
		{"two cycles and a tail", []beads.Task{
			task("a", "Add a", "", ok, "b"), task("b", "Add b", "", ok, "c"), task("c", "Add c", "", ok, "a"),
			task("d", "Add d", "", ok, "a"), task("e", "Add e", "", ok, "f"), task("f", "Add f", "", ok, "e"),
		}, []string{"a acyclic circular dependency a → b → c → a", "e acyclic circular dependency e → f → e"}},
		{"missing", []beads.Task{task("T01", "Add a", "", ok, "T99")}, []string{"T01 missing_dependency depends on T99"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Validate(tc.tasks, Default())
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %d violations", got, len(tc.want))
			}
			for i, v := range got {
				if !strings.HasPrefix(v.TaskID+" "+v.Rule+" "+v.Message, tc.want[i]) {
					t.Fatalf("violation %d is %q, want %q…", i, v.TaskID+" "+v.Rule+" "+v.Message, tc.want[i])
				}
			}
		})
	}
}

// Closed tasks are history: their text is not judged, their edges are.
func TestClosedTasks(t *testing.T) {
	closed := task("T01", "Add x and write y", "", "")
	closed.Status = beads.StatusClosed
	if got := Validate([]beads.Task{closed}, Default()); len(got) != 0 {
		t.Fatalf("closed task judged: %v", got)
	}
}

func TestCriteria(t *testing.T) {
	got := Criteria("- [ ] one\n* two\n\n3. three\n+ [x] four\n")
	if !reflect.DeepEqual(got, []string{"one", "two", "three", "four"}) {
		t.Fatalf("%q", got)
	}
}

// The init wizard reads the template's limits and writes them back
// changed; the file still parses, to the new values, and nothing else in
// it moves.
func TestLimitsRoundTrip(t *testing.T) {
	text := "# Task Rules\n\n## Configurable Limits\n\n| Setting | Value | Description |\n|---------|-------|-------------|\n| max_acceptance_criteria | 10 | Maximum criteria per task |\n| `max_description_length` | 500 | Maximum chars |\n\n## Optional Rules\n\n- [ ] require_test_file: x\n"
	ls := Limits(text)
	if len(ls) != 2 || ls[0] != (Limit{MaxAcceptanceCriteria, 10, "Maximum criteria per task"}) || ls[1].Name != MaxDescriptionLength || ls[1].Value != 500 {
		t.Fatalf("limits %+v", ls)
	}
	out, err := SetLimits(text, map[string]int{MaxAcceptanceCriteria: 6, MaxDescriptionLength: 0})
	if err != nil {
		t.Fatal(err)
	}
	r, err := Parse("rules.md", out)
	if err != nil || r.MaxAcceptanceCriteria != 6 || r.MaxDescriptionLength != 0 {
		t.Fatalf("parsed %+v %v\n%s", r, err, out)
	}
	if a, b := strings.Split(text, "\n"), strings.Split(out, "\n"); len(a) != len(b) || a[0] != b[0] || a[len(a)-2] != b[len(b)-2] {
		t.Fatalf("other lines moved:\n%s", out)
	}
	if _, err := SetLimits(text, map[string]int{MaxTitleLength: 80}); err == nil || !strings.Contains(err.Error(), "not in the Configurable Limits table") {
		t.Fatalf("missing row: %v", err)
	}
	if _, err := SetLimits(text, map[string]int{MaxAcceptanceCriteria: -1}); err == nil {
		t.Fatal("negative limit accepted")
	}
}

func TestCycleThrough(t *testing.T) {
	dep := func(id string, on ...string) beads.Task {
		t := beads.Task{ID: id, Status: beads.StatusOpen}
		for _, d := range on {
			t.Dependencies = append(t.Dependencies, beads.Dependency{IssueID: id, DependsOnID: d, Type: "blocks"})
		}
		return t
	}
	closed := func(tk beads.Task) beads.Task { tk.Status = beads.StatusClosed; return tk }
	for _, c := range []struct {
		name  string
		tasks []beads.Task
		id    string
		want  string
	}{
		{"two-task cycle", []beads.Task{dep("a", "b"), dep("b", "a")}, "a", "a b a"},
		{"three, from the middle", []beads.Task{dep("a", "b"), dep("b", "c"), dep("c", "a")}, "b", "b c a b"},
		{"shortest of two", []beads.Task{dep("a", "b", "c"), dep("b", "c"), dep("c", "a")}, "a", "a c a"},
		{"waiting is not a cycle", []beads.Task{dep("a", "b"), dep("b")}, "a", ""},
		{"downstream of a cycle is not on it", []beads.Task{dep("x", "a"), dep("a", "b"), dep("b", "a")}, "x", ""},
		{"a closed task breaks it", []beads.Task{dep("a", "b"), closed(dep("b", "a"))}, "a", ""},
		{"self", []beads.Task{dep("a", "a")}, "a", "a a"},
		{"unknown id", []beads.Task{dep("a", "b"), dep("b", "a")}, "z", ""},
	} {
		if got := strings.Join(CycleThrough(c.tasks, c.id), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
