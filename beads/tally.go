package beads

import (
	"encoding/binary"
	"reflect"
	"runtime"
	"sync"
	"time"
	"unsafe"
)

// The tally pass is the first count's reader (a store nobody counted
// here: a fresh clone, a task file another tool wrote). It reads only what
// counting reads (type, id, status, issue type, ephemeral, defer date,
// labels, dependency edges) in one loop over the line's bytes, checking
// every other value as the index pass does without building it: no
// times made, no per-record strings allocated (ids go to one arena per
// worker). decodeWith on 10,000 tasks was 3x the CPU of `git status`.
// Anything it is not sure of (escapes or non-ASCII in a value it keeps, a
// null where the index pass wants a value, a number it would have to
// read) sends the line to decodeRecords, whose verdict and error stand:
// a line the tally accepts, the full decode accepts with the same
// counting fields (TestTallyMatchesFullDecode, FuzzTallyMatchesFullDecode).

// Field tags: what the tally does with a field's value.
const (
	tagSkip      = iota // a field no Task has: any value
	tagString           // a string field: a string or null
	tagTime             // time.Time: a valid time (null goes to the index pass)
	tagPTime            // *time.Time: a valid time or null
	tagMap              // map[string]any: an object or null
	tagOther            // anything else: the index pass's checker
	tagKind             // _type
	tagID               // id
	tagStatus           // status
	tagIType            // issue_type
	tagPriority         // priority
	tagAssignee         // assignee (a string; null goes to the index pass)
	tagCreated          // created_at
	tagDefer            // defer_until
	tagEphemeral        // ephemeral
	tagLabels           // labels
	tagDeps             // dependencies
	tagIssueID          // a dependency's issue_id
	tagDependsOn        // a dependency's depends_on_id
	tagDepType          // a dependency's type
)

// tallyField is a field as the tally finds it by key.
type tallyField struct {
	bit   uint32
	tag   uint8
	check checker
}

// tallyTable finds a field by key: a slot from the key's length and end
// bytes, checked against the name; keys sharing a slot are in a map.
type tallyTable struct {
	slots [64]int8
	names []string
	info  []tallyField
	more  map[string]int
}

func (t *tallyTable) find(k []byte) (tallyField, bool) {
	if len(k) == 0 {
		return tallyField{}, false
	}
	if i := t.slots[fieldSlot(k)]; i > 0 && t.names[i-1] == string(k) {
		return t.info[i-1], true
	}
	if i, ok := t.more[string(k)]; ok {
		return t.info[i], true
	}
	return tallyField{}, false
}

// newTallyTable tags every JSON field of typ (as jsonIndex numbers them);
// named gives the tags of the fields counting reads.
func newTallyTable(typ reflect.Type, keys map[string]uint, checks map[string]checker, named map[string]uint8) *tallyTable {
	t := &tallyTable{}
	for _, f := range reflect.VisibleFields(typ) {
		name := jsonName(f)
		if name == "" {
			continue
		}
		tag, ok := named[name]
		if !ok {
			switch ft := f.Type; {
			case ft.Kind() == reflect.String:
				tag = tagString
			case ft == reflect.TypeFor[time.Time]():
				tag = tagTime
			case ft == reflect.TypeFor[*time.Time]():
				tag = tagPTime
			case ft == reflect.TypeFor[map[string]any]():
				tag = tagMap
			default:
				tag = tagOther
			}
		}
		i := len(t.names)
		t.names = append(t.names, name)
		t.info = append(t.info, tallyField{bit: uint32(keys[name]), tag: tag, check: checks[name]})
		if h := fieldSlot([]byte(name)); t.slots[h] == 0 && i < 127 {
			t.slots[h] = int8(i + 1)
			continue
		}
		if t.more == nil {
			t.more = map[string]int{}
		}
		t.more[name] = i
	}
	return t
}

var (
	tallyTop = sync.OnceValue(func() *tallyTable {
		return newTallyTable(reflect.TypeFor[slowRecord](), topKeys(), topChecks(), map[string]uint8{
			"_type": tagKind, "id": tagID, "status": tagStatus, "issue_type": tagIType, "priority": tagPriority,
			"assignee": tagAssignee, "created_at": tagCreated, "defer_until": tagDefer, "ephemeral": tagEphemeral,
			"labels": tagLabels, "dependencies": tagDeps,
		})
	})
	tallyDep = sync.OnceValue(func() *tallyTable {
		return newTallyTable(reflect.TypeFor[Dependency](), depKeys(), depChecks(), map[string]uint8{
			"issue_id": tagIssueID, "depends_on_id": tagDependsOn, "type": tagDepType, "created_at": tagTime,
		})
	})
)

