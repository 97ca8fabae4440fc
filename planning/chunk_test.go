package planning

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/taskrules"
)

// body is n numbered lines of prose.
func body(tag string, n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "%s line %d\n", tag, i)
	}
	return b.String()
}

func TestChunks(t *testing.T) {
	type want struct {
		from, to int
		heading  string
	}
	for _, c := range []struct {
		name string
		spec string
		max  int
		want []want
	}{
		{"short spec is one chunk", "# A\n" + body("a", 3), 10, []want{{1, 4, "A"}}},
		{"sections packed while they fit", "# A\n" + body("a", 3) + "# B\n" + body("b", 3) + "# C\n" + body("c", 3), 8,
			[]want{{1, 8, "A"}, {9, 12, "C"}}},
		{"split at headings, never mid-section when it fits", "# A\n" + body("a", 5) + "## B\n" + body("b", 5), 8,
			[]want{{1, 6, "A"}, {7, 12, "B"}}},
		{"a long section is cut at a blank line", "# A\n" + body("a", 5) + "\n" + body("x", 5), 8,
			[]want{{1, 7, "A"}, {8, 12, ""}}},
		{"a long section with no blank line is cut at max", "# A\n" + body("a", 9), 5,
			[]want{{1, 5, "A"}, {6, 10, ""}}},
		{"headings in a code fence do not count", "# A\n```\n# not a heading\n```\n" + body("a", 2) + "# B\n" + body("b", 2), 6,
			[]want{{1, 6, "A"}, {7, 9, "B"}}},
		{"text before the first heading", body("p", 2) + "# A\n" + body("a", 2), 3,
			[]want{{1, 2, ""}, {3, 5, "A"}}},
		{"#hashtag is not a heading", "# A\n#tag\n" + body("a", 2), 3, []want{{1, 3, "A"}, {4, 4, ""}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Chunks(c.spec, c.max)
			lines := strings.Split(strings.TrimRight(c.spec, "\n"), "\n")
			var g []want
			var joined []string
			for i, ch := range got {
				g = append(g, want{ch.From, ch.To, ch.Heading})
				if ch.Index != i+1 || ch.Of != len(got) || ch.To-ch.From+1 > c.max {
					t.Errorf("chunk %d: %+v", i, ch)
				}
				joined = append(joined, ch.Text)
			}
			if fmt.Sprint(g) != fmt.Sprint(c.want) {
				t.Errorf("chunks %v, want %v", g, c.want)
			}
			if strings.Join(joined, "\n") != strings.Join(lines, "\n") {
				t.Errorf("chunks do not add up to the spec")
			}
		})
	}
}

// A spec over ChunkLines: the first prompt carries part 1 only; a later
// part's prompt carries that part and the earlier tasks with their
// dependencies.
func TestChunkPrompts(t *testing.T) {
	spec := "# SPEC\n## Models\n" + body("model", 300) + "## Endpoints\n" + body("endpoint", 300)
	chunks := Chunks(spec, ChunkLines)
	if len(chunks) != 2 || chunks[1].Heading != "Endpoints" {
		t.Fatalf("chunks: %d %+v", len(chunks), chunks[len(chunks)-1].Heading)
	}
	first := Prompt("Plan.", taskrules.Default(), "", Request{SpecPath: "SPEC.md", Spec: spec})
	if !strings.Contains(first, "Part 1/2 (lines 1-302") || !strings.Contains(first, "model line 300") || strings.Contains(first, "endpoint line 1\n") {
		t.Fatalf("first prompt:\n%.600s", first)
	}
	earlier := []beads.Task{
		{ID: "td-1", Title: "Add todo model", Status: beads.StatusOpen},
		{ID: "td-2", Title: "Add user model", Status: beads.StatusOpen, Dependencies: []beads.Dependency{{IssueID: "td-2", DependsOnID: "td-1", Type: "blocks"}}},
		{ID: "td-0", Title: "Old work", Status: beads.StatusClosed},
	}
	second := ChunkPrompt("SPEC.md", spec, chunks[1], earlier)
	for _, want := range []string{"Part 2/2 (lines 303-603, from \"Endpoints\")", "endpoint line 300", "- td-1: Add todo model\n", "- td-2: Add user model (after td-1)"} {
		if !strings.Contains(second, want) {
			t.Errorf("second prompt lacks %q:\n%s", want, second)
		}
	}
	if strings.Contains(second, "model line 1\n") || strings.Contains(second, "Old work") {
		t.Errorf("second prompt carries part 1 or closed tasks:\n%.600s", second)
	}
}
