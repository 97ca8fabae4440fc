package beads

import (
	"bytes"
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

// The first count (countFirst) counts what a full parse of the file
// counts, with its defer window and its first bad line: closed, pinned
// and non-task records with edges of their own and edges naming other
// tasks, edges to missing tasks, parents closed, blocked or deferred,
// ephemeral tasks and types left out of ready work, lines the tally
// leaves to the index pass (escapes, non-ASCII), blank lines, broken and
// duplicate lines, under several ready options and clocks.
func TestFirstCountMatchesFullParse(t *testing.T) {
	base := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	statuses := []string{"open", "open", "closed", "closed", "closed", "pinned", "in_progress", "blocked", "deferred", "hooked"}
	types := []string{"blocks", "blocks", "parent-child", "parent-child", "conditional-blocks", "related", ""}
	itypes := []string{"task", "task", "epic", "bug", "gate", "molecule"}
	bad, slow := 0, 0
	for seed := range 120 {
		rng := rand.New(rand.NewPCG(uint64(seed), 30))
		n := 20 + rng.IntN(300)
		id := func(i int) string { return fmt.Sprintf("ch-%04d", i) }
		var sb strings.Builder
		for i := range n {
			own := id(i)
			if rng.IntN(50) == 0 {
				own = id(rng.IntN(n)) // a duplicate, now and then
			}
			m := map[string]any{"_type": "issue", "id": own, "title": "T", "status": statuses[rng.IntN(len(statuses))], "priority": 1,
				"issue_type": itypes[rng.IntN(len(itypes))], "created_at": "2026-01-01T00:00:00Z"}
			switch rng.IntN(15) {
			case 0:
				m["_type"] = "memory"
			case 1:
				delete(m, "_type")
			case 2:
				m["ephemeral"] = true
			}
			var deps []map[string]any
			for range rng.IntN(4) {
				d := map[string]any{"issue_id": own, "depends_on_id": id(rng.IntN(n + 3)), "type": types[rng.IntN(len(types))]}
				switch rng.IntN(6) {
				case 0:
					d["issue_id"] = id(rng.IntN(n + 3)) // names another task as the dependent
				case 1:
					delete(d, "issue_id")
				case 2:
					d["issue_id"] = ""
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
			case 2:
				m["labels"] = []string{"area-1", LabelFailed}
			}
			b, err := json.Marshal(m)
			if err != nil {
				t.Fatal(err)
			}
			switch rng.IntN(40) {
			case 0:
				b = b[:len(b)/2] // a broken line
				bad++
			case 1:
				// An escape in a value counting keeps: the index pass reads it.
				b = bytes.Replace(b, []byte(`"title":"T"`), []byte(`"title":"T","assignee":"\u00e9"`), 1)
				b = bytes.Replace(b, []byte(`"id":"ch-`), []byte(`"id":"ch\u002d`), 1)
				slow++
			case 2:
				sb.WriteString("  \n\n")
			}
			sb.Write(b)
			sb.WriteByte('\n')
		}
		data := []byte(sb.String())
		full := parseSnapshot(data, "f")
		for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}, {ExcludeLabels: []string{"area-1"}}, {IncludeLabels: []string{"area-1"}}} {
			for _, now := range []time.Time{base, base.Add(30 * time.Hour), base.Add(-30 * time.Hour)} {
				got, want := countFirst(data, "f", opt, now), indexCounts(full, opt, now)
				if !sameCounts(got.c, want) {
					t.Fatalf("seed %d %+v at %v: counts %+v, want %+v", seed, opt, now, got.c, want)
				}
				if lo, hi := deferWindow(full.recs, now); got.lo != lo || got.hi != hi {
					t.Fatalf("seed %d at %v: window %d %d, want %d %d", seed, now, got.lo, got.hi, lo, hi)
				}
				if fmt.Sprint(got.bad) != fmt.Sprint(full.bad) || (got.blocks == nil) != (full.bad != nil) || got.n != len(full.recs) {
					t.Fatalf("seed %d: bad %v (%d runs, %d records), want %v (%d records)", seed, got.bad, len(got.blocks), got.n, full.bad, len(full.recs))
				}
			}
		}
	}
	if bad == 0 || slow == 0 {
		t.Fatal("no broken line, or none for the index pass")
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

// FuzzCountFirstMatchesFullParse: whatever the file, the first count
// counts what a full parse counts and names the same first bad line.
func FuzzCountFirstMatchesFullParse(f *testing.F) {
	f.Add([]byte(strings.Join(jsonlSeeds, "\n")))
	f.Add([]byte(`{"id":"a","status":"open","dependencies":[{"depends_on_id":"b","type":"blocks"}]}` + "\n" +
		`{"id":"b","status":"open","dependencies":[{"issue_id":"c","depends_on_id":"a","type":"parent-child"}]}` + "\n" +
		`{"id":"c","status":"open","defer_until":"2026-12-01T00:00:00Z","dependencies":[{"depends_on_id":"b","type":"parent-child"}]}` + "\n" +
		`{"id":"a","status":"closed"}` + "\n"))
	now := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		full := parseSnapshot(data, "f")
		for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}} {
			got, want := countFirst(data, "f", opt, now), indexCounts(full, opt, now)
			if !sameCounts(got.c, want) || fmt.Sprint(got.bad) != fmt.Sprint(full.bad) || got.n != len(full.recs) {
				t.Fatalf("%+v: counts %+v bad %v, want %+v bad %v", opt, got.c, got.bad, want, full.bad)
			}
		}
	})
}

// The id table numbers ids in the order first seen and finds each again,
// through its growth from a table sized for few.
func TestIDTableNumbersIDs(t *testing.T) {
	tab := newIDTable(1)
	ids := []string{"", "a"}
	for i := range 5000 {
		ids = append(ids, fmt.Sprintf("ch-%x", i), strings.Repeat("x", i%40)+fmt.Sprint(i))
	}
	for round := range 2 {
		for i, id := range ids {
			s, added := tab.slot(id)
			if int(s) != i || added != (round == 0) {
				t.Fatalf("round %d: %q slot %d added %v, want %d", round, id, s, added, i)
			}
		}
	}
	if len(tab.end) != len(ids) || 4*len(ids) > 3*len(tab.tab) {
		t.Fatalf("%d ids in a table of %d", len(tab.end), len(tab.tab))
	}
}
