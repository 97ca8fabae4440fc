package beads

import (
	"bytes"
	"reflect"
	"testing"
	"time"
)

// TestEveryTaskFieldRoundTrips writes a task with every field set the way
// the store writes records and reads it back the way the store reads
// them (index pass, then the whole task). A field added to Task needs no
// other change to pass; a codec that names fields one by one would fail.
func TestEveryTaskFieldRoundTrips(t *testing.T) {
	var task Task
	fill(reflect.ValueOf(&task).Elem())
	task.ID = "ch-1"
	if len(task.Dependencies) == 0 || task.StartedAt == nil || len(task.Metadata) == 0 {
		t.Fatalf("fill left fields empty: %+v", task)
	}
	line, err := encodeRecord(&task, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var r record
	if err := decodeLine(line, &r); err != nil {
		t.Fatalf("index pass refused %s: %v", line, err)
	}
	prio, created := r.order()
	if r.id != task.ID || r.status != task.Status || prio != task.Priority || !created.Equal(task.CreatedAt) ||
		len(r.labels) != len(task.Labels) || len(r.deps) != len(task.Dependencies) {
		t.Errorf("index fields: %+v", r)
	}
	r.raw = line
	got, err := r.full()
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*got, task) {
		t.Errorf("round trip changed the task:\n got %+v\nwant %+v", *got, task)
	}
	// A copy handed to a caller shares nothing with the store's record.
	c := cloneTask(got)
	fill(reflect.ValueOf(&c).Elem()) // overwrite every field in place
	if !reflect.DeepEqual(*got, task) {
		t.Error("cloneTask shares memory with the store's record")
	}
	for name := range knownKeys() {
		if name != "_type" && !hasJSONKey(line, name) {
			t.Errorf("field %q missing from the written record %s", name, line)
		}
	}
}

func hasJSONKey(line []byte, k string) bool {
	return bytes.Contains(line, []byte(`"`+k+`":`))
}

// fill sets every field to a non-zero value (times in UTC, as the store
// keeps them).
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v<" + v.Type().Name() + ">")
	case reflect.Int:
		v.SetInt(3)
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		fill(v.Elem())
	case reflect.Slice:
		if v.Len() == 0 {
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		}
		for i := range v.Len() {
			fill(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(any("v")))
	default:
		panic("fill: unhandled " + v.Kind().String())
	}
}
