package beads

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

// readyPassPlain is readyPass as first written: every edge of every task
// looked up, whatever the task's status. readyPass skips look-ups whose
// answer nothing reads; both must agree, with and without memo bits.
func readyPassPlain(recs []*record, byID map[string]int, opt ReadyOptions, now time.Time, bits []byte) []int {
	blocked := make([]bool, len(recs))
	for i, r := range recs {
		if r.kind != "issue" {
			continue
		}
		for _, d := range r.deps {
			if from, to, ok := blockEdge(i, r.id, d, byID); ok && activeStatus(recs[to].status) {
				blocked[from] = true
			}
		}
	}
	holds := func(j int) bool { return parentHolds(recs[j].status, recs[j].deferUntil, blocked[j], now) }
	var out []int
	for i, r := range recs {
		if bits != nil {
			if blocked[i] {
				bits[i] |= memoBlocked
			}
			if r.kind == "issue" && heldBack(r.id, r.deps, byID, holds) {
				bits[i] |= memoHeld
			}
		}
		if !ownReady(r, opt, now) || blocked[i] || heldBack(r.id, r.deps, byID, holds) {
			continue
		}
		out = append(out, i)
		if bits != nil {
			bits[i] |= memoReady
		}
	}
	return out
}

func TestReadyPassSkipsOnlyUnreadLookups(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	statuses := []string{StatusOpen, StatusOpen, StatusClosed, StatusClosed, StatusInProgress, StatusBlocked, "pinned", "deferred"}
	types := []string{"blocks", "blocks", "parent-child", "conditional-blocks", "", "related", "discovered-from"}
	for seed := range 400 {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		n := 1 + rng.IntN(40)
		recs := make([]*record, n)
		byID := map[string]int{}
		for i := range recs {
			r := &record{kind: "issue", id: fmt.Sprintf("t-%d", i), status: statuses[rng.IntN(len(statuses))], itype: "task"}
			switch rng.IntN(10) {
			case 0:
				r.kind = "memory" // not a task
			case 1:
				r.deferUntil = now.Add(time.Duration(rng.IntN(3)-1) * time.Hour)
			case 2:
				r.labels = []string{LabelDeferred}
			}
			for range rng.IntN(4) {
				e := edge{IssueID: r.id, DependsOnID: fmt.Sprintf("t-%d", rng.IntN(n+2)), Type: types[rng.IntN(len(types))]}
				switch rng.IntN(6) {
				case 0:
					e.IssueID = "" // the record's own, unnamed
				case 1:
					e.IssueID = fmt.Sprintf("t-%d", rng.IntN(n+2)) // another record's edge, kept here
				}
				r.deps = append(r.deps, e)
			}
			recs[i] = r
			if r.kind == "issue" {
				byID[r.id] = i
			}
		}
		for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}} {
			want := readyPassPlain(recs, byID, opt, now, nil)
			if got := readyPass(recs, byID, opt, now, nil); !slices.Equal(got, want) {
				t.Fatalf("seed %d: ready %v, want %v", seed, got, want)
			}
			wantBits, gotBits := make([]byte, n), make([]byte, n)
			want = readyPassPlain(recs, byID, opt, now, wantBits)
			if got := readyPass(recs, byID, opt, now, gotBits); !slices.Equal(got, want) || !slices.Equal(gotBits, wantBits) {
				t.Fatalf("seed %d: with bits ready %v %v, want %v %v", seed, got, gotBits, want, wantBits)
			}
		}
	}
}

