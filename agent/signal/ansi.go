package signal

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// StripANSI turns raw terminal output into plain text for the Detector:
// escape sequences are removed, and the cursor movements that TUIs use
// instead of newlines and spaces are approximated (a move to another row
// becomes a line break, a move right becomes spaces). It is a stand-in for
// a real terminal emulator's text, good enough to find tags in a stream.
func StripANSI(b []byte) string {
	var s Stripper
	return s.Write(b) + s.Flush()
}

// Stripper is StripANSI for a stream: an escape sequence or UTF-8 character
// split across writes is handled whole.
type Stripper struct {
	state   int
	params  []byte
	pending []byte // incomplete UTF-8 sequence
	cr      bool   // last byte was '\r'
}

const (
	stText = iota
	stEsc
	stCSI
	stString    // OSC, DCS, APC, PM, SOS: skipped up to BEL or ST
	stStringEsc // ESC seen inside a string
	stEscInter  // ESC followed by an intermediate byte (charset designation…)
)

// maxParams bounds a CSI sequence's parameter bytes, so garbage cannot grow
// the state without end.
const maxParams = 64

// Write returns the plain text for b.
func (s *Stripper) Write(b []byte) string {
	var out strings.Builder
	if len(s.pending) > 0 {
		b = append(s.pending, b...)
		s.pending = nil
	}
	for i := 0; i < len(b); {
		c := b[i]
		switch s.state {
		case stText:
			switch {
			case c == 0x1b:
				s.state = stEsc
				i++
				continue
			case c == '\r':
				out.WriteByte('\n')
				s.cr = true
				i++
				continue
			case c == '\n':
				if !s.cr {
					out.WriteByte('\n')
				}
			case c == '\t':
				out.WriteByte('\t')
			case c < 0x20 || c == 0x7f:
				// other controls carry no text
			case c < 0x80:
				out.WriteByte(c)
			default:
				if !utf8.FullRune(b[i:]) {
					s.pending = append([]byte(nil), b[i:]...)
					return out.String()
				}
				r, n := utf8.DecodeRune(b[i:])
				i += n
				s.cr = false
				if r >= 0x80 && r < 0xa0 {
					continue // C1 controls
				}
				if r != utf8.RuneError || n > 1 {
					out.WriteRune(r)
				}
				continue
			}
			s.cr = false
			i++
		case stEsc:
			i++
			switch {
			case c == '[':
				s.state, s.params = stCSI, s.params[:0]
			case c == ']' || c == 'P' || c == '_' || c == '^' || c == 'X':
				s.state = stString
			case c >= 0x20 && c <= 0x2f:
				s.state = stEscInter
			case c == 'D' || c == 'E' || c == 'M' || c == '8':
				// index, next line, reverse index, restore cursor: row changes
				s.state = stText
				out.WriteByte('\n')
			default:
				s.state = stText
			}
		case stEscInter:
			i++
			if c >= 0x30 {
				s.state = stText
			}
		case stCSI:
			i++
			if c >= 0x40 && c <= 0x7e {
				s.state = stText
				s.csi(&out, c)
			} else if len(s.params) < maxParams {
				s.params = append(s.params, c)
			}
		case stString:
			i++
			if c == 0x07 {
				s.state = stText
			} else if c == 0x1b {
				s.state = stStringEsc
			}
		case stStringEsc:
			i++
			if c == '\\' {
				s.state = stText
			} else {
				s.state = stString
			}
		}
	}
	return out.String()
}

// Flush returns nothing yet emitted (an incomplete trailing character is
// dropped) and resets the stripper.
func (s *Stripper) Flush() string {
	*s = Stripper{}
	return ""
}

func (s *Stripper) csi(out *strings.Builder, final byte) {
	s.cr = false
	if len(s.params) > 0 && (s.params[0] == '?' || s.params[0] == '>' || s.params[0] == '<' || s.params[0] == '=') {
		return // private modes and queries
	}
	switch final {
	case 'H', 'f', 'A', 'B', 'E', 'F', 'd':
		out.WriteByte('\n')
	case 'C':
		n := 1
		if p, _, _ := strings.Cut(string(s.params), ";"); p != "" {
			if v, err := strconv.Atoi(p); err == nil {
				n = v
			}
		}
		out.WriteString(strings.Repeat(" ", min(max(n, 1), 256)))
	case 'G', '`':
		out.WriteByte(' ')
	}
}
