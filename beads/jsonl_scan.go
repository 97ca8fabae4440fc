package beads

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// scanner is the lexer of the index pass: strings, numbers, literals,
// objects and arrays checked as strictly as encoding/json checks them.
type scanner struct {
	b     []byte
	i     int
	strs  map[string]string // interned labels and the like, shared per file
	depth int
	deps  *depSlab // where records' dependencies go, shared per file; nil: each its own
}

// more is r's recordMore, from the file's slab when there is one.
func (s *scanner) more(r *record) *recordMore {
	if r.more == nil {
		if s.deps != nil {
			r.more = s.deps.more()
		} else {
			r.more = new(recordMore)
		}
	}
	return r.more
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// str reads a string and returns its raw bytes (between the quotes) and
// whether it contains escapes. It finds the closing quote eight bytes at a
// time, then with IndexByte once the string proves long, and leaves
// validation (control bytes, UTF-8) to text(), so values that are only
// skipped cost little.
func (s *scanner) str() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, errSlow
	}
	s.i++
	start := s.i
	esc := false
	b := s.b
	i := s.i
	for {
		i = quoteOrBackslash(b, i)
		if i >= len(b) {
			return nil, false, errSlow
		}
		if b[i] == '\\' {
			esc = true
			i += 2
			continue
		}
		s.i = i + 1
		return b[start:i], esc, nil
	}
}

// quoteOrBackslash returns the index of the first '"' or '\\' in b from
// i on, or len(b).
func quoteOrBackslash(b []byte, i int) int {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	// Short strings (keys, ids, dates) end within a few words.
	for lim := i + 32; i+8 <= len(b) && i < lim; i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		q, bs := x^(ones*'"'), x^(ones*'\\')
		// The lowest flagged byte is exact (borrows only flag above it).
		if m := ((q-ones)&^q | (bs-ones)&^bs) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	if i+8 > len(b) {
		for i < len(b) && b[i] != '"' && b[i] != '\\' {
			i++
		}
		return i
	}
	// Long ones (descriptions) go through IndexByte.
	j := bytes.IndexByte(b[i:], '"')
	if j < 0 {
		j = len(b) - i
	}
	if k := bytes.IndexByte(b[i:i+j], '\\'); k >= 0 {
		return i + k
	}
	return i + j
}

// valid reports whether raw (no escapes) is a legal JSON string body.
func valid(raw []byte) bool {
	high := false
	for _, c := range raw {
		if c < 0x20 {
			return false
		}
		high = high || c >= 0x80
	}
	return !high || utf8.Valid(raw)
}

func (s *scanner) text() (string, error) {
	raw, esc, err := s.str()
	if err != nil {
		return "", err
	}
	if !esc {
		if !valid(raw) {
			return "", errSlow
		}
		return string(raw), nil
	}
	return unescape(raw)
}

func unescape(raw []byte) (string, error) {
	out := make([]byte, 0, len(raw))
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < 0x20 {
			return "", errSlow
		}
		if c != '\\' {
			out = append(out, c)
			continue
		}
		i++
		if i >= len(raw) {
			return "", errSlow
		}
		switch raw[i] {
		case '"', '\\', '/':
			out = append(out, raw[i])
		case 'n':
			out = append(out, '\n')
		case 't':
			out = append(out, '\t')
		case 'r':
			out = append(out, '\r')
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'u':
			if i+4 >= len(raw) {
				return "", errSlow
			}
			v, err := strconv.ParseUint(string(raw[i+1:i+5]), 16, 32)
			if err != nil || (v >= 0xD800 && v < 0xE000) {
				return "", errSlow
			}
			out = utf8.AppendRune(out, rune(v))
			i += 4
		default:
			return "", errSlow
		}
	}
	if !utf8.Valid(out) {
		return "", errSlow
	}
	return string(out), nil
}

// maxDepth bounds nesting in skipped values; deeper input goes to
// encoding/json, which has its own limit and words the error.
const maxDepth = 1000

