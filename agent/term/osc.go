package term

import (
	"bytes"
	"strings"
	"unicode/utf8"
)

// osc handles a finished OSC string. Only titles are kept; hyperlinks
// (OSC 8), colour queries, clipboard and the rest are consumed without
// printing anything.
func (e *Emulator) osc(data []byte) {
	cmd, rest, _ := bytes.Cut(data, []byte{';'})
	switch string(cmd) {
	case "0", "2":
		// Agents rewrite the title on every spinner frame; most are
		// repeats, so compare before building a new string.
		if string(rest) != e.title || !cleanTitle(rest) {
			e.title = sanitizeTitle(rest)
		}
	}
}

// sanitizeTitle drops control characters and invalid UTF-8 so that a title
// is safe to draw in a tile header.
func sanitizeTitle(b []byte) string {
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		b = b[n:]
		if r == utf8.RuneError && n <= 1 || r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			continue
		}
		sb.WriteRune(r)
		if sb.Len() > 512 {
			break
		}
	}
	return sb.String()
}

// dcs answers the two DCS queries editors send at start-up, with "not
// supported", so they stop waiting at once.
func (e *Emulator) dcs(data []byte) {
	switch {
	case bytes.HasPrefix(data, []byte("$q")): // DECRQSS
		e.reply("\x1bP0$r\x1b\\")
	case bytes.HasPrefix(data, []byte("+q")): // XTGETTCAP
		e.reply("\x1bP0+r\x1b\\")
	}
}

// cleanTitle reports whether sanitizeTitle would return b unchanged.
func cleanTitle(b []byte) bool {
	if len(b) > 512 || !utf8.Valid(b) {
		return false
	}
	for _, r := range string(b) {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			return false
		}
	}
	return true
}
