package beads

import "sync"

// fieldTable finds a record's field by its JSON key in a few instructions:
// the index pass looks a key up once or twice per field, 200,000 times on
// 10,000 tasks, where a map's hashing was a tenth of a first `chorus
// status`. A slot picked from the key's length and end bytes holds one
// field; the few that share a slot are in a map.
type fieldTable struct {
	slots  [64]int8 // index+1 into fields, 0 for none
	fields []tableField
	more   map[string]int
}

type tableField struct {
	name  string
	bit   uint    // for the duplicate check
	check checker // consumes the value of a field the pass does not keep
}

func fieldSlot(k []byte) int {
	return (len(k)*7 + int(k[0])*3 + int(k[len(k)-1])) & 63
}

func newFieldTable(keys map[string]uint, checks map[string]checker) *fieldTable {
	t := &fieldTable{}
	for name, bit := range keys {
		i := len(t.fields)
		t.fields = append(t.fields, tableField{name: name, bit: bit, check: checks[name]})
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

// find returns the field named k, or nil.
func (t *fieldTable) find(k []byte) *tableField {
	if len(k) == 0 {
		return nil
	}
	if i := t.slots[fieldSlot(k)]; i > 0 && t.fields[i-1].name == string(k) {
		return &t.fields[i-1]
	}
	if i, ok := t.more[string(k)]; ok {
		return &t.fields[i]
	}
	return nil
}

var (
	topFields = sync.OnceValue(func() *fieldTable { return newFieldTable(topKeys(), topChecks()) })
	depFields = sync.OnceValue(func() *fieldTable { return newFieldTable(depKeys(), depChecks()) })
)

// fieldOf checks a key against the fields of t and returns its field, or
// nil for a key no field has. encoding/json matches
// keys case-insensitively and, for a repeated key, merges maps and ignores
// null for some types; rather than copy those rules, a key that is not
// plain lowercase ASCII, or a field seen twice, sends the line to
// encoding/json. (All field names are lowercase ASCII, so another key
// cannot match one.)
func fieldOf(t *fieldTable, k []byte, seen *uint32) (*tableField, error) {
	for _, c := range k {
		if c >= 0x80 || 'A' <= c && c <= 'Z' {
			return nil, errSlow
		}
	}
	f := t.find(k)
	if f != nil {
		if *seen&(1<<f.bit) != 0 {
			return nil, errSlow
		}
		*seen |= 1 << f.bit
	}
	return f, nil
}

// checkField consumes the value of field f (nil: a key no field has), a
// field the index pass does not keep. A title that is a number, or a time
// that does not parse, makes the line bad even though this pass never
// looks at it again.
func (s *scanner) checkField(f *tableField) error {
	if f != nil && f.check != nil {
		return f.check(s)
	}
	return s.skip()
}

// depSlab holds the dependencies of many records in a few allocations
// rather than a slice grown per record.
type depSlab struct {
	scratch []edge // one record's, while it is read
	chunk   []edge
	mores   []recordMore // the records' recordMore, likewise
}

// more is a fresh recordMore from the slab.
func (d *depSlab) more() *recordMore {
	if len(d.mores) == cap(d.mores) {
		d.mores = make([]recordMore, 0, 256)
	}
	d.mores = d.mores[:len(d.mores)+1]
	return &d.mores[len(d.mores)-1]
}

// keep copies deps into the slab; the slice it returns has no room to
// grow, so appending to it never writes over another record's.
func (d *depSlab) keep(deps []edge) []edge {
	if len(deps) == 0 {
		return nil
	}
	if cap(d.chunk)-len(d.chunk) < len(deps) {
		d.chunk = make([]edge, 0, max(512, len(deps)))
	}
	at := len(d.chunk)
	d.chunk = append(d.chunk, deps...)
	return d.chunk[at:len(d.chunk):len(d.chunk)]
}