// skip skips one value of any kind, checking it as strictly as
// encoding/json would: whatever it accepts, encoding/json accepts.
func (s *scanner) skip() error {
	s.depth++
	defer func() { s.depth-- }()
	if s.depth > maxDepth {
		return errSlow
	}
	s.ws()
	switch c := s.peek(); c {
	case '"':
		raw, esc, err := s.str()
		if err != nil {
			return err
		}
		return checkString(raw, esc)
	case '{', '[':
		close := byte('}')
		if c == '[' {
			close = ']'
		}
		s.i++
		s.ws()
		if s.peek() == close {
			s.i++
			return nil
		}
		for {
			if c == '{' {
				s.ws()
				raw, esc, err := s.str()
				if err != nil {
					return err
				}
				if err := checkString(raw, esc); err != nil {
					return err
				}
				s.ws()
				if s.peek() != ':' {
					return errSlow
				}
				s.i++
			}
			if err := s.skip(); err != nil {
				return err
			}
			s.ws()
			switch s.peek() {
			case ',':
				s.i++
			case close:
				s.i++
				return nil
			default:
				return errSlow
			}
		}
	case 't':
		return s.lit("true")
	case 'f':
		return s.lit("false")
	case 'n':
		return s.lit("null")
	default:
		return s.number()
	}
}

// number consumes one number of JSON's grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	b := s.b
	i := s.i
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return errSlow
	}
	if i < len(b) && b[i] == '.' {
		i++
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return errSlow
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		start := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == start {
			return errSlow
		}
	}
	s.i = i
	return nil
}

// checkString accepts the raw body of a string exactly when encoding/json
// does: no raw control bytes, only JSON's escapes. (encoding/json accepts
// invalid UTF-8 and lone surrogates, replacing them, so they pass here.)
func checkString(raw []byte, esc bool) error {
	for i := 0; i < len(raw); i++ {
		c := raw[i]
		if c < 0x20 {
			return errSlow
		}
		if c != '\\' || !esc {
			continue
		}
		i++
		if i >= len(raw) {
			return errSlow
		}
		switch raw[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if i+5 > len(raw) {
				return errSlow
			}
			for _, h := range raw[i+1 : i+5] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return errSlow
				}
			}
			i += 4
		default:
			return errSlow
		}
	}
	return nil
}

func (s *scanner) lit(w string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(w)) {
		return errSlow
	}
	s.i += len(w)
	return nil
}

func (s *scanner) isNull() bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

func (s *scanner) int() (int, error) {
	s.ws()
	neg := s.peek() == '-'
	if neg {
		s.i++
	}
	start, n := s.i, 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' && s.i-start < 9 {
		n = n*10 + int(s.b[s.i]-'0')
		s.i++
	}
	if s.i == start || (s.b[start] == '0' && s.i-start > 1) {
		return 0, errSlow // no digits, or a leading zero JSON forbids
	}
	if c := s.peek(); c == '.' || c == 'e' || c == 'E' || (c >= '0' && c <= '9') {
		return 0, errSlow
	}
	if neg {
		n = -n
	}
	return n, nil
}

func (s *scanner) bool() (bool, error) {
	s.ws()
	if s.peek() == 't' {
		return true, s.lit("true")
	}
	return false, s.lit("false")
}

// object calls f for each key with the scanner positioned at its value;
// f must consume the value.
func (s *scanner) object(f func(key []byte) error) error {
	s.ws()
	if s.peek() != '{' {
		return errSlow
	}
	s.i++
	s.ws()
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		s.ws()
		k, esc, err := s.str()
		if err != nil || esc || !valid(k) {
			return errSlow
		}
		s.ws()
		if s.peek() != ':' {
			return errSlow
		}
		s.i++
		s.ws()
		if err := f(k); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errSlow
		}
	}
}

func (s *scanner) array(f func() error) error {
	s.ws()
	if s.isNull() {
		return nil
	}
	if s.peek() != '[' {
		return errSlow
	}
	s.i++
	s.ws()
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := f(); err != nil {
			return err
		}
		s.ws()
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errSlow
		}
	}
}
