package beads

import (
	"bytes"
	"fmt"
	"testing"
	"time"
)

// benchLines is 10,000 records in bd's export shape (as writeBig writes).
func benchLines(b *testing.B) [][]byte {
	b.Helper()
	var lines [][]byte
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		id := fmt.Sprintf("ch-%05x", i)
		ts := base.Add(time.Duration(i) * time.Second).Format(time.RFC3339)
		var buf bytes.Buffer
		fmt.Fprintf(&buf, `{"_type":"issue","id":%q,"title":"Task number %d: implement the thing","description":"Some description of task %d that is a little longer, with \"quotes\" and a newline\nhere.","status":"open","priority":%d,"issue_type":"task","owner":"dev@example.com","created_at":%q,"created_by":"orchestrator","updated_at":%q,"labels":["backend","area-%d"]`,
			id, i, i, i%5, ts, ts, i%7)
		if i > 2 {
			fmt.Fprintf(&buf, `,"dependencies":[{"issue_id":%q,"depends_on_id":"ch-%05x","type":"blocks","created_at":%q,"created_by":"orchestrator","metadata":"{}"},{"issue_id":%q,"depends_on_id":"ch-%05x","type":"blocks","created_at":%q,"created_by":"orchestrator","metadata":"{}"}]`, id, i/2, ts, id, i/3, ts)
		}
		buf.WriteString(`,"metadata":{"model":"sonnet"},"dependency_count":2,"dependent_count":0,"comment_count":0}`)
		lines = append(lines, buf.Bytes())
	}
	return lines
}

// The index pass against encoding/json on the same 10,000 lines: the
// reason the hand-written reader exists (a CLI start after the task file
// changed reads every line); and the tally, the first count's reader.
func BenchmarkIndexPass10k(b *testing.B) {
	lines := benchLines(b)
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			strs := map[string]string{}
			for _, l := range lines {
				var r record
				if err := decodeWith(&scanner{b: l, strs: strs}, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("tally", func(b *testing.B) {
		for b.Loop() {
			recs := make([]record, len(lines))
			for i, l := range lines {
				recs[i].raw = l
			}
			tallyRecords(recs, make([]error, len(lines)))
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		for b.Loop() {
			for _, l := range lines {
				var r record
				if err := decodeSlow(l, &r); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}
