package config

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strings"

	"github.com/chorus-dev/chorus/chorusdir"
)

// SetKey sets one dotted key (e.g. "merge.targetBranch") in the project
// file at path and writes it back atomically. Only that key changes: the
// other keys keep their order and values, and nothing from the defaults,
// the user-level file or the environment is written into the file (Save
// would write the whole layered config).
func SetKey(path, key string, value any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	data = bytes.TrimPrefix(data, utf8BOM)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	root, err := decodeOrdered(dec)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	obj, ok := root.(*object)
	if !ok {
		return fmt.Errorf("%s: the file must hold a JSON object", path)
	}
	parts := strings.Split(key, ".")
	for _, p := range parts[:len(parts)-1] {
		next, ok := obj.get(p).(*object)
		if !ok {
			next = &object{}
			obj.set(p, next)
		}
		obj = next
	}
	obj.set(parts[len(parts)-1], value)
	var buf bytes.Buffer
	if err := encodeOrdered(&buf, root, ""); err != nil {
		return err
	}
	buf.WriteByte('\n')
	return chorusdir.WriteAtomic(path, buf.Bytes(), chorusdir.FileMode)
}

// object is a JSON object that keeps its keys in file order.
type object struct {
	keys []string
	vals map[string]any
}

func (o *object) get(k string) any {
	if o.vals == nil {
		return nil
	}
	return o.vals[k]
}

func (o *object) set(k string, v any) {
	if o.vals == nil {
		o.vals = map[string]any{}
	}
	if _, ok := o.vals[k]; !ok {
		o.keys = append(o.keys, k)
	}
	o.vals[k] = v
}

// decodeOrdered reads one JSON value; objects become *object, arrays
// []any, everything else stays as the decoder's token.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return tok, nil
	}
	switch d {
	case '{':
		o := &object{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, err
			}
			k, _ := kt.(string)
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			o.set(k, v)
		}
		_, err := dec.Token()
		return o, err
	case '[':
		arr := []any{}
		for dec.More() {
			v, err := decodeOrdered(dec)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		_, err := dec.Token()
		return arr, err
	}
	return nil, fmt.Errorf("unexpected %v", d)
}

// encodeOrdered writes v indented by two spaces, as Save does.
func encodeOrdered(b *bytes.Buffer, v any, indent string) error {
	switch x := v.(type) {
	case *object:
		if len(x.keys) == 0 {
			b.WriteString("{}")
			return nil
		}
		b.WriteString("{\n")
		for i, k := range x.keys {
			kb, _ := json.Marshal(k)
			b.WriteString(indent + "  ")
			b.Write(kb)
			b.WriteString(": ")
			if err := encodeOrdered(b, x.vals[k], indent+"  "); err != nil {
				return err
			}
			if i < len(x.keys)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "}")
	case []any:
		if len(x) == 0 {
			b.WriteString("[]")
			return nil
		}
		b.WriteString("[\n")
		for i, e := range x {
			b.WriteString(indent + "  ")
			if err := encodeOrdered(b, e, indent+"  "); err != nil {
				return err
			}
			if i < len(x)-1 {
				b.WriteByte(',')
			}
			b.WriteByte('\n')
		}
		b.WriteString(indent + "]")
	default:
		// json.Marshal escapes <, > and & in strings as Save's MarshalIndent
		// does; numbers keep their text (json.Number).
		vb, err := json.Marshal(x)
		if err != nil {
			return err
		}
		b.Write(vb)
	}
	return nil
}