// The first count gives back the edges counting does not follow
// (edgesUnread) and still counts what a full parse of the file counts:
// closed, pinned and non-task records with edges of their own and edges
// naming other tasks, parents closed but deferred, broken and duplicate
// lines, under several ready options and clocks.
func TestFirstCountMatchesFullParse(t *testing.T) {
	base := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	statuses := []string{"open", "open", "closed", "closed", "closed", "pinned", "in_progress", "blocked"}
	types := []string{"blocks", "blocks", "parent-child", "conditional-blocks", "related"}
	given := 0
	for seed := range 60 {
		rng := rand.New(rand.NewPCG(uint64(seed), 30))
		n := 50 + rng.IntN(400)
		var sb strings.Builder
		for i := range n {
			id := fmt.Sprintf("ch-%04d", i)
			if rng.IntN(50) == 0 {
				id = fmt.Sprintf("ch-%04d", rng.IntN(n)) // a duplicate, now and then
			}
			m := map[string]any{"_type": "issue", "id": id, "title": "T", "status": statuses[rng.IntN(len(statuses))], "priority": 1,
				"issue_type": "task", "created_at": "2026-01-01T00:00:00Z"}
			if rng.IntN(15) == 0 {
				m["_type"] = "memory"
			}
			var deps []map[string]any
			for range rng.IntN(4) {
				d := map[string]any{"issue_id": id, "depends_on_id": fmt.Sprintf("ch-%04d", rng.IntN(n+3)), "type": types[rng.IntN(len(types))]}
				switch rng.IntN(6) {
				case 0:
					d["issue_id"] = fmt.Sprintf("ch-%04d", rng.IntN(n+3)) // names another task as the dependent
				case 1:
					delete(d, "issue_id")
				}
				deps = append(deps, d)
			}
			if deps != nil {
				m["dependencies"] = deps
			}
			switch rng.IntN(6) {
			case 0:
				m["defer_until"] = base.Add(time.Duration(rng.IntN(72)-24) * time.Hour)
			case 1:
				m["labels"] = []string{[]string{LabelDeferred, LabelFailed, "area-1"}[rng.IntN(3)]}
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			if rng.IntN(120) == 0 {
				b = b[:len(b)/2] // a broken line
			}
			sb.Write(b)
			sb.WriteByte('\n')
		}
		data := []byte(sb.String())
		first := parseSnapshotWith(data, "f", func(store []record, errs []error) { tallyBlocks(data, store, errs, false) })
		full := parseSnapshot(data, "f")
		if (first.bad == nil) != (full.bad == nil) || len(first.recs) != len(full.recs) {
			t.Fatalf("seed %d: bad %v / %v, %d / %d records", seed, first.bad, full.bad, len(first.recs), len(full.recs))
		}
		for i, r := range first.recs {
			if o := full.recs[i]; len(r.deps) < len(o.deps) {
				if len(r.deps) != 0 || !edgesUnread(o) {
					t.Fatalf("seed %d: record %d kept %v of %v", seed, i, r.deps, o.deps)
				}
				given++
			}
		}
		for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}, {ExcludeLabels: []string{"area-1"}}, {IncludeLabels: []string{"area-1"}}} {
			for _, now := range []time.Time{base, base.Add(30 * time.Hour), base.Add(-30 * time.Hour)} {
				got, want := indexCounts(first, opt, now), indexCounts(full, opt, now)
				if !sameCounts(got, want) {
					t.Fatalf("seed %d %+v at %v: counts %+v, want %+v", seed, opt, now, got, want)
				}
			}
		}
	}
	if given == 0 {
		t.Fatal("no record's edges were given back")
	}
}

// A task whose id an earlier line has is a bad line naming the first one,
// however many come after it; the first keeps the id.
func TestDuplicateIDNamesTheFirstLine(t *testing.T) {
	line := func(id string) string { return `{"_type":"issue","id":"` + id + `","title":"T","status":"open"}` }
	data := []byte(strings.Join([]string{line("a-1"), line("a-2"), "", line("a-2"), line("a-1"), line("a-2"), line("a-3")}, "\n") + "\n")
	sn := parseSnapshot(data, "f")
	if sn.bad == nil || !strings.Contains(sn.bad.Error(), `f:4: duplicate id "a-2" (first on line 2)`) {
		t.Fatalf("bad %v", sn.bad)
	}
	want := map[string]int{"a-1": 0, "a-2": 1, "a-3": 5}
	if !maps.Equal(sn.byID, want) {
		t.Fatalf("byID %v, want %v", sn.byID, want)
	}
	for i, kind := range []string{"issue", "issue", "", "", "", "issue"} {
		if sn.recs[i].kind != kind {
			t.Fatalf("record %d kind %q, want %q", i, sn.recs[i].kind, kind)
		}
	}
}