// tally is one worker's reader: the line, where it is, and where kept
// texts go.
type tally struct {
	b     []byte
	i     int
	depth int
	strs  map[string]string // interned labels, statuses and types
	deps  *depSlab
	arena []byte // ids, as strings into it; only ever appended to
	// alias: ids are strings over the line's own bytes, not copied into
	// the arena (the caller is done with them before the bytes go).
	alias bool
	top   *tallyTable
	dep   *tallyTable
	// The keys of the last record and dependency read, in order.
	topShape, depShape []shapeKey
}

func newTally() *tally {
	return &tally{strs: make(map[string]string, 64), deps: &depSlab{}, top: tallyTop(), dep: tallyDep()}
}

// tallyAll is tallyRecords in parallel chunks, as decodeParallel.
func tallyAll(store []record, errs []error, mapped bool) {
	workers := min(runtime.GOMAXPROCS(0), 4, len(store)/2000)
	if workers <= 1 {
		tallyRecords(store, errs)
		return
	}
	var wg sync.WaitGroup
	faults := make([]any, workers)
	for w := range workers {
		lo, hi := len(store)*w/workers, len(store)*(w+1)/workers
		wg.Go(func() { faults[w] = caught(mapped, func() { tallyRecords(store[lo:hi], errs[lo:hi]) }) })
	}
	wg.Wait()
	for _, f := range faults {
		if f != nil {
			panic(f)
		}
	}
}

// tallyRecords fills the counting fields of recs (line and raw set); a
// line the tally is unsure of goes through decodeRecords.
func tallyRecords(recs []record, errs []error) { newTally().records(recs, errs) }

func (t *tally) records(recs []record, errs []error) {
	for i := range recs {
		errs[i] = t.one(&recs[i])
	}
}

// one fills the counting fields of r (line and raw set) and returns the
// line's error; a line the tally is unsure of goes through decodeRecords.
func (t *tally) one(r *record) error {
	t.b, t.i, t.depth = r.raw, 0, 0
	if t.record(r) && (r.kind != "issue" || r.id != "") {
		return nil
	}
	*r = record{line: r.line, raw: r.raw}
	var err [1]error
	decodeRecords(unsafe.Slice(r, 1), err[:])
	return err[0]
}

// tallyLines is the tally of lines in turn by one reader, for tests;
// false when it leaves the last to the index pass.
func tallyLines(r *record, lines ...[]byte) bool {
	t := newTally()
	ok := false
	for _, l := range lines {
		*r = record{raw: l}
		t.b, t.i = l, 0
		ok = t.record(r) && (r.kind != "issue" || r.id != "")
	}
	return ok
}

// key reads an object key and finds its field in tab (found false: no
// field has it); ok false for a key the index pass leaves to
// encoding/json (escapes, non-ASCII, capitals) or a field given twice.
func (t *tally) key(tab *tallyTable, sh *[]shapeKey, k int, seen *uint32) (f tallyField, found, ok bool) {
	b, i := t.b, t.i
	if i >= len(b) || b[i] != '"' {
		return f, false, false
	}
	i++
	if k < len(*sh) {
		// Records mostly list the same keys in the same order: the key
		// the last record had here, with its closing quote, is checked in
		// one comparison instead of read and looked up.
		e := &(*sh)[k]
		n := len(e.quoted)
		if len(b)-i >= 16 && n <= 16 {
			// Two words, masked to the key's length.
			if binary.LittleEndian.Uint64(b[i:])&e.mask[0] == e.word[0] && binary.LittleEndian.Uint64(b[i+8:])&e.mask[1] == e.word[1] {
				t.i = i + n
				f, found = e.f, e.found
				goto member
			}
		} else if len(b)-i >= n && string(b[i:i+n]) == e.quoted {
			t.i = i + n
			f, found = e.f, e.found
			goto member
		}
	}
	{
		lo := i
		for ; i < len(b) && b[i] != '"'; i++ {
			if c := b[i]; c < 0x20 || c >= 0x80 || c == '\\' || 'A' <= c && c <= 'Z' {
				return f, false, false
			}
		}
		if i >= len(b) {
			return f, false, false
		}
		t.i = i + 1
		f, found = tab.find(b[lo:i])
		if k < maxShape {
			e := shapeKey{quoted: string(b[lo : i+1]), f: f, found: found}
			e.words()
			if k < len(*sh) {
				(*sh)[k] = e
			} else if k == len(*sh) {
				*sh = append(*sh, e)
			}
		}
	}
member:
	if found {
		if *seen&(1<<f.bit) != 0 {
			return f, false, false
		}
		*seen |= 1 << f.bit
	}
	if i := t.i; i+1 < len(t.b) && t.b[i] == ':' && t.b[i+1] > ' ' {
		t.i = i + 1 // compact JSON: the colon, the value at once
		return f, found, true
	}
	t.ws()
	if t.i >= len(t.b) || t.b[t.i] != ':' {
		return f, false, false
	}
	t.i++
	t.ws()
	return f, found, true
}

