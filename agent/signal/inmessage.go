package signal

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Verdict is the rule's judgement of the <chorus> tags in the final
// message of a turn that has ended.
//
// Counts holds the tag that counts: at most one, the message's last
// thing (Err is set when its content is not a valid signal, for the
// caller to log). NearMiss is set when nothing counts although the
// message holds a tag of a valid type other than PROGRESS: the agent may
// have meant to signal, so the engine asks it to confirm (with
// `chorus signal`) rather than wait. Missed is that tag (the message's
// last), Reason says in words why it did not count.
type Verdict struct {
	Counts   []Found
	NearMiss bool
	Missed   Found
	Reason   string
}

// Signals returns the valid signals that count.
func (v Verdict) Signals() []Signal {
	var out []Signal
	for _, f := range v.Counts {
		if f.Err == nil {
			out = append(out, f.Signal)
		}
	}
	return out
}

// InMessage is the one rule for where a <chorus> tag counts in what an
// assistant wrote. It is given the final message of a turn that has ended
// (the channels decide that from their structure: no tool call after the
// message in its turn; headless, the run's final message); a tag anywhere
// else never counts. In that message a tag counts only when
//
//   - it is the last thing in the message (trailing whitespace, '.', '!'
//     and markdown emphasis aside);
//   - it starts its line (after list markers and emphasis) where the line
//     above does not run on into it (blank, or ending a sentence), or it
//     follows the end of a sentence ("All done. <tag>");
//   - it is outside code (fenced, 4-space indented, inline backticks),
//     quotation marks and quoted ('>') lines;
//   - for COMPLETE and RESOLVED, the sentence just before it, across
//     blank lines, does not ask, introduce, deny or plan (see doubt).
//
// So negations ("I will not print <tag>", "Not finished.\n\n<tag>"),
// questions ("Shall I finish now with <tag>", "Done?\n\n<tag>") and
// mentions never count, and a plan ("when the tests pass I will
// print\n<tag>") counts neither mid-turn nor when it ends a message. The
// last tag, when it fails the rule, is a near miss (see Verdict).
func InMessage(final string) Verdict {
	text := strings.ReplaceAll(final, "\r\n", "\n")
	spans := tagSpans(text)
	if len(spans) == 0 {
		return Verdict{}
	}
	m := spans[len(spans)-1]
	inner := text[m[2]:m[3]]
	sig, err := Parse(strings.ReplaceAll(inner, "\n", " "))
	found := Found{Signal: sig, Err: err, Raw: collapse(text[m[0]:m[1]])}
	reason := whyNot(text, m[0], m[1])
	if reason == "" && err == nil && (sig.Type == Complete || sig.Type == Resolved) {
		reason = doubt(text, m[0])
	}
	if reason == "" {
		return Verdict{Counts: []Found{found}}
	}
	if err != nil || sig.Type == Progress {
		return Verdict{}
	}
	return Verdict{NearMiss: true, Missed: found, Reason: reason}
}

// SignalsIn returns the valid signals InMessage counts in a turn's final
// message.
func SignalsIn(final string) []Signal { return InMessage(final).Signals() }

// whyNot applies the rule to the tag at text[start:end] and says why it
// does not count ("" when it does).
func whyNot(text string, start, end int) string {
	lines := splitLines(text)
	ls := strings.LastIndexByte(text[:start], '\n') + 1 // start of the tag's first line
	first := strings.Count(text[:start], "\n")
	le := strings.IndexByte(text[end:], '\n')
	if le < 0 {
		le = len(text)
	} else {
		le += end
	}
	before, after := text[ls:start], text[end:le]
	code := codeLines(lines)
	switch {
	case code[first] == fencedCode:
		return "it is inside a fenced code block"
	case code[first] == indentedCode:
		return "it is inside an indented code block"
	case strings.HasPrefix(strings.TrimLeftFunc(before, unicode.IsSpace), ">"):
		return "it is in a quoted ('>') line"
	case strings.Count(before, "`")%2 == 1:
		return "it is inside inline code (backticks)"
	case endsWithQuote(before) || startsWithQuote(after):
		return "it is in quotation marks"
	}
	if rest := strings.TrimRightFunc(text[end:], closing); rest != "" {
		return fmt.Sprintf("text follows it: %q", clip(collapse(rest), 60))
	}
	lead := strings.TrimRightFunc(trimListMarker(before), unicode.IsSpace)
	if lead != "" {
		if !endsSentence(lead) {
			return fmt.Sprintf("it continues the sentence %q instead of ending the message on its own", clip(collapse(lead), 60))
		}
		return ""
	}
	// At the start of its line: the line above must not run on into it.
	if first > 0 {
		if prev := strings.TrimSpace(lines[first-1]); prev != "" && runsOn(prev) {
			return fmt.Sprintf("it continues the line above, %q", clip(collapse(prev), 60))
		}
	}
	return ""
}

