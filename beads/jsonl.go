package beads

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"sync"
	"time"
)

// A hand-written decoder for issues.jsonl lines. encoding/json costs tens of
// milliseconds on a 10k-task file, which a CLI start cannot afford; this one
// reads the fields Ready needs in one pass and decodes whole tasks only for
// the records a caller gets back. Anything unusual (invalid input, \u
// surrogates, floats) returns errSlow and the line goes through
// encoding/json instead, which also words the error for malformed lines.
var errSlow = errors.New("slow path")

// decodeLine fills r's index fields from line. It returns errSlow when the
// line needs encoding/json.
func decodeLine(line []byte, r *record) error {
	return decodeWith(&scanner{b: line}, r)
}

// The fields the index pass reads itself. Every other field of a record is
// only checked (see checkers), and whole tasks are decoded by encoding/json
// from Task's own tags, so a new Task field needs no change here.
var (
	topKeys = sync.OnceValue(func() map[string]uint { return jsonIndex(reflect.TypeFor[slowRecord]()) })
	depKeys = sync.OnceValue(func() map[string]uint { return jsonIndex(reflect.TypeFor[Dependency]()) })
)

// jsonIndex numbers the JSON names of t's fields (embedded structs
// flattened), for the duplicate check.
func jsonIndex(t reflect.Type) map[string]uint {
	m := map[string]uint{}
	for _, f := range reflect.VisibleFields(t) {
		if name := jsonName(f); name != "" {
			m[name] = uint(len(m))
		}
	}
	if len(m) > 32 {
		panic("beads: more than 32 JSON fields; widen the duplicate-key mask")
	}
	return m
}

// jsonName is the name encoding/json gives f, or "" when it has none.
func jsonName(f reflect.StructField) string {
	if f.Anonymous || !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("json")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = f.Name
	}
	return name
}

// decodeWith is the index pass: the fields Ready needs, read in one pass
// without reflection (several times faster than encoding/json on a large
// task file; BenchmarkIndexPass10k), every other field checked so that the
// verdict on the line is encoding/json's.
func decodeWith(s *scanner, r *record) error {
	r.kind = "issue"
	var seen uint32
	top := topFields()
	err := s.object(func(k []byte) error {
		f, err := fieldOf(top, k, &seen)
		if err != nil {
			return err
		}
		switch string(k) {
		case "_type":
			// An empty type is a task, as the slow path reads it; taking
			// it verbatim would hide the task from every query.
			r.kind, err = s.itext()
			if r.kind == "" {
				r.kind = "issue"
			}
		case "id":
			r.id, err = s.text()
		case "status":
			r.status, err = s.itext()
		case "priority":
			s.more(r).priority, err = s.int()
		case "issue_type":
			r.itype, err = s.itext()
		case "assignee":
			_, err = s.text() // checked; nothing reads it from the index
		case "created_at":
			var tm time.Time
			tm, err = s.time()
			s.more(r).created = tm
		case "defer_until":
			var tm time.Time
			tm, err = s.timeOrNull(true)
			r.deferUntil = tm
		case "ephemeral":
			r.ephemeral, err = s.bool()
		case "labels":
			r.labels = r.labels[:0]
			err = s.array(func() error {
				l, err := s.itext()
				r.labels = append(r.labels, l)
				return err
			})
		case "dependencies":
			deps := r.deps[:0]
			if s.deps != nil {
				deps = s.deps.scratch[:0]
			}
			err = s.array(func() error {
				d, err := s.dependency(r.id)
				deps = append(deps, d)
				return err
			})
			if s.deps != nil {
				s.deps.scratch = deps
				deps = s.deps.keep(deps)
			}
			r.deps = deps
		default:
			err = s.checkField(f)
		}
		return err
	})
	if err != nil {
		return err
	}
	s.ws()
	if s.i != len(s.b) {
		return errSlow
	}
	return nil
}

// dependency reads one dependency record of the task with id own.
func (s *scanner) dependency(own string) (edge, error) {
	var d edge
	var seen uint32
	dep := depFields()
	err := s.object(func(k []byte) error {
		f, err := fieldOf(dep, k, &seen)
		if err != nil {
			return err
		}
		switch string(k) {
		case "issue_id":
			start := s.i
			raw, esc, e := s.str()
			if e == nil && !esc && string(raw) == own && valid(raw) {
				d.IssueID = own // usually the record's own id
			} else {
				s.i = start
				d.IssueID, e = s.text()
			}
			err = e
		case "depends_on_id":
			d.DependsOnID, err = s.text()
		case "type":
			d.Type, err = s.itext()
		case "created_at":
			_, err = s.time()
		default:
			err = s.checkField(f)
		}
		return err
	})
	return d, err
}

// A checker consumes a field's value without keeping it, failing where
// encoding/json would fail to decode it into the field.
type checker func(s *scanner) error

var (
	topChecks = sync.OnceValue(func() map[string]checker { return checkers(reflect.TypeFor[slowRecord]()) })
	depChecks = sync.OnceValue(func() map[string]checker { return checkers(reflect.TypeFor[Dependency]()) })
)

// checkers derives a checker for every field of t from its type: strings
// and times by hand (the common, large fields), anything else by decoding
// the value into a fresh one of the field's type.
func checkers(t reflect.Type) map[string]checker {
	m := map[string]checker{}
	for _, f := range reflect.VisibleFields(t) {
		name := jsonName(f)
		if name == "" {
			continue
		}
		switch ft := f.Type; {
		case ft.Kind() == reflect.String:
			m[name] = (*scanner).checkText
		case ft == reflect.TypeFor[time.Time]():
			m[name] = func(s *scanner) error { _, err := s.time(); return err }
		case ft == reflect.TypeFor[*time.Time]():
			m[name] = func(s *scanner) error { _, err := s.ptime(); return err }
		default:
			m[name] = func(s *scanner) error {
				start := s.i
				if err := s.skip(); err != nil {
					return err
				}
				if json.Unmarshal(s.b[start:s.i], reflect.New(ft).Interface()) != nil {
					return errSlow
				}
				return nil
			}
		}
	}
	return m
}

// checkText consumes a string (or null, which encoding/json ignores for a
// string field) without keeping it.
func (s *scanner) checkText() error {
	if s.isNull() {
		return nil
	}
	raw, esc, err := s.str()
	if err != nil {
		return err
	}
	return checkString(raw, esc)
}

func (s *scanner) ptime() (*time.Time, error) {
	t, err := s.timeOrNull(true)
	if err != nil || t.IsZero() {
		return nil, err
	}
	return &t, nil
}

// slowRecord is the encoding/json view of a line.
type slowRecord struct {
	Task
	Type       string     `json:"_type"`
	DeferUntil *time.Time `json:"defer_until"`
	Ephemeral  bool       `json:"ephemeral"`
}

// decodeSlow is the encoding/json path; its error is the one users see.
func decodeSlow(line []byte, r *record) error {
	var x slowRecord
	if err := json.Unmarshal(line, &x); err != nil {
		return err
	}
	r.kind = x.Type
	if r.kind == "" {
		r.kind = "issue"
	}
	if x.DeferUntil != nil {
		r.deferUntil = x.DeferUntil.UTC()
	}
	r.ephemeral = x.Ephemeral
	t := x.Task
	normTimes(&t)
	r.setTask(&t)
	return nil
}
