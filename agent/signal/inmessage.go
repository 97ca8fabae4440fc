package signal

import (
	"sort"
	"strings"
	"unicode"
)

// InMessage returns the <chorus> tags that count in text an agent wrote
// itself: an assistant message from a structured channel, or what a custom
// agent prints. It is the one rule for every channel (the Detector applies
// it to terminal lines too):
//
// A tag counts when it ends its line, apart from trailing whitespace and
// punctuation, with or without words before it ("All done.
// <chorus>COMPLETE</chorus>"). It does not count when more words follow it
// on its line ("I will print <chorus>COMPLETE</chorus> when done"), inside
// inline code (`…`), in quotation marks or a quoted (">") line, or inside a
// fenced code block (``` or ~~~): those are mentions, not signals.
//
// Tags whose content is not a valid signal are returned with Err set.
func InMessage(text string) []Found {
	text = strings.ReplaceAll(text, "\r\n", "\n")
	lines := splitLines(text)
	fenced := fencedLines(lines)
	starts := make([]int, len(lines)) // offset of each line
	off := 0
	for i, l := range lines {
		starts[i] = off
		off += len(l) + 1
	}
	lineOf := func(pos int) int { return sort.SearchInts(starts, pos+1) - 1 }
	var out []Found
	for _, m := range tagSpans(text) {
		first, last := lineOf(m[0]), lineOf(m[1]-1)
		if fenced[first] {
			continue
		}
		before := text[starts[first]:m[0]]
		after := lines[last][m[1]-starts[last]:]
		if !tagCounts(before, after) {
			continue
		}
		inner := text[m[2]:m[3]]
		sig, err := Parse(strings.ReplaceAll(inner, "\n", " "))
		out = append(out, Found{Signal: sig, Err: err, Raw: collapse(text[m[0]:m[1]])})
	}
	return out
}

// SignalsIn returns the valid signals InMessage counts in text.
func SignalsIn(text string) []Signal {
	var out []Signal
	for _, f := range InMessage(text) {
		if f.Err == nil {
			out = append(out, f.Signal)
		}
	}
	return out
}

const closeTag = "</chorus>"

// tagSpans finds tags, possibly wrapped over lines, as [start, end,
// content start, content end] offsets. Of two opening tags before one
// closing tag, the nearer one opens it ("say <chorus> or
// <chorus>COMPLETE</chorus>" holds one tag).
func tagSpans(text string) [][4]int {
	var out [][4]int
	for pos := 0; ; {
		j := strings.Index(text[pos:], closeTag)
		if j < 0 {
			return out
		}
		end := pos + j
		if i := strings.LastIndex(text[pos:end], openTag); i >= 0 && end-(pos+i+len(openTag)) <= maxTagContent {
			s := pos + i
			out = append(out, [4]int{s, end + len(closeTag), s + len(openTag), end})
		}
		pos = end + len(closeTag)
	}
}

// maxTagContent bounds a tag's content; longer spans are prose.
const maxTagContent = 1000

// tagCounts applies the rule to a tag given the text before it on its first
// line and the text after it on its last line.
func tagCounts(before, after string) bool {
	if strings.TrimFunc(after, trailingJunk) != "" {
		return false // words (or a closing quote) follow it
	}
	if strings.Count(before, "`")%2 == 1 {
		return false // inside an inline code span
	}
	lead := strings.TrimLeftFunc(before, unicode.IsSpace)
	if strings.HasPrefix(lead, ">") {
		return false // a quoted line
	}
	if r, ok := lastRune(strings.TrimRightFunc(before, unicode.IsSpace)); ok && strings.ContainsRune(openQuotes, r) {
		return false
	}
	return true
}

const openQuotes = "\"'“‘«„`"

func lastRune(s string) (rune, bool) {
	for i := len(s) - 1; i >= 0; i-- {
		if s[i]&0xC0 != 0x80 {
			return []rune(s[i:])[0], true
		}
	}
	return 0, false
}

// trailingJunk is what may follow a tag on its line: whitespace, sentence
// punctuation, markdown emphasis, and the frame characters TUIs draw.
func trailingJunk(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(".,;:!*_", r) || r >= 0x2500 && r <= 0x259f
}

// fencedLines marks the lines inside fenced code blocks, fence lines
// included.
func fencedLines(lines []string) []bool {
	out := make([]bool, len(lines))
	var f fence
	for i, l := range lines {
		out[i] = f.line(l)
	}
	return out
}

// fence follows fenced code blocks line by line. A fence is three or more
// backticks or tildes, possibly indented (inside a list item); it closes
// with the same character, at least as many times, and nothing else on
// the line. An unclosed fence runs to the end of the text.
type fence struct {
	ch byte
	n  int // open fence length, 0 when outside
}

// line takes the next line and reports whether it is part of a fenced
// block.
func (f *fence) line(l string) bool {
	t := strings.TrimLeftFunc(l, unicode.IsSpace)
	c, k := fenceRun(t)
	switch {
	case f.n == 0 && k >= 3:
		f.ch, f.n = c, k
		return true
	case f.n > 0:
		if c == f.ch && k >= f.n && strings.TrimSpace(t[k:]) == "" {
			f.n = 0
		}
		return true
	}
	return false
}

// fenceRun returns the fence character starting s and how many times it
// repeats.
func fenceRun(s string) (byte, int) {
	if s == "" || (s[0] != '`' && s[0] != '~') {
		return 0, 0
	}
	k := 0
	for k < len(s) && s[k] == s[0] {
		k++
	}
	return s[0], k
}
