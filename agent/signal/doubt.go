package signal

import (
	"fmt"
	"strings"
	"unicode"
)

// doubt is the rule's last check on a COMPLETE or RESOLVED tag that stands
// where a claim can: the sentence just before it (on its line, or the last
// non-blank line above, so a blank line does not hide it) must not ask
// ("Should I stop here?"), introduce ("Once CI is green I'll print:"), deny
// ("This is not finished.") or plan ("I will fix the lint next."). Such a
// tag is a near miss: a confirmation costs the agent one short turn, a
// false completion merges half a task. It returns why, or "".
func doubt(text string, start int) string {
	ls := strings.LastIndexByte(text[:start], '\n') + 1
	s := strings.TrimSpace(trimListMarker(text[ls:start]))
	if s == "" {
		above := strings.TrimRightFunc(text[:ls], unicode.IsSpace)
		s = strings.TrimSpace(above[strings.LastIndexByte(above, '\n')+1:])
		if s == "" || strings.HasPrefix(s, "```") || strings.HasPrefix(s, "~~~") || strings.HasPrefix(s, "|") {
			return "" // the message's start, a closed fence or a table row
		}
		s = strings.TrimSpace(trimListMarker(strings.TrimLeft(s, "#>")))
	}
	sent := lastSentence(s)
	end := strings.TrimRight(sent, "*_)]\"'”’ ")
	switch {
	case strings.HasSuffix(end, "?"):
		return fmt.Sprintf("it follows a question, %q", clip(collapse(sent), 60))
	case strings.HasSuffix(end, ":"):
		return fmt.Sprintf("it follows %q, which introduces it rather than saying the work is done", clip(collapse(sent), 60))
	}
	if w := doubtWord(sent); w != "" {
		return fmt.Sprintf("the sentence before it says %q: %q", w, clip(collapse(sent), 60))
	}
	return ""
}

// lastSentence is the last sentence of s: what follows the last ". ",
// "! " or "? " before its own end.
func lastSentence(s string) string {
	t := strings.TrimRight(s, ".!?*_)]\"'”’ ")
	i := -1
	for _, sep := range []string{". ", "! ", "? ", ".\t"} {
		if j := strings.LastIndex(t, sep); j > i {
			i = j
		}
	}
	if i < 0 {
		return s
	}
	return strings.TrimSpace(s[i+2:])
}

// doubtWords deny or defer: a sentence holding one does not say the work
// is done. Past-tense accounts ("I fixed the failing test") and closing
// courtesies ("Let me know if…") are deliberately absent.
var doubtWords = map[string]bool{
	"not": true, "never": true, "cannot": true, "unable": true, "unfinished": true,
	"incomplete": true, "yet": true, "will": true, "once": true, "until": true,
	"todo": true, "wip": true, "partially": true, "remaining": true,
}

// doubtPhrases are doubtWords of several words or a contraction.
var doubtPhrases = []string{"n't", "'ll", "going to", "about to", "as soon as", "no longer", "still need", "still fail", "next step"}

// doubtWord returns the first denying or deferring word in sent, or "".
func doubtWord(sent string) string {
	low := strings.ToLower(strings.NewReplacer("’", "'", "‘", "'").Replace(sent))
	for _, w := range strings.FieldsFunc(low, func(r rune) bool { return !unicode.IsLetter(r) }) {
		if doubtWords[w] {
			return w
		}
	}
	for _, p := range doubtPhrases {
		if strings.Contains(low, p) {
			return p
		}
	}
	return ""
}
