package beads

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"time"
)

// memoCounts are the counts of the records an index memo holds, for one
// variant of the ready options, while the clock stays in [Lo, Hi) (no
// defer_until date crossed).
type memoCounts struct {
	Variant string
	Lo, Hi  int64
	Counts  Counts
	bits    []byte // when written: each record's state (memoReady…)
	blocks  []byte // when taken from count blocks: those blocks, kept again
}

// A record's state for the memo's counts, as Ready computed it.
const (
	memoReady   = 1 << iota // counted ready
	memoBlocked             // a blocker holds it back (blocked[i])
	memoHeld                // a task whose parent holds it back
)

// countsFromMemo returns the counts from the memo when data (the task
// file) holds the same records, line for line, as the memo but for the
// status and labels of a few: a line whose bytes changed is decoded and
// compared with the memo's record at its place, and none of the others is.
// Most edits (a title, a description, a note) leave the counts as they
// were; a task claimed, closed, reopened, blocked or labelled moves them,
// and countsAfter carries them over from the state the memo keeps. Both
// spare building a snapshot and Ready's pass, and the first spares
// decoding the memo: most of what `chorus status` after such a change
// cost. nil when anything else changed (a task added, removed or moved, a
// dependency, a defer date, a type), the memo is missing or damaged, or
// counts another variant or another span of the clock: the caller counts
// the slow way, given the lines' sums when they were taken. Run under
// guard: data and the memo are mappings.
func countsFromMemo(data []byte, path, variant string, opt ReadyOptions, now time.Time) (*memoCounts, []lineSum) {
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
	// split as parseSnapshotWith splits them. A block of lines whose bytes
	// are as the memo has them takes its lines' sums from the memo: one
	// hash over the block costs a fraction of one per line.
	sums := make([]lineSum, 0, v.n)
	var lines [][]byte
	all := data
	block := make([][]byte, 0, memoBlock)
	flush := func() {
		if len(block) == 0 {
			return
		}
		at := len(sums)
		if want, ok := v.block(at / memoBlock); ok && at%memoBlock == 0 && at+len(block) <= v.n &&
			(len(block) == memoBlock || at+len(block) == v.n) {
			lo, _ := offsetIn(all, block[0])
			hi, _ := offsetIn(all, block[len(block)-1])
			if sumLine(all[lo:hi+len(block[len(block)-1])]) == want {
				for i := range block {
					sums = append(sums, v.sum(at+i))
				}
				block = block[:0]
				return
			}
		}
		for _, line := range block {
			if sum := sumLine(line); len(sums) >= v.n || sum != v.sum(len(sums)) {
				lines = append(lines, line)
				sum.n = -1 - sum.n // marked changed for now
				sums = append(sums, sum)
				continue
			}
			sums = append(sums, v.sum(len(sums)))
		}
		block = block[:0]
	}
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
		if block = append(block, line); len(block) == memoBlock {
			flush()
		}
	}
	flush()
	if len(sums) != v.n || len(lines) > max(100, v.n/50) {
		// As many changed lines as renewing the memo is worth: past that
		// the slow way decodes them once and writes a memo that has them.
		for i := range sums {
			if sums[i].n < 0 {
				sums[i].n = -1 - sums[i].n
			}
		}
		return nil, sums
	}
	var moved []movedRec
	ok = true
	k := 0
	strs := make(map[string]string, 8)
	for i := range sums {
		if sums[i].n >= 0 {
			continue
		}
		sums[i].n = -1 - sums[i].n
		if ok {
			var m movedRec
			var same bool
			if m, same, ok = compareForCounting(lines[k], v, i, strs); ok && !same {
				moved = append(moved, m)
			}
		}
		k++
	}
	if !ok {
		return nil, sums
	}
	if len(moved) > 0 {
		c, ok := countsAfter(v, mc.Counts, moved, opt, now)
		if !ok {
			return nil, sums
		}
		mc.Counts = c
	}
	return &mc, sums
}

// movedRec is a line whose status or labels differ from the memo's record
// at its place (at), all else counting reads being the same.
type movedRec struct {
	at       int
	now, was memoRec
}

// compareForCounting decodes line and compares it with memo record i: same
// when counting reads them alike, else the difference when only status or
// labels moved; ok false when the line does not decode or anything else
// differs.
func compareForCounting(line []byte, v *memoView, i int, strs map[string]string) (m movedRec, same, ok bool) {
	r := record{raw: line}
	if decodeWith(&scanner{b: line, strs: strs}, &r) != nil || (r.kind == "issue" && r.id == "") {
		return m, false, false // the slow way decodes it again, and reports it
	}
	was, err := v.rec(i)
	if err != nil {
		return m, false, false
	}
	if r.kind != was.kind || r.id != was.id || r.itype != was.itype || r.ephemeral != was.ephemeral ||
		!r.deferUntil.Equal(was.deferUntil) || len(r.deps) != len(was.deps) {
		return m, false, false
	}
	for k, d := range r.deps {
		if e := was.deps[k]; d.IssueID != e.IssueID || d.DependsOnID != e.DependsOnID || d.Type != e.Type {
			return m, false, false
		}
	}
	if r.status == was.status && slices.Equal(r.labels, was.labels) {
		return m, true, true
	}
	now := was
	now.status, now.labels = r.status, r.labels
	return movedRec{at: i, now: now, was: was}, false, true
}

