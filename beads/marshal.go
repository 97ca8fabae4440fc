package beads

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// MarshalTasks is json.Marshal(ts), byte for byte, without reflection:
// listing thousands of tasks spends more in encoding/json than in reading
// them. Anything unusual (a time json cannot write, metadata that fails)
// is handed to encoding/json, errors included.
func MarshalTasks(ts []Task) ([]byte, error) {
	if ts == nil {
		return []byte("null"), nil
	}
	b := make([]byte, 0, 512*len(ts)+2)
	b = append(b, '[')
	for i := range ts {
		if i > 0 {
			b = append(b, ',')
		}
		var ok bool
		if b, ok = appendTask(b, &ts[i]); !ok {
			return json.Marshal(ts)
		}
	}
	return append(b, ']'), nil
}

// appendTask follows Task's field order and json tags.
func appendTask(b []byte, t *Task) ([]byte, bool) {
	ok := true
	b = appendKey(b, `{"id":`, t.ID)
	b = appendKey(b, `,"title":`, t.Title)
	b = appendOpt(b, `,"description":`, t.Description)
	b = appendOpt(b, `,"acceptance_criteria":`, t.AcceptanceCriteria)
	b = appendOpt(b, `,"notes":`, t.Notes)
	b = appendKey(b, `,"status":`, t.Status)
	b = append(b, `,"priority":`...)
	b = strconv.AppendInt(b, int64(t.Priority), 10)
	b = appendOpt(b, `,"issue_type":`, t.IssueType)
	b = appendOpt(b, `,"assignee":`, t.Assignee)
	b = append(b, `,"created_at":`...)
	b, ok = appendTime(b, t.CreatedAt, ok)
	b = appendOpt(b, `,"created_by":`, t.CreatedBy)
	b = append(b, `,"updated_at":`...)
	b, ok = appendTime(b, t.UpdatedAt, ok)
	if t.StartedAt != nil {
		b = append(b, `,"started_at":`...)
		b, ok = appendTime(b, *t.StartedAt, ok)
	}
	if t.ClosedAt != nil {
		b = append(b, `,"closed_at":`...)
		b, ok = appendTime(b, *t.ClosedAt, ok)
	}
	b = appendOpt(b, `,"close_reason":`, t.CloseReason)
	if len(t.Labels) > 0 {
		b = append(b, `,"labels":[`...)
		for i, l := range t.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, l)
		}
		b = append(b, ']')
	}
	if len(t.Dependencies) > 0 {
		b = append(b, `,"dependencies":[`...)
		for i := range t.Dependencies {
			d := &t.Dependencies[i]
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(b, `{"issue_id":`, d.IssueID)
			b = appendKey(b, `,"depends_on_id":`, d.DependsOnID)
			b = appendKey(b, `,"type":`, d.Type)
			b = append(b, `,"created_at":`...)
			b, ok = appendTime(b, d.CreatedAt, ok)
			b = appendOpt(b, `,"created_by":`, d.CreatedBy)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if len(t.Metadata) > 0 {
		m, err := json.Marshal(t.Metadata)
		if err != nil {
			return b, false
		}
		b = append(b, `,"metadata":`...)
		b = append(b, m...)
	}
	return append(b, '}'), ok
}

func appendKey(b []byte, key, v string) []byte {
	return appendString(append(b, key...), v)
}

// appendOpt is an omitempty string field.
func appendOpt(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return appendKey(b, key, v)
}

// appendTime writes what time.Time.MarshalJSON writes; ok turns false
// for the times it refuses (years beyond 0..9999, zone hours beyond 23),
// which are left to encoding/json.
func appendTime(b []byte, t time.Time, ok bool) ([]byte, bool) {
	b = append(b, '"')
	n := len(b)
	b = t.AppendFormat(b, time.RFC3339Nano)
	s := b[n:]
	if len(s) < len("0000-00-00T00:00:00Z") || s[4] != '-' {
		ok = false
	} else if z := s[len(s)-1]; z != 'Z' {
		c := s[len(s)-len("Z07:00")]
		if '0' <= c && c <= '9' || 10*(s[len(s)-5]-'0')+(s[len(s)-4]-'0') >= 24 {
			ok = false
		}
	}
	return append(b, '"'), ok
}

const hexDigits = "0123456789abcdef"

// appendString is encoding/json's string encoding with HTML escaping on,
// as json.Marshal does it.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
