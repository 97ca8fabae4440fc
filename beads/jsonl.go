package beads

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/bits"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// A hand-written decoder for issues.jsonl lines. encoding/json costs tens of
// milliseconds on a 10k-task file, which a CLI start cannot afford; this one
// reads the fields Ready needs in one pass and decodes whole tasks only for
// the records a caller gets back. Anything unusual (invalid input, \u
// surrogates, floats) returns errSlow and the line goes through
// encoding/json instead, which also words the error for malformed lines.
var errSlow = errors.New("slow path")

type scanner struct {
	b     []byte
	i     int
	strs  map[string]string // interned labels and the like, shared per file
	depth int
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

// fieldKey checks a key against the fields of keys. encoding/json matches
// keys case-insensitively and, for a repeated key, merges maps and ignores
// null for some types; rather than copy those rules, a key that is not
// plain lowercase ASCII, or a field seen twice, sends the line to
// encoding/json. (All field names are lowercase ASCII, so another key
// cannot match one.)
func fieldKey(keys map[string]uint, k []byte, seen *uint32) error {
	for _, c := range k {
		if c >= 0x80 || 'A' <= c && c <= 'Z' {
			return errSlow
		}
	}
	if i, ok := keys[string(k)]; ok {
		if *seen&(1<<i) != 0 {
			return errSlow
		}
		*seen |= 1 << i
	}
	return nil
}

// decodeWith is the index pass: the fields Ready needs, read in one pass
// without reflection (several times faster than encoding/json on a large
// task file; BenchmarkIndexPass10k), every other field checked so that the
// verdict on the line is encoding/json's.
func decodeWith(s *scanner, r *record) error {
	r.kind = "issue"
	var seen uint32
	err := s.object(func(k []byte) error {
		if err := fieldKey(topKeys(), k, &seen); err != nil {
			return err
		}
		var err error
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
			r.priority, err = s.int()
		case "issue_type":
			r.itype, err = s.itext()
		case "assignee":
			r.assignee, err = s.text()
		case "created_at":
			var tm time.Time
			tm, err = s.time()
			r.created = tm
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
			r.deps = r.deps[:0]
			err = s.array(func() error {
				d, err := s.dependency(r.id)
				r.deps = append(r.deps, d)
				return err
			})
		default:
			err = s.check(topChecks(), k)
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
func (s *scanner) dependency(own string) (Dependency, error) {
	var d Dependency
	var seen uint32
	err := s.object(func(k []byte) error {
		if err := fieldKey(depKeys(), k, &seen); err != nil {
			return err
		}
		var err error
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
			d.CreatedAt, err = s.time()
		default:
			err = s.check(depChecks(), k)
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

// check consumes the value of a field the index pass does not keep. A
// title that is a number, or a time that does not parse, makes the line
// bad even though this pass never looks at it again.
func (s *scanner) check(checks map[string]checker, k []byte) error {
	if c, ok := checks[string(k)]; ok {
		return c(s)
	}
	return s.skip()
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

func normTimes(t *Task) {
	t.CreatedAt = t.CreatedAt.UTC()
	t.UpdatedAt = t.UpdatedAt.UTC()
	if t.StartedAt != nil {
		v := t.StartedAt.UTC()
		t.StartedAt = &v
	}
	if t.ClosedAt != nil {
		v := t.ClosedAt.UTC()
		t.ClosedAt = &v
	}
	for i := range t.Dependencies {
		t.Dependencies[i].CreatedAt = t.Dependencies[i].CreatedAt.UTC()
	}
}

// knownKeys are the top-level fields Task owns (and "_type", which every
// record is written with); everything else in a record is carried over
// untouched when the record is rewritten.
var knownKeys = func() map[string]bool {
	m := map[string]bool{"_type": true}
	for k := range jsonIndex(reflect.TypeFor[Task]()) {
		m[k] = true
	}
	return m
}()

// encodeRecord writes t as one JSONL line, keeping raw's unknown fields
// (and the extra fields of dependency records that still exist).
func encodeRecord(t *Task, raw []byte, drop map[string]bool) ([]byte, error) {
	tc := *t
	deps := tc.Dependencies
	tc.Dependencies = nil
	body, err := json.Marshal(&tc)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	buf.WriteString(`{"_type":"issue",`)
	buf.Write(body[1 : len(body)-1])
	var rawDeps map[[3]string]json.RawMessage
	var extra []kv
	if raw != nil {
		extra, rawDeps, err = unknownFields(raw)
		if err != nil {
			return nil, err
		}
	}
	if len(deps) > 0 {
		buf.WriteString(`,"dependencies":[`)
		for i, d := range deps {
			if i > 0 {
				buf.WriteByte(',')
			}
			if r, ok := rawDeps[[3]string{d.IssueID, d.DependsOnID, d.Type}]; ok {
				buf.Write(r)
				continue
			}
			b, err := json.Marshal(d)
			if err != nil {
				return nil, err
			}
			buf.Write(b)
		}
		buf.WriteByte(']')
	}
	for _, f := range extra {
		if drop[f.k] {
			continue
		}
		kb, _ := json.Marshal(f.k)
		buf.WriteByte(',')
		buf.Write(kb)
		buf.WriteByte(':')
		buf.Write(f.v)
	}
	buf.WriteByte('}')
	return buf.Bytes(), nil
}

type kv struct {
	k string
	v json.RawMessage
}

func unknownFields(raw []byte) ([]kv, map[[3]string]json.RawMessage, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, nil, err
	}
	// Keep the original key order for stable diffs.
	var order []string
	if tok, err := dec.Token(); err == nil && tok == json.Delim('{') {
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				break
			}
			k, _ := tok.(string)
			order = append(order, k)
			var skipv json.RawMessage
			if dec.Decode(&skipv) != nil {
				break
			}
		}
	}
	var out []kv
	seen := map[string]bool{}
	for _, k := range order {
		if knownKeys[k] || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, kv{k, m[k]})
	}
	var deps map[[3]string]json.RawMessage
	if d, ok := m["dependencies"]; ok {
		var list []json.RawMessage
		if json.Unmarshal(d, &list) == nil {
			deps = map[[3]string]json.RawMessage{}
			for _, one := range list {
				var x Dependency
				if json.Unmarshal(one, &x) == nil {
					deps[[3]string{x.IssueID, x.DependsOnID, x.Type}] = one
				}
			}
		}
	}
	return out, deps, nil
}
