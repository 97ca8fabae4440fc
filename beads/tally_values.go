package beads

import (
	"encoding/binary"
	"math/bits"
	"time"
	"unsafe"
)

// The tally's readers of values: strings, times, numbers and values it
// checks without keeping.

func (t *tally) ws() {
	for t.i < len(t.b) {
		switch t.b[t.i] {
		case ' ', '\t', '\n', '\r':
			t.i++
		default:
			return
		}
	}
}

// strStop marks the bytes that end a string's plain run: a quote, a
// backslash, a control byte.
var strStop = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

// str reads a string at t.i and returns its body's bounds and whether it
// has escapes; ok false for anything encoding/json would reject in a
// string (a control byte, a bad escape). Byte by byte for the first
// bytes (keys, ids, dates end there), then eight bytes at a time.
func (t *tally) str() (lo, hi int, esc, ok bool) {
	b := t.b
	i := t.i
	if i >= len(b) || b[i] != '"' {
		return 0, 0, false, false
	}
	i++
	lo = i
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for {
		for lim := min(i+24, len(b)); i < lim && !strStop[b[i]]; i++ {
		}
		if i < len(b) && !strStop[b[i]] {
			for i+8 <= len(b) {
				x := binary.LittleEndian.Uint64(b[i:])
				q, bs := x^(ones*'"'), x^(ones*'\\')
				if m := ((q-ones)&^q | (bs-ones)&^bs | (x-ones*0x20)&^x) & highs; m != 0 {
					// The lowest flagged byte is exact.
					i += bits.TrailingZeros64(m) >> 3
					break
				}
				i += 8
			}
			for i < len(b) && !strStop[b[i]] {
				i++
			}
		}
		if i >= len(b) {
			return 0, 0, false, false
		}
		switch c := b[i]; {
		case c == '"':
			t.i = i + 1
			return lo, i, esc, true
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				return 0, 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) {
					return 0, 0, false, false
				}
				for _, h := range b[i+2 : i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return 0, 0, false, false
					}
				}
				i += 6
			default:
				return 0, 0, false, false
			}
		default: // a control byte
			return 0, 0, false, false
		}
	}
}

// plainStop marks the bytes that end a kept text's run: strStop's and
// every byte of 0x80 or more.
var plainStop = func() (t [256]bool) {
	t = strStop
	for c := 0x80; c < 0x100; c++ {
		t[c] = true
	}
	return t
}()

// plain reads a string the tally keeps: no escapes, ASCII only (else the
// index pass reads it), in one loop: kept texts are short.
func (t *tally) plain() ([]byte, bool) {
	b, i := t.b, t.i
	if i >= len(b) || b[i] != '"' {
		return nil, false
	}
	j := i + 1
	for j < len(b) && !plainStop[b[j]] {
		j++
	}
	if j >= len(b) || b[j] != '"' {
		return nil, false // an escape, a control byte, non-ASCII, no end
	}
	t.i = j + 1
	return b[i+1 : j], true
}

// itext is a kept text that repeats across records (a status, a type, a
// label): interned.
func (t *tally) itext() (string, bool) {
	raw, ok := t.plain()
	if !ok {
		return "", false
	}
	if v, ok := known(raw); ok {
		return v, true
	}
	if v, ok := t.strs[string(raw)]; ok {
		return v, true
	}
	v := string(raw)
	t.strs[v] = v
	return v, true
}

// id is a kept text that rarely repeats: copied into the arena.
func (t *tally) id() (string, bool) {
	raw, ok := t.plain()
	return t.keep(raw), ok
}

func (t *tally) keep(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	if t.alias {
		return unsafe.String(&raw[0], len(raw))
	}
	if cap(t.arena)-len(t.arena) < len(raw) {
		t.arena = make([]byte, 0, max(16<<10, len(raw)))
	}
	at := len(t.arena)
	t.arena = append(t.arena, raw...)
	return unsafe.String(&t.arena[at], len(raw))
}

func (t *tally) null() bool {
	if len(t.b)-t.i >= 4 && string(t.b[t.i:t.i+4]) == "null" {
		t.i += 4
		return true
	}
	return false
}

func (t *tally) lit(w string) bool {
	if len(t.b)-t.i >= len(w) && string(t.b[t.i:t.i+len(w)]) == w {
		t.i += len(w)
		return true
	}
	return false
}

// time reads a time as timeOrNull does; null only when nullOK.
func (t *tally) time(nullOK bool) (time.Time, bool) {
	if t.null() {
		return time.Time{}, nullOK
	}
	start := t.i
	lo, hi, esc, ok := t.str()
	if !ok || esc {
		return time.Time{}, false
	}
	if tm, ok := fastTime(t.b[lo:hi]); ok {
		return tm, true
	}
	var tm time.Time
	if tm.UnmarshalJSON(t.b[start:t.i]) != nil {
		return time.Time{}, false
	}
	return tm.UTC(), true
}

// checkTime is time without the value: fastTime's shape checked by hand.
func (t *tally) checkTime(nullOK bool) bool {
	// The usual shape, "YYYY-MM-DDTHH:MM:SSZ", in place: its bytes are
	// digits and separators, so no string check is needed.
	if b, i := t.b, t.i; len(b)-i >= 22 && b[i] == '"' && b[i+21] == '"' && plainTime(b[i+1:i+21]) {
		t.i = i + 22
		return true
	}
	if t.null() {
		return nullOK
	}
	start := t.i
	lo, hi, esc, ok := t.str()
	if !ok || esc {
		return false
	}
	if plainTime(t.b[lo:hi]) {
		return true
	}
	var tm time.Time
	return tm.UnmarshalJSON(t.b[start:t.i]) == nil
}

// plainTime reports whether fastTime reads b, without making the time.
func plainTime(b []byte) bool {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return false
	}
	two := func(i int) int {
		hi, lo := b[i]-'0', b[i+1]-'0'
		if hi > 9 || lo > 9 {
			return -1 << 10
		}
		return int(hi)*10 + int(lo)
	}
	cy, yy, mo, d, h, mi, sec := two(0), two(2), two(5), two(8), two(11), two(14), two(17)
	y := cy*100 + yy
	if cy < 0 || yy < 0 || mo < 1 || mo > 12 || d < 1 || d > daysIn(mo, y) || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 || sec > 59 {
		return false
	}
	if rest := b[19 : len(b)-1]; len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return false
		}
		if _, ok := digits(rest[1:]); !ok {
			return false
		}
	}
	return true
}

func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// int checks an int as scanner.int reads it (up to nine digits, no
// fraction or exponent).
func (t *tally) int() bool {
	s := scanner{b: t.b, i: t.i}
	_, err := s.int()
	t.i = s.i
	return err == nil
}

// skip checks any value as scanner.skip does, the value not kept.
func (t *tally) skip() bool {
	if t.i >= len(t.b) {
		return false
	}
	switch c := t.b[t.i]; c {
	case '"':
		_, _, _, ok := t.str()
		return ok
	case '{', '[':
		s := scanner{b: t.b, i: t.i, depth: t.depth}
		ok := s.skip() == nil
		t.i = s.i
		return ok
	case 't':
		return t.lit("true")
	case 'f':
		return t.lit("false")
	case 'n':
		return t.lit("null")
	}
	s := scanner{b: t.b, i: t.i}
	ok := s.number() == nil
	t.i = s.i
	return ok
}
