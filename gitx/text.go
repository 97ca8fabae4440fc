package gitx

import (
	"strings"
	"unicode/utf8"
)

// SanitizeText makes task text safe to print on a terminal: it removes ANSI
// escape sequences (CSI, OSC, DCS/SOS/PM/APC strings and two-byte ESC
// sequences, in their 7-bit and 8-bit forms), other C0/C1 control
// characters and DEL, and the Unicode bidi overrides that can make text
// read differently from what it is. Newlines and tabs stay; invalid UTF-8
// becomes U+FFFD. Stored text is never changed; this is for display and
// for what reaches git (commit messages, reflog messages), where `git log`
// would otherwise replay the sequences on whoever reads it.
func SanitizeText(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			b.WriteRune(utf8.RuneError)
			i++
			continue
		}
		switch {
		case r == 0x1b: // ESC
			i = skipEscape(s, i+size)
			continue
		case r == 0x9b: // 8-bit CSI
			i = skipCSI(s, i+size)
			continue
		case r == 0x9d || r == 0x90 || r == 0x98 || r == 0x9e || r == 0x9f: // 8-bit OSC, DCS, SOS, PM, APC
			i = skipString(s, i+size)
			continue
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0):
		case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == 0x200e, r == 0x200f:
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// skipEscape skips what follows an ESC at s[i:].
func skipEscape(s string, i int) int {
	if i >= len(s) {
		return i
	}
	switch s[i] {
	case '[':
		return skipCSI(s, i+1)
	case ']', 'P', 'X', '^', '_':
		return skipString(s, i+1)
	}
	// ESC followed by intermediates (0x20–0x2F) and one final byte.
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f {
		i++
	}
	if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e {
		i++
	}
	return i
}

// skipCSI skips parameter and intermediate bytes and the final byte.
func skipCSI(s string, i int) int {
	for i < len(s) {
		c := s[i]
		i++
		if c >= 0x40 && c <= 0x7e {
			return i
		}
		if c < 0x20 || c >= 0x7f {
			// Not a CSI byte: the sequence was cut short; drop what we saw.
			return i - 1
		}
	}
	return i
}

// skipString skips an OSC/DCS-style string up to BEL, ESC \ or 8-bit ST.
func skipString(s string, i int) int {
	for i < len(s) {
		switch {
		case s[i] == 0x07:
			return i + 1
		case s[i] == 0x1b && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case s[i] == 0xc2 && i+1 < len(s) && s[i+1] == 0x9c: // U+009C ST
			return i + 2
		}
		i++
	}
	return i
}

// OneLine is s made fit for one line of a commit or reflog message: its
// first line, sanitised (SanitizeText), tabs as spaces, trimmed.
func OneLine(s string) string {
	s = SanitizeText(strings.TrimSpace(s))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(strings.ReplaceAll(s, "\t", " "))
}
