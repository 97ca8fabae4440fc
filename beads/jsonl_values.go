package beads

import (
	"time"
)

// Typed values of the index pass: times, interned texts.

// time parses RFC 3339 quickly for the common shapes, else as
// encoding/json would (time.Time's UnmarshalJSON, which is stricter than
// time.Parse). null is the zero time only where the field is a pointer:
// encoding/json leaves a time.Time unchanged on null, so that goes to the
// slow path.
func (s *scanner) time() (time.Time, error) { return s.timeOrNull(false) }

func (s *scanner) timeOrNull(nullOK bool) (time.Time, error) {
	if s.isNull() {
		if !nullOK {
			return time.Time{}, errSlow
		}
		return time.Time{}, nil
	}
	start := s.i
	raw, esc, err := s.str()
	if err != nil || esc {
		return time.Time{}, errSlow
	}
	if t, ok := fastTime(raw); ok {
		return t, nil
	}
	var t time.Time
	if err := t.UnmarshalJSON(s.b[start:s.i]); err != nil {
		return time.Time{}, errSlow
	}
	return t.UTC(), nil
}

func digits(b []byte) (int, bool) {
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// fastTime handles YYYY-MM-DDTHH:MM:SS[.fraction]Z.
func fastTime(b []byte) (time.Time, bool) {
	if len(b) < 20 || b[4] != '-' || b[7] != '-' || b[10] != 'T' || b[13] != ':' || b[16] != ':' || b[len(b)-1] != 'Z' {
		return time.Time{}, false
	}
	y, ok1 := digits(b[0:4])
	mo, ok2 := digits(b[5:7])
	d, ok3 := digits(b[8:10])
	h, ok4 := digits(b[11:13])
	mi, ok5 := digits(b[14:16])
	sec, ok6 := digits(b[17:19])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 59 {
		return time.Time{}, false
	}
	ns := 0
	if rest := b[19 : len(b)-1]; len(rest) > 0 {
		if rest[0] != '.' || len(rest) < 2 || len(rest) > 10 {
			return time.Time{}, false
		}
		f, ok := digits(rest[1:])
		if !ok {
			return time.Time{}, false
		}
		for k := len(rest) - 1; k < 9; k++ {
			f *= 10
		}
		ns = f
	}
	t := time.Date(y, time.Month(mo), d, h, mi, sec, ns, time.UTC)
	if t.Day() != d {
		return time.Time{}, false
	}
	return t, true
}

// known returns the constant spelling of a common status or type: interned
// strings save an allocation per record.
func known(b []byte) (string, bool) {
	switch string(b) {
	case StatusOpen:
		return StatusOpen, true
	case StatusInProgress:
		return StatusInProgress, true
	case StatusClosed:
		return StatusClosed, true
	case StatusBlocked:
		return StatusBlocked, true
	case StatusDeferred:
		return StatusDeferred, true
	case "task":
		return "task", true
	case "epic":
		return "epic", true
	case "bug":
		return "bug", true
	case "feature":
		return "feature", true
	case "blocks":
		return "blocks", true
	case "parent-child":
		return "parent-child", true
	case "issue":
		return "issue", true
	}
	return "", false
}

func (s *scanner) itext() (string, error) {
	raw, esc, err := s.str()
	if err != nil {
		return "", err
	}
	if esc {
		return unescape(raw)
	}
	if !valid(raw) {
		return "", errSlow
	}
	if v, ok := known(raw); ok {
		return v, nil
	}
	if s.strs != nil {
		if v, ok := s.strs[string(raw)]; ok {
			return v, nil
		}
		v := string(raw)
		s.strs[v] = v
		return v, nil
	}
	return string(raw), nil
}