// shapeKey is a key as the last record had it at one place: its bytes
// and closing quote, and its field.
type shapeKey struct {
	quoted     string
	word, mask [2]uint64 // quoted's first 16 bytes as two words, and which bytes count
	f          tallyField
	found      bool
}

func (e *shapeKey) words() {
	var w [16]byte
	n := copy(w[:], e.quoted)
	for k := range 2 {
		e.word[k] = binary.LittleEndian.Uint64(w[8*k:])
		for j := range 8 {
			if 8*k+j < n {
				e.mask[k] |= 0xff << (8 * j)
			}
		}
	}
}

// maxShape bounds the keys remembered per kind of object.
const maxShape = 64

// next is after a member: true with more to come, false at the end;
// ok false when neither follows.
func (t *tally) next(close byte) (more, ok bool) {
	if i := t.i; i+1 < len(t.b) && t.b[i] == ',' && t.b[i+1] > ' ' {
		t.i = i + 1 // compact JSON: a comma, the next member at once
		return true, true
	}
	t.ws()
	if t.i < len(t.b) {
		switch t.b[t.i] {
		case ',':
			t.i++
			t.ws()
			return true, true
		case close:
			t.i++
			return false, true
		}
	}
	return false, false
}

// open reads the start of an object or array; empty when it closes at
// once.
func (t *tally) open(c, close byte) (empty, ok bool) {
	if t.i >= len(t.b) || t.b[t.i] != c {
		return false, false
	}
	t.i++
	t.ws()
	if t.i < len(t.b) && t.b[t.i] == close {
		t.i++
		return true, true
	}
	return false, true
}

// value checks a field's value that counting does not keep.
func (t *tally) value(f tallyField, found bool) bool {
	if !found {
		return t.skip()
	}
	switch f.tag {
	case tagString:
		if t.null() {
			return true
		}
		_, _, _, ok := t.str()
		return ok
	case tagTime:
		return t.checkTime(false)
	case tagPTime:
		return t.checkTime(true)
	case tagMap:
		if t.null() {
			return true
		}
		return t.i < len(t.b) && t.b[t.i] == '{' && t.skip()
	}
	s := scanner{b: t.b, i: t.i, depth: t.depth}
	ok := f.check(&s) == nil
	t.i = s.i
	return ok
}

// record reads the line as a record; false sends it to decodeRecords.
func (t *tally) record(r *record) bool {
	r.kind = "issue"
	t.ws()
	empty, ok := t.open('{', '}')
	if !ok {
		return false
	}
	var seen uint32
	for k, more := 0, !empty; more; k++ {
		f, found, ok := t.key(t.top, &t.topShape, k, &seen)
		if !ok {
			return false
		}
		if !found {
			ok = t.skip()
		} else {
			switch f.tag {
			case tagKind:
				r.kind, ok = t.itext()
				if r.kind == "" {
					r.kind = "issue"
				}
			case tagID:
				r.id, ok = t.id()
			case tagStatus:
				r.status, ok = t.itext()
			case tagIType:
				r.itype, ok = t.itext()
			case tagPriority:
				ok = t.int()
			case tagAssignee:
				_, _, _, ok = t.str()
			case tagCreated:
				ok = t.checkTime(false)
			case tagDefer:
				r.deferUntil, ok = t.time(true)
			case tagEphemeral:
				if r.ephemeral = t.lit("true"); !r.ephemeral {
					ok = t.lit("false")
				}
			case tagLabels:
				ok = t.labels(r)
			case tagDeps:
				ok = t.dependencies(r)
			default:
				ok = t.value(f, found)
			}
		}
		if !ok {
			return false
		}
		if more, ok = t.next('}'); !ok {
			return false
		}
	}
	t.ws()
	return t.i == len(t.b)
}