// countsAfter moves the memo's counts c on by records whose status or
// labels changed, the rest as the memo has it: the counts by status at
// once; Ready for the records whose readiness can have changed (those
// moved, those their blockers' going or coming back unblocks or blocks,
// and the children of either), from the state the memo keeps for the
// others. It decodes every memo record (their edges say who depends on
// whom) but builds no snapshot and computes no Ready pass.
func countsAfter(v *memoView, c Counts, moved []movedRec, opt ReadyOptions, now time.Time) (Counts, bool) {
	recs := make([]memoRec, v.n)
	labels := make([]string, 0, 2*v.n)
	deps := make([]edge, 0, 2*v.n)
	at := 0
	for i := range recs {
		var err error
		if at, err = decodeMemoRec(v.recs, at, &recs[i], &labels, &deps); err != nil {
			return c, false
		}
	}
	byID := make(map[string]int, v.n)
	for i := range recs {
		if recs[i].kind == "issue" {
			byID[recs[i].id] = i
		}
	}
	byStatus := maps.Clone(c.ByStatus)
	flipped := map[int]bool{} // moved between active and not: blockers that start or stop blocking
	for _, m := range moved {
		recs[m.at] = m.now
		if m.now.kind != "issue" {
			continue
		}
		// A map assignment stores the key it is given: the memo's
		// strings are gone once it is unmapped.
		was := strings.Clone(m.was.status)
		if byStatus[was]--; byStatus[was] == 0 {
			delete(byStatus, was)
		}
		byStatus[m.now.status]++
		if m.was.status == StatusBlocked && hasLabel(m.was.labels, LabelFailed) {
			c.Failed--
		}
		if m.now.status == StatusBlocked && hasLabel(m.now.labels, LabelFailed) {
			c.Failed++
		}
		if activeStatus(m.was.status) != activeStatus(m.now.status) {
			flipped[m.at] = true
		}
	}
	c.ByStatus = byStatus
	wasBlocked := func(i int) bool { return v.bits[i]&memoBlocked != 0 }
	// Who is blocked now, for the records an edge ties to a flipped one.
	blocked := map[int]bool{}
	if len(flipped) > 0 {
		for i := range recs {
			if recs[i].kind != "issue" {
				continue
			}
			for _, d := range recs[i].deps {
				if from, to, ok := blockEdge(i, recs[i].id, d, byID); ok && flipped[to] {
					blocked[from] = false
				}
			}
		}
		for i := range recs {
			if recs[i].kind != "issue" {
				continue
			}
			for _, d := range recs[i].deps {
				if from, to, ok := blockEdge(i, recs[i].id, d, byID); ok && activeStatus(recs[to].status) {
					if _, asked := blocked[from]; asked {
						blocked[from] = true
					}
				}
			}
		}
	}
	isBlocked := func(i int) bool {
		if b, ok := blocked[i]; ok {
			return b
		}
		return wasBlocked(i)
	}
	// Parents whose hold on their children changed, and those children.
	holdMoved := map[int]bool{}
	for i := range flipped {
		holdMoved[i] = true
	}
	for i, b := range blocked {
		if b != wasBlocked(i) {
			holdMoved[i] = true
		}
	}
	holds := func(j int) bool { return parentHolds(recs[j].status, recs[j].deferUntil, isBlocked(j), now) }
	touched := map[int]bool{}
	for _, m := range moved {
		touched[m.at] = true
	}
	for i, b := range blocked {
		if b != wasBlocked(i) {
			touched[i] = true
		}
	}
	children := map[int]bool{}
	if len(holdMoved) > 0 {
		for i := range recs {
			if recs[i].kind != "issue" {
				continue
			}
			if heldBack(recs[i].id, recs[i].deps, byID, func(j int) bool { return holdMoved[j] }) {
				children[i] = true
				touched[i] = true
			}
		}
	}
	for i := range touched {
		r := &recs[i]
		held := v.bits[i]&memoHeld != 0
		if children[i] {
			held = heldBack(r.id, r.deps, byID, holds)
		}
		rec := record{kind: r.kind, id: r.id, status: r.status, itype: r.itype, ephemeral: r.ephemeral, deferUntil: r.deferUntil, labels: r.labels}
		ready := ownReady(&rec, opt, now) && !isBlocked(i) && !held
		if wasReady := v.bits[i]&memoReady != 0; ready != wasReady {
			if ready {
				c.Ready++
			} else {
				c.Ready--
			}
		}
	}
	return c, true
}
