package beads

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
)

// Writing records back: times in UTC, known fields from Task, and the
// fields Chorus does not know kept as they were.

// normTimes puts a task's times in UTC, as the store writes them.
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
// untouched when the record is rewritten. Made on first use, not at every
// process start.
var knownKeys = sync.OnceValue(func() map[string]bool {
	m := map[string]bool{"_type": true}
	for k := range jsonIndex(reflect.TypeFor[Task]()) {
		m[k] = true
	}
	return m
})

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
	seen, known := map[string]bool{}, knownKeys()
	for _, k := range order {
		if known[k] || seen[k] {
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
