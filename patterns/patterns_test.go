package patterns

import (
	"path/filepath"
	"reflect"
	"testing"
)

const learnings = `# Learnings

- Run ` + "`go generate ./...`" + ` after editing schema.go.
  Source: t-1 (2026-01-09, claude)

### Speed
- mb_str_split is faster than preg_split
  for Unicode strings
  Source: t-2 (2026-01-09, codex)
- run go generate ./... after editing schema.go
  Source: t-3 (2026-01-10, claude)
- the API needs a token
  Source: t-3 (2026-01-10, claude)
- The API needs a token!
  Source: t-3 (2026-01-11, claude)
`

func TestParse(t *testing.T) {
	got := Parse(learnings)
	want := []Learning{
		{"Run `go generate ./...` after editing schema.go.", "t-1"},
		{"mb_str_split is faster than preg_split for Unicode strings", "t-2"},
		{"run go generate ./... after editing schema.go", "t-3"},
		{"the API needs a token", "t-3"},
		{"The API needs a token!", "t-3"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %#v", got)
	}
}

func TestSame(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"Run `go generate` after editing schema.go.", "run go generate after editing schema.go", true},
		{"always run go generate after editing schema.go", "run go generate after editing schema.go", true},
		{"always run go generate after editing schema.go", "run go generate after you edit schema.go", false},
		{"use a token", "use the token", false}, // short: only equal word sets count
		{"the API needs a token", "the database needs a migration", false},
		{"", "", false},
	} {
		if got := Same(tc.a, tc.b); got != tc.want {
			t.Errorf("Same(%q, %q) = %v", tc.a, tc.b, got)
		}
	}
}

func TestSuggest(t *testing.T) {
	s := Suggest(learnings, "", nil)
	// The token learning was found twice by one task: not a pattern yet.
	if len(s) != 1 || !reflect.DeepEqual(s[0].Tasks, []string{"t-1", "t-3"}) || s[0].ID != ID("run go generate ./... after editing schema.go") {
		t.Fatalf("got %+v", s)
	}
	if got := Suggest(learnings, "", map[string]bool{s[0].ID: true}); len(got) != 0 {
		t.Fatalf("dismissed, still suggested: %+v", got)
	}
	pm := Accept("", s[0].Text)
	if got := Suggest(learnings, pm, nil); len(got) != 0 {
		t.Fatalf("in PATTERNS.md, still suggested: %+v", got)
	}
}

func TestAccept(t *testing.T) {
	tmpl := "# Project Patterns\n\n## Testing\n-\n\n## Gotchas\n-\n"
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "# Project Patterns\n\n## Learned\n- a b\n"},
		{"template", tmpl, tmpl + "\n## Learned\n- a b\n"},
		{"section exists", "# P\n\n## Learned\n- x\n\n## Gotchas\n- y\n", "# P\n\n## Learned\n- x\n- a b\n\n## Gotchas\n- y\n"},
		{"section last", "# P\n## Learned\n", "# P\n## Learned\n- a b\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Accept(tc.in, "a\n  b"); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestDismissed(t *testing.T) {
	p := filepath.Join(t.TempDir(), DismissedFile)
	if len(ReadDismissed(p)) != 0 {
		t.Fatal("missing file: none dismissed")
	}
	if err := Dismiss(p, "abcd1234"); err != nil {
		t.Fatal(err)
	}
	Dismiss(p, "00000000")
	if d := ReadDismissed(p); !d["abcd1234"] || !d["00000000"] || len(d) != 2 {
		t.Fatalf("got %v", d)
	}
}
