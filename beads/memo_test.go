package beads

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// memoLines is a task file with every index field counting reads: blockers,
// parent-child edges, labels, defer dates on both sides of now, ephemeral
// and excluded types, and a record that is not a task.
func memoLines(n int) [][]byte {
	var out [][]byte
	statuses := []string{"open", "open", "open", "closed", "in_progress", "blocked"}
	for i := range n {
		id := fmt.Sprintf("ch-%04d", i)
		extra := ""
		switch i % 11 {
		case 1:
			extra = `,"defer_until":"2020-01-01T00:00:00Z"`
		case 2:
			extra = `,"defer_until":"2099-01-01T00:00:00Z"`
		case 3:
			extra = `,"ephemeral":true`
		}
		itype := "task"
		if i%13 == 4 {
			itype = "epic"
		}
		deps := ""
		if i > 3 {
			typ := "blocks"
			if i%5 == 0 {
				typ = "parent-child"
			}
			deps = fmt.Sprintf(`,"dependencies":[{"issue_id":%q,"depends_on_id":"ch-%04d","type":%q,"created_at":"2026-01-01T00:00:00Z"}]`, id, (i*7)%i, typ)
		}
		out = append(out, fmt.Appendf(nil, `{"_type":"issue","id":%q,"title":"Task %d","status":%q,"priority":%d,"issue_type":%q,"created_at":"2026-01-01T00:00:00Z","labels":["area-%d"%s]%s%s}`,
			id, i, statuses[i%len(statuses)], i%5, itype, i%3, map[bool]string{true: `,"failed"`}[i%17 == 5], deps, extra))
		if i == n/2 {
			out = append(out, []byte(`{"_type":"memory","key":"k","value":"v"}`))
		}
	}
	return out
}

func join(lines [][]byte) []byte { return append(bytes.Join(lines, []byte("\n")), '\n') }

// sameIndex fails unless a and b agree on every field counting reads.
func sameIndex(t *testing.T, what string, a, b *snapshot) {
	t.Helper()
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	if (a.bad == nil) != (b.bad == nil) || len(a.recs) != len(b.recs) || !maps.Equal(a.byID, b.byID) {
		t.Fatalf("%s: bad %v / %v, %d / %d records", what, a.bad, b.bad, len(a.recs), len(b.recs))
	}
	for i, r := range a.recs {
		o := b.recs[i]
		if r.kind != o.kind || r.id != o.id || r.status != o.status || r.itype != o.itype || r.ephemeral != o.ephemeral ||
			!r.deferUntil.Equal(o.deferUntil) || !slices.Equal(r.labels, o.labels) || len(r.deps) != len(o.deps) {
			t.Fatalf("%s: record %d: %+v, want %+v", what, i, *r, *o)
		}
		for j, d := range r.deps {
			if e := o.deps[j]; d.IssueID != e.IssueID || d.DependsOnID != e.DependsOnID || d.Type != e.Type {
				t.Fatalf("%s: record %d dependency %d: %+v, want %+v", what, i, j, d, e)
			}
		}
	}
	for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}, {ExcludeLabels: []string{"area-1"}}} {
		if got, want := indexCounts(a, opt, now), indexCounts(b, opt, now); got.Total != want.Total || got.Ready != want.Ready ||
			got.Failed != want.Failed || !maps.Equal(got.ByStatus, want.ByStatus) {
			t.Fatalf("%s %+v: counts %+v, want %+v", what, opt, got, want)
		}
	}
}

// After any edit, a snapshot parsed with the memo of the file before it
// has the index fields a full parse gives, decoding only changed lines.
func TestMemoDecodesOnlyChangedLines(t *testing.T) {
	lines := memoLines(400)
	path := filepath.Join(t.TempDir(), indexMemoFile)
	full := parseSnapshot(join(lines), "f")
	if err := os.WriteFile(path, encodeMemo(full, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	memo := readMemo(path)
	if memo == nil || memo.v.n != len(lines) {
		t.Fatal("memo not read back")
	}
	edit := func(f func(l [][]byte) [][]byte) [][]byte { return f(slices.Clone(lines)) }
	line := func(s string) []byte { return []byte(s) }
	for _, c := range []struct {
		name    string
		lines   [][]byte
		decoded int
	}{
		{"unchanged", lines, 0},
		{"one task closed", edit(func(l [][]byte) [][]byte {
			l[10] = bytes.Replace(l[10], line(`"status":"in_progress"`), line(`"status":"closed"`), 1)
			return l
		}), 1},
		{"one task added in the middle", edit(func(l [][]byte) [][]byte {
			return slices.Insert(l, 150, line(`{"_type":"issue","id":"ch-new","title":"New","status":"open","priority":1,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","dependencies":[{"issue_id":"ch-new","depends_on_id":"ch-0005","type":"blocks","created_at":"2026-01-01T00:00:00Z"}]}`))
		}), 1},
		{"one task deleted", edit(func(l [][]byte) [][]byte { return slices.Delete(l, 7, 8) }), 0},
		{"two swapped", edit(func(l [][]byte) [][]byte { l[20], l[30] = l[30], l[20]; return l }), 0},
		{"a duplicate id", edit(func(l [][]byte) [][]byte { return append(l, l[3]) }), 0},
		{"a bad line", edit(func(l [][]byte) [][]byte { return slices.Insert(l, 5, line(`{"_type":"issue","id":`)) }), 1},
	} {
		data := join(c.lines)
		for _, mapped := range []bool{false, true} {
			got, decoded := parseSnapshotMemo(data, "f", memo, nil, mapped)
			full := parseSnapshot(data, "f")
			sameIndex(t, c.name, got, full)
			// Renewed from it (records taken from the memo copied as
			// encoded), the memo is the one a full parse writes.
			if got.bad == nil && !bytes.Equal(encodeMemo(got, nil), encodeMemo(full, nil)) {
				t.Errorf("%s: the memo renewed from it differs from a fresh one", c.name)
			}
			if decoded != c.decoded {
				t.Errorf("%s: decoded %d lines, want %d", c.name, decoded, c.decoded)
			}
		}
	}
}

// A memo that is damaged, cut short or from another format is not used.
func TestMemoDamagedIsIgnored(t *testing.T) {
	b := encodeMemo(parseSnapshot(join(memoLines(50)), "f"), nil)
	path := filepath.Join(t.TempDir(), indexMemoFile)
	for name, data := range map[string][]byte{
		"flipped": func() []byte { c := slices.Clone(b); c[len(c)/2] ^= 1; return c }(),
		"short":   b[:len(b)-9],
		"magic":   append([]byte("chorus-index-memo 0\n"), b[len(indexMemoMagic):]...),
	} {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		if readMemo(path) != nil {
			t.Errorf("%s: memo used", name)
		}
	}
}