// closing is what may follow a counting tag to the end of the message.
func closing(r rune) bool { return unicode.IsSpace(r) || strings.ContainsRune(".!*_", r) }

// endsSentence reports text ending a sentence: '.' or '!', perhaps inside
// closing emphasis, brackets or quotes.
func endsSentence(s string) bool {
	s = strings.TrimRight(s, "*_)]\"'”’")
	return strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!")
}

// runsOn reports a line whose sentence goes on into the next one: it
// ends in a word, a comma, a colon, a dash… rather than a sentence end, a
// list item or a heading, which are units of their own.
func runsOn(prev string) bool {
	if strings.HasPrefix(prev, "#") || isListItem(prev) || strings.HasPrefix(prev, "|") {
		return false
	}
	if strings.HasPrefix(prev, "```") || strings.HasPrefix(prev, "~~~") {
		return false // a closing fence
	}
	return !endsSentence(prev)
}

// trimListMarker drops leading whitespace, list markers ("-", "*", "+",
// "1.", "[x]") and emphasis before a line's text.
func trimListMarker(s string) string {
	for {
		t := strings.TrimLeftFunc(s, unicode.IsSpace)
		switch {
		case strings.HasPrefix(t, "**"), strings.HasPrefix(t, "__"):
			t = t[2:]
		case isListItem(t):
			if n := orderedMarker(t); n > 0 {
				t = t[n:]
			} else {
				t = t[2:]
			}
		case strings.HasPrefix(t, "[x]"), strings.HasPrefix(t, "[X]"), strings.HasPrefix(t, "[ ]"):
			t = t[3:]
		default:
			return t
		}
		s = t
	}
}

// isListItem reports a (left-trimmed) line starting a list item.
func isListItem(t string) bool {
	return strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* ") || strings.HasPrefix(t, "+ ") || orderedMarker(t) > 0
}

// orderedMarker is the length of "12. " or "3) " starting s, or 0.
func orderedMarker(s string) int {
	i := 0
	for i < len(s) && i < 4 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i == 0 || i+1 >= len(s) || (s[i] != '.' && s[i] != ')') || s[i+1] != ' ' {
		return 0
	}
	return i + 2
}

const openQuotes = "\"'“‘«„"
const closeQuotes = "\"'”’»“"

func endsWithQuote(before string) bool {
	r, ok := lastRune(strings.TrimRightFunc(before, unicode.IsSpace))
	return ok && strings.ContainsRune(openQuotes, r)
}

func startsWithQuote(after string) bool {
	r, _ := utf8.DecodeRuneInString(strings.TrimLeftFunc(after, unicode.IsSpace))
	return r != utf8.RuneError && strings.ContainsRune(closeQuotes, r)
}

func lastRune(s string) (rune, bool) {
	r, n := utf8.DecodeLastRuneInString(s)
	return r, n > 0 && r != utf8.RuneError
}

// lineCode says whether a line is code.
type lineCode uint8

const (
	prose lineCode = iota
	fencedCode
	indentedCode
)

// codeLines marks the lines inside fenced code blocks (fence lines
// included) and indented code blocks: four spaces or a tab, after a blank
// line or another code line, unless they continue a list item.
func codeLines(lines []string) []lineCode {
	out := make([]lineCode, len(lines))
	var f fence
	inList := false
	prevBlank, prevIndented := true, false
	for i, l := range lines {
		if f.line(l) {
			out[i] = fencedCode
			prevBlank, prevIndented = false, false
			continue
		}
		blank := strings.TrimSpace(l) == ""
		indented := strings.HasPrefix(l, "    ") || strings.HasPrefix(l, "\t")
		switch {
		case blank:
		case indented && (prevBlank || prevIndented) && !inList:
			out[i] = indentedCode
		case !indented:
			inList = isListItem(strings.TrimLeftFunc(l, unicode.IsSpace))
		}
		if !blank {
			prevIndented = out[i] == indentedCode
		}
		prevBlank = blank
	}
	return out
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

// AloneOnLine is the rule on a custom agent's screen, where nothing tells
// the assistant's words from a tool's output: a tag counts only alone on
// its line (apart from whitespace, the bullets and frames TUIs draw, and
// trailing '.' or '!'), so a grep result or a sentence that ends with a
// tag does not.
func AloneOnLine(before, after string) bool {
	return stripMarkers(before) == "" && strings.TrimFunc(after, trailingJunk) == ""
}

// trailingJunk is what may follow a tag on a screen line: whitespace,
// sentence ends, markdown emphasis, and the frame characters TUIs draw.
func trailingJunk(r rune) bool {
	return unicode.IsSpace(r) || strings.ContainsRune(".!*_", r) || r >= 0x2500 && r <= 0x259f
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
