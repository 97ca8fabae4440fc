package beads

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// tallySeeds are lines of every shape the tally meets: ordinary records,
// bd's export, and broken ones (cut short, wrong types, escapes, bad
// UTF-8, control bytes, repeated or capitalised keys).
var tallySeeds = append(slices.Clone(jsonlSeeds),
	`{"_type":"issue","id":"ch-1","title":"T","status":"open","priority":2,"issue_type":"task","created_at":"2026-11-22T00:00:00Z","updated_at":"2026-11-22T00:00:00Z","dependencies":[{"issue_id":"ch-1","depends_on_id":"ch-0","type":"blocks","created_at":"2026-11-22T00:00:00Z"}]}`,
	`{"_type":"issue","id":"ch-1","title":"T","status":"open","priority":2,"issue_type":"task","created_at":"2026-11-22T00:00:00Z","dependencies":[{"issue_id":"ch-1","depends_on_id":"ch-0","type":"blo`,
	`{"id":"ch-1","title":"a \"quoted\" \\ title\n\t\u00e9\ud83d\ude00","status":"open"}`,
	`{"id":"ch-1","title":"caf`+"\xc3\xa9"+`","status":"open","description":"`+"\xff\xfe"+`"}`,
	`{"id":"ch-1","title":"`+"\xe2\x82"+`","status":"open"}`,
	`{"id":"ch-`+"\xc3\xa9"+`","status":"open"}`,
	`{"id":"ch-\u0031","status":"op\u0065n"}`,
	`{"id":"ch-1","status":"open","labels":["caf`+"\xc3\xa9"+`","x\"y"]}`,
	`{"id":"ch-1","title":1,"status":"open"}`,
	`{"id":"ch-1","title":null,"status":null}`,
	`{"id":1,"status":"open"}`,
	`{"id":"ch-1","status":"open","priority":"2"}`,
	`{"id":"ch-1","status":"open","priority":2.5}`,
	`{"id":"ch-1","status":"open","priority":null}`,
	`{"id":"ch-1","status":"open","ephemeral":"yes"}`,
	`{"id":"ch-1","status":"open","ephemeral":null}`,
	`{"id":"ch-1","status":"open","labels":"a"}`,
	`{"id":"ch-1","status":"open","labels":[1]}`,
	`{"id":"ch-1","status":"open","dependencies":{}}`,
	`{"id":"ch-1","status":"open","dependencies":[null]}`,
	`{"id":"ch-1","status":"open","dependencies":[{"type":3}]}`,
	`{"id":"ch-1","status":"open","dependencies":[{"created_at":"yesterday"}]}`,
	`{"id":"ch-1","status":"open","dependencies":[{"created_at":null}]}`,
	`{"id":"ch-1","status":"open","dependencies":[{"issue_id":"ch-2","depends_on_id":"ch-1","type":"parent-child","metadata":"{}"}]}`,
	`{"id":"ch-1","status":"open","dependencies":null,"labels":[]}`,
	`{"id":"ch-1","status":"open","metadata":{"a":[1,2,{"b":null}]},"dependency_count":2}`,
	`{"id":"ch-1","status":"open","metadata":[1]}`,
	`{"id":"ch-1","status":"open","metadata":"x"}`,
	`{"id":"ch-1","status":"open","defer_until":"2099-01-01T00:00:00Z"}`,
	`{"id":"ch-1","status":"open","defer_until":"2099-01-01T00:00:00+02:00"}`,
	`{"id":"ch-1","status":"open","defer_until":"2099-02-29T00:00:00Z"}`,
	`{"id":"ch-1","status":"open","created_at":"2024-02-29T00:00:00.123456789Z"}`,
	`{"id":"ch-1","status":"open","created_at":"2023-02-29T00:00:00Z"}`,
	`{"id":"ch-1","status":"open","closed_at":null,"started_at":"2024-01-01T00:00:00Z"}`,
	`{"id":"ch-1","status":"open","closed_at":"nope"}`,
	`{"id":"ch-1","status":"open","assignee":null}`,
	`{"id":"ch-1","status":"open","assignee":"`+"\xff"+`"}`,
	`  {"id":"ch-1" , "status" : "open" , "labels" : [ "a" , "b" ] }  `,
	`{"id":"","status":"open"}`,
	`{"_type":"","status":"open","id":"ch-1"}`,
	`{"_type":"heartbeat","id":""}`,
	`{"id":"ch-1","status":"open","x":{"y":`,
	`{"id":"ch-1","status":"open"`,
	`{"id":"ch-1","status":"open`,
	`{"id":"ch-1","status":"open\`,
	`{"id":"ch-1","status":"open","title":"abcdefghijklmnop`+"\x7f\x80"+`qrstuvwx\/yz"}`,
	`{"id":"ch-1","status":"open","title":"abcdefgh`+"\x19"+`ijklmnop"}`,
	`{"id":"ch-1","status":"open","title":"abcdefg\u00zz"}`,
	`{"idx":1,"id":"ch-1","status":"open"}`,
	`{"i":"ch-0","id":"ch-1","statu":"x","status":"open"}`,
	`{"status":"closed","id":"ch-1","id":"ch-2"}`,
	`{"_type":"issue","id":"ch-1","status":"open","dependencies":[{"issue_id":"ch-1","depends_on_id":"ch-0","type":"blocks","created_at":"2026-11-22T00:00:00Z","type":"x"}]}`,
)

// TestTallyMatchesFullDecode: every line the tally accepts, the full
// decode (the index pass with encoding/json behind it) accepts with the
// same counting fields; a line it does not accept goes to that decode.
func TestTallyMatchesFullDecode(t *testing.T) {
	for _, s := range tallySeeds {
		checkTally(t, []byte(s))
	}
}

func FuzzTallyMatchesFullDecode(f *testing.F) {
	for _, s := range tallySeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		if bytes.IndexByte(line, '\n') < 0 {
			checkTally(t, line)
		}
	})
}

func checkTally(t *testing.T, line []byte) {
	t.Helper()
	// Read alone, and after a record whose keys it may share in part
	// (the tally takes keys where the last record had them).
	var got record
	if tallyLines(&got, []byte(tallySeeds[len(jsonlSeeds)]), []byte(`{"id":"ch-2","status":"open","labels":["x"]}`), line) {
		checkTallyRecord(t, line, got)
	}
	if tallyLines(&got, line) {
		checkTallyRecord(t, line, got)
	}
}

func checkTallyRecord(t *testing.T, line []byte, got record) {
	t.Helper()
	want := []record{{raw: line}}
	errs := make([]error, 1)
	decodeRecords(want, errs)
	if errs[0] != nil {
		t.Fatalf("%q: the tally accepts it; the full decode says %v", line, errs[0])
	}
	w := want[0]
	if got.kind != w.kind || got.id != w.id || got.status != w.status || got.itype != w.itype ||
		got.ephemeral != w.ephemeral || !got.deferUntil.Equal(w.deferUntil) || !slices.Equal(got.labels, w.labels) ||
		!slices.Equal(got.deps, w.deps) {
		t.Fatalf("%q: counting fields differ:\n tally %+v\n  full %+v", line, got, w)
	}
}

// TestTallySnapshotMatchesFullParse: files of good and broken lines
// (blank ones, duplicate ids, defer dates, labels, records that are not
// tasks, both kinds of edge) count the same through the tally, in one
// chunk or several, as through the full parse, with the same cache
// window, and name the same first bad line.
func TestTallySnapshotMatchesFullParse(t *testing.T) {
	now := time.Now()
	for _, n := range []int{1, 50, 5000, 20000} {
		for _, broken := range []int{0, 997, 4999} {
			var b strings.Builder
			for i := range n {
				fmt.Fprintf(&b, `{"id":"ch-%d","status":%q,"priority":1,"created_at":"2026-01-01T00:00:00Z","labels":[%q]`,
					i%(n-n/50+1), []string{"open", "closed", "blocked", "in_progress", "open"}[i%5], []string{"a", "failed", "deferred"}[i%3])
				if i > 0 {
					fmt.Fprintf(&b, `,"dependencies":[{"issue_id":"ch-%d","depends_on_id":"ch-%d","type":%q}]`, i, i*7%i, []string{"blocks", "parent-child", "related"}[i%3])
				}
				if i%11 == 0 {
					fmt.Fprintf(&b, `,"defer_until":%q`, now.Add(time.Duration(i%3-1)*time.Hour).UTC().Format(time.RFC3339))
				}
				if i%13 == 0 {
					b.WriteString(`,"_type":"note"`)
				}
				b.WriteString("}\n")
				if i%7 == 0 {
					b.WriteString("  \n")
				}
				if broken > 0 && i%broken == broken-1 {
					b.WriteString(tallySeeds[(i/broken)%len(tallySeeds)] + "\n")
				}
			}
			data := []byte(b.String())
			full := parseSnapshot(data, "issues.jsonl")
			fast := parseSnapshotWith(data, "issues.jsonl", func(store []record, errs []error) { tallyAll(store, errs, false) })
			for _, opt := range []ReadyOptions{{}, {IncludeDeferred: true}, {ExcludeLabels: []string{"a"}}} {
				if fc, tc := indexCounts(full, opt, now), indexCounts(fast, opt, now); fmt.Sprint(fc) != fmt.Sprint(tc) {
					t.Fatalf("%d lines: counts differ: full %+v, tally %+v", n, fc, tc)
				}
			}
			flo, fhi := deferWindow(full.recs, now)
			if tlo, thi := deferWindow(fast.recs, now); flo != tlo || fhi != thi {
				t.Fatalf("%d lines: window differs", n)
			}
			if fmt.Sprint(full.bad) != fmt.Sprint(fast.bad) || (broken > 0 && n > broken && full.bad == nil) {
				t.Fatalf("%d lines: bad line: full %v, tally %v", n, full.bad, fast.bad)
			}
		}
	}
}

// TestTallyTakesOrdinaryRecords: the tally reads ordinary records itself
// (escapes and non-ASCII text in fields it does not keep included), or it
// would spare nothing.
func TestTallyTakesOrdinaryRecords(t *testing.T) {
	for _, s := range []string{tallySeeds[len(jsonlSeeds)], tallySeeds[len(jsonlSeeds)+2], tallySeeds[len(jsonlSeeds)+3],
		`{"id":"ch-1","status":"open","metadata":{"a":[1,2,{"b":null}]},"dependency_count":2}`,
		`{"_type":"issue","id":"ch-00003","title":"Task","description":"Some \"quotes\" and a newline\nhere.","status":"open","priority":3,"issue_type":"task","owner":"dev@example.com","created_at":"2026-01-01T00:00:03Z","created_by":"orchestrator","updated_at":"2026-01-01T00:00:03Z","labels":["backend","area-3"],"dependencies":[{"issue_id":"ch-00003","depends_on_id":"ch-00001","type":"blocks","created_at":"2026-01-01T00:00:03Z","created_by":"orchestrator","metadata":"{}"}],"metadata":{"model":"sonnet"},"dependency_count":2,"dependent_count":0,"comment_count":0}`,
	} {
		var r record
		if !tallyLines(&r, []byte(s)) {
			t.Errorf("the tally leaves %s to the full decode", s)
		}
	}
}

// TestPlainTimeMatchesFastTime: the tally's check of a time takes the
// same strings fastTime reads, every byte of a few times varied.
func TestPlainTimeMatchesFastTime(t *testing.T) {
	for _, base := range []string{"2024-02-29T23:59:59Z", "2023-02-28T00:00:00.123456789Z", "1900-12-31T12:30:45.5Z", "0000-01-01T00:00:00Z"} {
		for i := range len(base) {
			for _, c := range []byte("0123456789-:TZ.\"/ a\x00\xff") {
				b := []byte(base)
				b[i] = c
				_, want := fastTime(b)
				if got := plainTime(b); got != want {
					t.Fatalf("%q: plainTime %v, fastTime %v", b, got, want)
				}
				if got := plainTime(b[:i]); got != func() bool { _, ok := fastTime(b[:i]); return ok }() {
					t.Fatalf("%q: plainTime and fastTime differ", b[:i])
				}
			}
		}
	}
}
