package beads

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"
)

// jsonlSeeds are lines the fast reader once accepted although
// encoding/json rejects them, lines that decode differently by case or
// repetition of keys, and ordinary records.
var jsonlSeeds = []string{
	`{"id":"ch-1","title":"t","status":"open","priority":2,"created_at":"2024-01-02T03:04:05Z","updated_at":"2024-01-02T03:04:05.123Z"}`,
	`{"id":"ch-1","x":+}`,
	`{"id":"ch-1","x":+1}`,
	`{"id":"ch-1","x":007}`,
	`{"id":"ch-1","priority":007}`,
	`{"id":"ch-1","x":1.}`,
	`{"id":"ch-1","x":1e}`,
	`{"id":"ch-1","x":--1}`,
	`{"id":"ch-1","x":.5}`,
	`{"id":"ch-1","x":-0.5e+10}`,
	"{\"id\":\"ch-1\",\"x\":\"a\x01b\"}",
	"{\"id\":\"ch-1\",\"title\":\"a\x1fb\"}",
	"{\"id\":\"ch-1\",\"x\x02\":1}",
	`{"id":"ch-1","x":"\q"}`,
	`{"id":"ch-1","x":"\u12"}`,
	`{"id":"ch-1","x":"\u12G4"}`,
	`{"id":"ch-1","x":"\ud800"}`,
	"{\"id\":\"ch-1\",\"title\":\"\xff\"}",
	`{"ID":"ch-1","Status":"closed"}`,
	`{"id":"ch-1","id":"ch-2"}`,
	`{"id":"ch-1","metadata":{"a":1},"metadata":{"b":2}}`,
	`{"id":"ch-1","created_at":"2024-01-02T03:04:05Z","created_at":null}`,
	`{"id":"ch-1","started_at":null,"defer_until":null}`,
	`{"id":"ch-1","created_at":"2024-01-02T03:04:05+01:00"}`,
	`{"id":"ch-1","created_at":"2024-02-30T03:04:05Z"}`,
	`{"id":"ch-1","labels":["a","b"],"dependencies":[{"issue_id":"ch-1","depends_on_id":"ch-0","type":"blocks"}]}`,
	`{"id":"ch-1","dependencies":[{"issue_id":null}]}`,
	`{"id":"ch-1","dependencies":[{"issue_id":"ch-1","Issue_ID":"x"}]}`,
	`{"id":"ch-1","labels":null,"ephemeral":true,"_type":"issue"}`,
	`{"id":"ch-1","x":[1,{"a":[true,false,null]}]}`,
	`{"id":"ch-1"} x`,
	`null`,
	`[]`,
	`{"id":"ch-1",}`,
	`{"id":"ch-1","priority":-0}`,
	`{"id":"ch-1","priority":1234567890}`,
}

func FuzzJSONLMatchesEncodingJSON(f *testing.F) {
	for _, s := range jsonlSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkAgainstEncodingJSON(t, line)
	})
}

// TestJSONLSeedsMatchEncodingJSON runs the seed corpus in ordinary test
// runs too.
func TestJSONLSeedsMatchEncodingJSON(t *testing.T) {
	for _, s := range jsonlSeeds {
		checkAgainstEncodingJSON(t, []byte(s))
	}
}

// checkAgainstEncodingJSON reads line the way the store does (the fast
// index pass with encoding/json behind it, then the full decode) and
// requires the same verdict and the same values as encoding/json alone.
func checkAgainstEncodingJSON(t *testing.T, line []byte) {
	t.Helper()
	var want slowRecord
	werr := json.Unmarshal(line, &want)

	// The index pass, as decodeRecords does it.
	var idx record
	ierr := decodeWith(&scanner{b: line, strs: map[string]string{}}, &idx)
	if ierr != nil {
		idx = record{}
		ierr = decodeSlow(line, &idx)
	}
	// The full decode, as record.full does it.
	full := record{raw: line}
	_, ferr := full.full()

	if (werr == nil) != (ierr == nil) || (werr == nil) != (ferr == nil) {
		t.Fatalf("%q: encoding/json says %v; index pass %v; full decode %v", line, werr, ierr, ferr)
	}
	if werr != nil {
		return
	}
	wt := want.Task
	normTimes(&wt)
	kind := want.Type
	if kind == "" {
		kind = "issue"
	}
	var wdefer time.Time
	if want.DeferUntil != nil {
		wdefer = want.DeferUntil.UTC()
	}
	got := idx
	prio, created := got.order()
	if got.kind != kind || got.id != wt.ID || got.status != wt.Status || prio != wt.Priority ||
		got.itype != wt.IssueType || !created.Equal(wt.CreatedAt) ||
		!got.deferUntil.Equal(wdefer) || got.ephemeral != want.Ephemeral ||
		!slices.Equal(got.labels, wt.Labels) || !sameIndexDeps(got.deps, edgesOf(wt.Dependencies)) {
		t.Fatalf("%q: index fields differ:\n got %+v\nwant %+v (kind %q)", line, got, wt, kind)
	}
	ft := *full.task()
	if !sameTask(ft, wt) {
		t.Fatalf("%q: full decode differs:\n got %+v\nwant %+v", line, ft, wt)
	}
}

func sameDeps(a, b []Dependency) bool {
	return slices.EqualFunc(a, b, func(x, y Dependency) bool {
		return x.IssueID == y.IssueID && x.DependsOnID == y.DependsOnID && x.Type == y.Type &&
			x.CreatedAt.Equal(y.CreatedAt) && x.CreatedBy == y.CreatedBy
	})
}

// sameIndexDeps compares what the index pass reads of dependencies.
func sameIndexDeps(a, b []edge) bool { return slices.Equal(a, b) }

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Equal(*b)
}

func sameTask(a, b Task) bool {
	if !sameDeps(a.Dependencies, b.Dependencies) || !slices.Equal(a.Labels, b.Labels) ||
		!a.CreatedAt.Equal(b.CreatedAt) || !a.UpdatedAt.Equal(b.UpdatedAt) ||
		!sameTime(a.StartedAt, b.StartedAt) || !sameTime(a.ClosedAt, b.ClosedAt) {
		return false
	}
	if len(a.Metadata) != 0 || len(b.Metadata) != 0 {
		if !reflect.DeepEqual(a.Metadata, b.Metadata) {
			return false
		}
	}
	a.Dependencies, b.Dependencies, a.Labels, b.Labels, a.Metadata, b.Metadata = nil, nil, nil, nil, nil, nil
	a.CreatedAt, b.CreatedAt, a.UpdatedAt, b.UpdatedAt = time.Time{}, time.Time{}, time.Time{}, time.Time{}
	a.StartedAt, b.StartedAt, a.ClosedAt, b.ClosedAt = nil, nil, nil, nil
	return reflect.DeepEqual(a, b)
}
