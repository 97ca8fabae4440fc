package beads

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"time"
)

// memoCounts are the counts of the records an index memo holds, for one
// variant of the ready options, while the clock stays in [Lo, Hi) (no
// defer_until date crossed).
type memoCounts struct {
	Variant string
	Lo, Hi  int64
	Counts  Counts
}

// countsFromMemo returns the memo's counts when data (the task file) holds
// the same records, line for line, as far as counting reads them: a line
// whose bytes changed is decoded and compared with the memo's record at
// its place, and none of the others is decoded. Most edits (a title, a
// description, a note, a claim's assignee) leave the counts as they were,
// and this spares the memo's full decode and Ready's pass, most of what
// `chorus status` after such a change cost. nil when anything else
// changed (a task added, removed, moved, closed or blocked, a label or a
// dependency), the memo is missing or damaged, or counts another variant
// or another span of the clock: the caller counts the slow way, given the
// lines' sums when they were taken. Run under guard: data and the memo
// are mappings.
func countsFromMemo(data []byte, path, variant string, now time.Time) (*memoCounts, []lineSum) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil
	}
	raw, unmap, ok := mapFile(f, st.Size())
	f.Close()
	if !ok {
		return nil, nil
	}
	defer unmap()
	body, ok := memoBody(raw)
	if !ok {
		return nil, nil
	}
	v, ok := viewMemo(body)
	if !ok || len(v.counts) == 0 {
		return nil, nil
	}
	var mc memoCounts
	if json.Unmarshal(v.counts, &mc) != nil || mc.Variant != variant || mc.Counts.ByStatus == nil {
		return nil, nil
	}
	if t := now.UnixNano(); t < mc.Lo || t >= mc.Hi {
		return nil, nil
	}
	// Every line's sum first (the slow way needs them all), the lines
	// split as parseSnapshotWith splits them.
	sums := make([]lineSum, 0, v.n)
	var lines [][]byte
	for len(data) > 0 {
		var line []byte
		if j := bytes.IndexByte(data, '\n'); j >= 0 {
			line, data = data[:j], data[j+1:]
		} else {
			line, data = data, nil
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if sum := sumLine(line); len(sums) >= v.n || sum != v.sum(len(sums)) {
			lines = append(lines, line)
			sum.n = -1 - sum.n // marked changed for now
			sums = append(sums, sum)
			continue
		}
		sums = append(sums, v.sum(len(sums)))
	}
	same := len(sums) == v.n
	// As many changed lines as renewing the memo is worth: past that the
	// slow way decodes them once and writes a memo that has them.
	same = same && len(lines) <= max(100, v.n/50)
	k := 0
	strs := make(map[string]string, 8)
	for i := range sums {
		if sums[i].n >= 0 {
			continue
		}
		sums[i].n = -1 - sums[i].n
		same = same && sameForCounting(lines[k], v, i, strs)
		k++
	}
	if !same {
		return nil, sums
	}
	return &mc, sums
}

// sameForCounting reports whether line decodes without error to the index
// fields memo record i has.
func sameForCounting(line []byte, v *memoView, i int, strs map[string]string) bool {
	r := record{raw: line}
	if decodeWith(&scanner{b: line, strs: strs}, &r) != nil {
		return false // the slow way decodes it again, and reports it
	}
	m, err := v.rec(i)
	if err != nil {
		return false
	}
	if r.kind != m.kind || r.id != m.id || r.status != m.status || r.itype != m.itype || r.ephemeral != m.ephemeral ||
		!r.deferUntil.Equal(m.deferUntil) || !slices.Equal(r.labels, m.labels) || len(r.deps) != len(m.deps) {
		return false
	}
	for k, d := range r.deps {
		if e := m.deps[k]; d.IssueID != e.IssueID || d.DependsOnID != e.DependsOnID || d.Type != e.Type {
			return false
		}
	}
	return r.kind != "issue" || r.id != ""
}
