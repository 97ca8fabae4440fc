package beads

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sameAsEncodingJSON(t *testing.T, ts []Task) {
	t.Helper()
	want, werr := json.Marshal(ts)
	got, gerr := MarshalTasks(ts)
	if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
		t.Fatalf("errors differ: %v / %v", gerr, werr)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("output differs\ngot  %s\nwant %s", got, want)
	}
}

// Strings that exercise every escape encoding/json makes.
var awkward = []string{
	"", "plain", `quote " backslash \ slash /`, "<script>&amp;</script>", "\x00\x01\x1f\x7f", "\b\f\n\r\t",
	"é ✓ 日本 😀", "\u2028\u2029", "bad \xff utf8 \xc3", "\xed\xa0\x80 surrogate", strings.Repeat("long ", 50),
}

func randomTask(r *rand.Rand) Task {
	s := func() string { return awkward[r.IntN(len(awkward))] }
	tm := func() time.Time {
		zones := []*time.Location{time.UTC, time.FixedZone("x", 5*3600+1800), time.FixedZone("y", -8*3600), time.Local}
		return time.Unix(r.Int64N(4e9), r.Int64N(3)*int64(r.IntN(1e9))).In(zones[r.IntN(len(zones))])
	}
	t := Task{ID: s(), Title: s(), Description: s(), AcceptanceCriteria: s(), Notes: s(), Status: s(),
		Priority: r.IntN(9) - 4, IssueType: s(), Assignee: s(), CreatedAt: tm(), CreatedBy: s(), UpdatedAt: tm(), CloseReason: s()}
	if r.IntN(2) == 0 {
		v := tm()
		t.StartedAt = &v
	}
	if r.IntN(2) == 0 {
		v := tm()
		t.ClosedAt = &v
	}
	switch r.IntN(3) {
	case 0:
		t.Labels = []string{}
	case 1:
		t.Labels = []string{s(), s()}
	}
	switch r.IntN(3) {
	case 0:
		t.Dependencies = []Dependency{}
	case 1:
		t.Dependencies = []Dependency{{IssueID: s(), DependsOnID: s(), Type: s(), CreatedAt: tm(), CreatedBy: s()}, {}}
	}
	switch r.IntN(3) {
	case 0:
		t.Metadata = map[string]any{}
	case 1:
		t.Metadata = map[string]any{s(): s(), "n": 1.5, "deep": []any{nil, true, map[string]any{"<": 1e21}}}
	}
	return t
}

func TestMarshalTasksMatchesEncodingJSON(t *testing.T) {
	sameAsEncodingJSON(t, nil)
	sameAsEncodingJSON(t, []Task{})
	sameAsEncodingJSON(t, []Task{{}})
	r := rand.New(rand.NewPCG(1, 2))
	for range 2000 {
		ts := make([]Task, r.IntN(3)+1)
		for i := range ts {
			ts[i] = randomTask(r)
		}
		sameAsEncodingJSON(t, ts)
	}
}

// Times and metadata that encoding/json refuses fail the same way.
func TestMarshalTasksErrorsLikeEncodingJSON(t *testing.T) {
	for _, tm := range []time.Time{
		time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("odd", 24*3600)),
		time.Date(2026, 1, 1, 0, 0, 0, 0, time.FixedZone("secs", 3600+30)),
	} {
		sameAsEncodingJSON(t, []Task{{CreatedAt: tm}})
		sameAsEncodingJSON(t, []Task{{ClosedAt: &tm}})
		sameAsEncodingJSON(t, []Task{{Dependencies: []Dependency{{CreatedAt: tm}}}})
	}
	sameAsEncodingJSON(t, []Task{{Metadata: map[string]any{"nan": math.NaN()}}})
}

// Every field of Task and Dependency is written: a field added to either
// without a line in MarshalTasks fails here.
func TestMarshalTasksCoversEveryField(t *testing.T) {
	var task Task
	fill(reflect.ValueOf(&task).Elem())
	if len(task.Dependencies) == 0 || task.StartedAt == nil || len(task.Metadata) == 0 {
		t.Fatalf("fill left fields empty: %+v", task)
	}
	sameAsEncodingJSON(t, []Task{task})
}

// fill sets every field to a non-zero value.
func fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.String:
		v.SetString("v<" + v.Type().Name() + ">")
	case reflect.Int:
		v.SetInt(3)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(time.Date(2026, 2, 3, 4, 5, 6, 7, time.UTC)))
			return
		}
		for i := range v.NumField() {
			fill(v.Field(i))
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem())
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i))
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		v.SetMapIndex(reflect.ValueOf("k"), reflect.ValueOf(any("v")))
	default:
		panic("fill: unhandled " + v.Kind().String())
	}
}
