package planning

import (
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/beads"
)

// Chunk is one part of a long spec, planned in a turn of its own.
type Chunk struct {
	Index, Of int    // 1-based; Of is the number of chunks
	From, To  int    // 1-based line numbers, inclusive
	Heading   string // the first heading in it, "" when it has none
	Text      string
}

// Chunks splits a spec along its Markdown headings into parts of at most
// max lines: whole sections are packed together while they fit; a
// section longer than max is cut at a blank line (else at max lines).
// Headings inside fenced code blocks do not count. A spec of at most max
// lines is one chunk.
func Chunks(spec string, max int) []Chunk {
	lines := strings.Split(strings.TrimRight(spec, "\n"), "\n")
	if max <= 0 {
		max = ChunkLines
	}
	// Section starts: line 0 and every heading outside a fence.
	var starts []int
	fence := ""
	for i, l := range lines {
		t := strings.TrimSpace(l)
		switch {
		case fence != "":
			if strings.HasPrefix(t, fence) {
				fence = ""
			}
		case strings.HasPrefix(t, "```"), strings.HasPrefix(t, "~~~"):
			fence = t[:3]
		case isHeading(l) && i > 0:
			starts = append(starts, i)
		}
	}
	starts = append([]int{0}, starts...)
	starts = append(starts, len(lines))
	// Pieces: sections, the long ones cut to fit.
	type span struct{ from, to int } // [from, to)
	var pieces []span
	for k := 0; k+1 < len(starts); k++ {
		from, to := starts[k], starts[k+1]
		for to-from > max {
			cut := from + max
			for c := cut; c > from+max/2; c-- {
				if strings.TrimSpace(lines[c-1]) == "" {
					cut = c
					break
				}
			}
			pieces = append(pieces, span{from, cut})
			from = cut
		}
		pieces = append(pieces, span{from, to})
	}
	// Pack consecutive pieces while they fit.
	var spans []span
	for _, p := range pieces {
		if n := len(spans); n > 0 && p.to-spans[n-1].from <= max {
			spans[n-1].to = p.to
			continue
		}
		spans = append(spans, p)
	}
	out := make([]Chunk, len(spans))
	for i, s := range spans {
		c := Chunk{Index: i + 1, Of: len(spans), From: s.from + 1, To: s.to, Text: strings.Join(lines[s.from:s.to], "\n")}
		for _, l := range lines[s.from:s.to] {
			if isHeading(l) {
				c.Heading = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(l), "#"))
				break
			}
		}
		out[i] = c
	}
	return out
}

// specLines counts a spec's lines (a final newline ends the last one).
func specLines(spec string) int {
	return strings.Count(strings.TrimRight(spec, "\n"), "\n") + 1
}

// isHeading: an ATX Markdown heading ("# Title" to "###### Title").
func isHeading(l string) bool {
	t := strings.TrimLeft(l, " ")
	if len(l)-len(t) > 3 {
		return false
	}
	n := len(t) - len(strings.TrimLeft(t, "#"))
	return n >= 1 && n <= 6 && (len(t) == n || t[n] == ' ' || t[n] == '\t')
}

// chunkIntro is how a part of a long spec is put to the Plan Agent.
func chunkIntro(b *strings.Builder, path string, lines int, c Chunk) {
	fmt.Fprintf(b, "\nThe spec %s has %d lines; it comes in %d parts, one at a time. Part %d/%d (lines %d-%d", path, lines, c.Of, c.Index, c.Of, c.From, c.To)
	if c.Heading != "" {
		fmt.Fprintf(b, ", from %q", c.Heading)
	}
	fmt.Fprintf(b, "):\n\n<spec part=\"%d/%d\">\n%s\n</spec>\n", c.Index, c.Of, strings.TrimSpace(c.Text))
	b.WriteString("\nCreate the tasks of this part only, then signal COMPLETE; the next part follows.\n")
}

// ChunkPrompt is the turn for a later part of a long spec: the part, and
// the tasks earlier parts produced, with their dependencies, so the new
// tasks depend on them by id instead of repeating them.
func ChunkPrompt(path, spec string, c Chunk, earlier []beads.Task) string {
	var b strings.Builder
	chunkIntro(&b, path, specLines(spec), c)
	b.WriteString("\n## Tasks from earlier parts (depend on them by id; do not create them again)\n")
	n := 0
	for _, t := range earlier {
		if t.Status == beads.StatusClosed {
			continue
		}
		n++
		fmt.Fprintf(&b, "- %s: %s", t.ID, t.Title)
		if deps := t.BlockedBy(); len(deps) > 0 {
			fmt.Fprintf(&b, " (after %s)", strings.Join(deps, ", "))
		}
		b.WriteString("\n")
	}
	if n == 0 {
		b.WriteString("(none)\n")
	}
	b.WriteString(`
Create the tasks of this part with ` + "`chorus task create`" + ` (--deps for the order, across parts too),
check with ` + "`chorus task validate`" + `, then run ` + "`chorus signal COMPLETE`" + `.
`)
	return b.String()
}