func (t *tally) labels(r *record) bool {
	r.labels = r.labels[:0]
	if t.null() {
		return true
	}
	empty, ok := t.open('[', ']')
	for more := ok && !empty; more; {
		t.ws()
		var l string
		if l, ok = t.itext(); !ok {
			return false
		}
		r.labels = append(r.labels, l)
		if more, ok = t.next(']'); !ok {
			return false
		}
	}
	return ok
}

func (t *tally) dependencies(r *record) bool {
	if t.null() {
		r.deps = nil
		return true
	}
	// Read straight into the slab: copying each edge out of a return
	// value, into a scratch slice and then into the slab was a tenth of
	// the first count (when each was an 88-byte Dependency).
	sl := t.deps
	at := len(sl.chunk)
	empty, ok := t.open('[', ']')
	for more := ok && !empty; more; {
		t.ws()
		if len(sl.chunk) == cap(sl.chunk) {
			// This record's edges so far move to a fresh chunk: a record's
			// edges are one slice.
			n := len(sl.chunk) - at
			c := make([]edge, n, max(512, 2*n))
			copy(c, sl.chunk[at:])
			sl.chunk, at = c, 0
		}
		sl.chunk = sl.chunk[:len(sl.chunk)+1]
		d := &sl.chunk[len(sl.chunk)-1]
		*d = edge{} // a slot given back by a line that failed
		if !t.dependency(r.id, d) {
			sl.chunk = sl.chunk[:at]
			return false
		}
		if more, ok = t.next(']'); !ok {
			sl.chunk = sl.chunk[:at]
			return false
		}
	}
	if !ok {
		sl.chunk = sl.chunk[:at]
		return false
	}
	r.deps = nil
	if len(sl.chunk) > at {
		r.deps = sl.chunk[at:len(sl.chunk):len(sl.chunk)] // no room to grow into the next record's
	}
	return true
}

// giveBack returns r's edges to the slab when they are the last it holds
// (read by this tally, not by the index pass), for the next record's, and
// leaves r without edges.
func (t *tally) giveBack(r *record) {
	c, n := t.deps.chunk, len(r.deps)
	if n > 0 && n <= len(c) && &c[len(c)-n] == &r.deps[0] {
		t.deps.chunk = c[:len(c)-n]
		r.deps = nil
	}
}

// dependency reads one dependency of the task with id own (as read so
// far: the index pass compares issue_id with it the same way) into d.
func (t *tally) dependency(own string, d *edge) bool {
	empty, ok := t.open('{', '}')
	var seen uint32
	for k, more := 0, ok && !empty; more; k++ {
		f, found, ok := t.key(t.dep, &t.depShape, k, &seen)
		if !ok {
			return false
		}
		if !found {
			ok = t.skip()
		} else {
			switch f.tag {
			case tagIssueID:
				// Usually the record's own id, which plain read: the same
				// bytes between quotes are the same text.
				if b, i, n := t.b, t.i, len(own); n > 0 && i+n+1 < len(b) && b[i] == '"' && b[i+n+1] == '"' && string(b[i+1:i+n+1]) == own {
					t.i = i + n + 2
					d.IssueID = own
					break
				}
				var raw []byte
				if raw, ok = t.plain(); ok && string(raw) == own {
					d.IssueID = own // usually the record's own id
				} else {
					d.IssueID = t.keep(raw)
				}
			case tagDependsOn:
				d.DependsOnID, ok = t.id()
			case tagDepType:
				d.Type, ok = t.itext()
			default:
				ok = t.value(f, found)
			}
		}
		if !ok {
			return false
		}
		if more, ok = t.next('}'); !ok {
			return false
		}
	}
	return ok
}
