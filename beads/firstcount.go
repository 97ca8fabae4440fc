package beads

import (
	"bytes"
	"fmt"
	"hash/maphash"
	"math"
	"time"
	"unsafe"
)

// The first count of a store (no counts kept: a fresh clone, a file
// another tool wrote) counts as it reads: each line goes through the tally
// into one reused record, and what counting needs of it is kept in a
// compact form (per task a status code, a few flags and its line; ids as
// numbers; only the edges counting follows, as numbers), so no record, id
// map or edge slab the size of the store is built and no second pass
// looks ids up by string. Building them was most of the fresh memory and
// a third of the CPU of the first `chorus status` on 10,000 tasks, which
// was 3x `git status`. The counts are countRecords' over parseSnapshot's
// records (TestFirstCountMatchesFullParse), the count blocks those
// countsFromBlocks sums.

// A task's flags in a compact count.
const (
	cfOwnReady = 1 << iota // ready by its own fields (ownReady), its defer date aside
	cfDeferred             // deferred at the count's clock
	cfFailed               // labelled failed
	cfBlocked              // a blocker holds it back
)

// compactCount is a first count as it reads: the tasks so far, by number
// in file order (the first task with an id keeps it, as byID does).
type compactCount struct {
	opt  ReadyOptions
	now  time.Time
	path string

	ids idTable // an id (of a task or named by an edge) → its slot
	rec []int32 // slot → the task with the id, -1 none (yet)

	st    []int32 // task → status code
	flags []uint8
	line  []int32 // task → its line, for a duplicate's message

	statuses []string // by code
	active   []bool   // by code: activeStatus
	codes    map[string]int32

	// Blocking edges counting follows: the task held back (its number, or
	// ^slot of the id naming it) and its blocker's slot.
	bFrom, bTo []int32
	// Parent edges of tasks that are ready by their own fields, in task
	// order: the child and its parent's slot.
	pK, pTo []int32

	lo, hi int64 // deferWindow's
	bad    error
}

// firstCounted is a first count: the counts, deferWindow's window, the
// records read (n) and their runs' sums; blocks is nil when a line is bad
// (bad, as parseSnapshot reports it), as no count blocks are kept then.
type firstCounted struct {
	c      Counts
	lo, hi int64
	n      int
	blocks []countBlock
	bad    error
}

// memoCounts is the count as the counts' cache keeps it for variant,
// with its count blocks when it has them.
func (f *firstCounted) memoCounts(variant string) *memoCounts {
	mc := &memoCounts{Variant: variant, Counts: f.c, Lo: f.lo, Hi: f.hi}
	if f.blocks != nil {
		mc.blocks = encodeCountBlocks(f.n, f.blocks, mc)
	}
	return mc
}

// countFirst counts data (the task file at path; a mapping is read under
// guard) for opt at now as countRecords counts parseSnapshot's records,
// summing each run of memoBlock records as countsFromBlocks sums it.
func countFirst(data []byte, path string, opt ReadyOptions, now time.Time) *firstCounted {
	// Sized for lines of a few hundred bytes; they grow as needed.
	// Counting the lines first read the whole file once more.
	n := len(data)/384 + 16
	c := &compactCount{opt: opt, now: now, path: path, lo: math.MinInt64, hi: math.MaxInt64,
		ids: newIDTable(n), rec: make([]int32, 0, n),
		st: make([]int32, 0, n), flags: make([]uint8, 0, n), line: make([]int32, 0, n)}
	t := newTally()
	t.alias = true // ids are only looked up while the file is at hand
	var r record
	var fields []byte // what counting reads from the current run's records
	blocks := make([]countBlock, 0, (n+memoBlock-1)/memoBlock)
	blocksOK := true
	at, lo, end := 0, 0, 0 // records read; where the current run starts and ends
	sum := func() {
		blocksOK = blocksOK && end <= math.MaxUint32
		blocks = append(blocks, countBlock{sumLine(data[lo:end]), sumLine(fields)})
	}
	for rest, lineNo := data, 1; len(rest) > 0; lineNo++ {
		from := len(data) - len(rest)
		var l []byte
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			l, rest = rest, nil
		}
		if len(l) == 0 || (l[0] != '{' && len(bytes.TrimSpace(l)) == 0) {
			continue
		}
		if at%memoBlock == 0 {
			lo, fields = from, fields[:0]
		}
		r = record{line: lineNo, raw: l, labels: r.labels[:0]}
		err := t.one(&r)
		fields = appendCountFields(fields, &r)
		c.add(&r, err)
		t.giveBack(&r) // the next record's edges go where these were
		end = from + len(l)
		if at++; at%memoBlock == 0 {
			sum()
		}
	}
	if at%memoBlock != 0 {
		sum()
	}
	f := &firstCounted{c: c.counts(), lo: c.lo, hi: c.hi, n: at, bad: c.bad}
	if c.bad == nil && blocksOK {
		f.blocks = blocks
	}
	return f
}

// slot is id's slot, made on first sight.
func (c *compactCount) slot(id string) int32 {
	s, added := c.ids.slot(id)
	if added {
		c.rec = append(c.rec, -1)
	}
	return s
}

// idTable numbers ids in the order first seen: open addressing over their
// hashes, at most three quarters full (a smaller table misses less in
// cache; linear probes stay within a line or two), each place holding a slot and its hash's high
// half (one look at the table settles most probes), the ids' bytes kept one
// after another. A Go map of the file's 10,000 ids cost three times as
// much in a fresh process (its table faulted in and missed in cache at
// each look-up).
type idTable struct {
	seed maphash.Seed
	tab  []uint64 // by hash: its high half << 32 | slot + 1; 0 for none
	end  []uint32 // slot → where its id ends in keys (it starts where the last ended)
	keys []byte
}

func newIDTable(n int) idTable {
	size := 16
	for 3*size < 4*n {
		size *= 2
	}
	return idTable{seed: maphash.MakeSeed(), tab: make([]uint64, size), end: make([]uint32, 0, n), keys: make([]byte, 0, 8*n)}
}

// slot is id's number; added when it is new.
func (t *idTable) slot(id string) (s int32, added bool) {
	h := maphash.String(t.seed, id)
	hi, mask := h>>32<<32, len(t.tab)-1
	for i := int(h) & mask; ; i = (i + 1) & mask {
		e := t.tab[i]
		if e == 0 {
			break
		}
		if e&^(1<<32-1) == hi && t.key(int32(e)-1) == id {
			return int32(e) - 1, false
		}
	}
	s = int32(len(t.end))
	t.keys = append(t.keys, id...)
	t.end = append(t.end, uint32(len(t.keys)))
	if 4*len(t.end) > 3*len(t.tab) {
		t.grow()
	} else {
		t.put(h, s)
	}
	return s, true
}

func (t *idTable) key(k int32) string {
	lo := uint32(0)
	if k > 0 {
		lo = t.end[k-1]
	}
	return unsafe.String(unsafe.SliceData(t.keys[lo:]), int(t.end[k]-lo))
}

func (t *idTable) put(h uint64, s int32) {
	mask := len(t.tab) - 1
	i := int(h) & mask
	for t.tab[i] != 0 {
		i = (i + 1) & mask
	}
	t.tab[i] = h>>32<<32 | uint64(s+1)
}

// grow doubles the table, placing every id again.
func (t *idTable) grow() {
	t.tab = make([]uint64, 2*len(t.tab))
	for k := range int32(len(t.end)) {
		t.put(maphash.String(t.seed, t.key(k)), k)
	}
}

// code is status's code, made on first sight.
func (c *compactCount) code(status string) int32 {
	for i, s := range c.statuses[:min(len(c.statuses), 8)] {
		if s == status {
			return int32(i)
		}
	}
	if k, ok := c.codes[status]; ok {
		return k
	}
	k := int32(len(c.statuses))
	c.statuses = append(c.statuses, status)
	c.active = append(c.active, activeStatus(status))
	if k >= 8 {
		if c.codes == nil {
			c.codes = map[string]int32{}
		}
		c.codes[status] = k
	}
	return k
}

// add takes record r, read with err, as parseSnapshotWith and readyPass
// take it: a bad line or a later task with a taken id is no task; a task
// keeps what counting reads and the edges counting follows.
func (c *compactCount) add(r *record, err error) {
	k := int32(len(c.st))
	if err == nil && r.kind == "issue" {
		s := c.slot(r.id)
		if first := c.rec[s]; first >= 0 {
			err = fmt.Errorf("duplicate id %q (first on line %d)", r.id, c.line[first])
		} else {
			c.rec[s] = k
		}
	}
	if err != nil {
		if c.bad == nil {
			c.bad = fmt.Errorf("%w: %s:%d: %v — fix or remove that line", ErrMalformed, c.path, r.line, err)
		}
		return
	}
	if r.kind != "issue" {
		return
	}
	code := c.code(r.status)
	var f uint8
	if r.status == StatusOpen && !r.ephemeral && !readyExcluded(r.itype) && labelsPass(r.labels, c.opt) {
		f |= cfOwnReady
	}
	if hasLabel(r.labels, LabelFailed) {
		f |= cfFailed
	}
	if !r.deferUntil.IsZero() {
		d := unixNanoClamped(r.deferUntil)
		if r.deferUntil.After(c.now) {
			f |= cfDeferred
			c.hi = min(c.hi, d)
		} else {
			c.lo = max(c.lo, d)
		}
	}
	c.st, c.flags, c.line = append(c.st, code), append(c.flags, f), append(c.line, int32(r.line))
	for _, d := range r.deps {
		own := d.IssueID == "" || d.IssueID == r.id
		switch {
		case blockingType(d.Type):
			// A task's own blocked mark is read only while it is active
			// (ready wants it open, a parent holds only while active).
			if own && !c.active[code] {
				continue
			}
			from := k
			if !own {
				from = ^c.slot(d.IssueID)
			}
			c.bFrom, c.bTo = append(c.bFrom, from), append(c.bTo, c.slot(d.DependsOnID))
		case d.Type == "parent-child" && own && f&cfOwnReady != 0:
			c.pK, c.pTo = append(c.pK, k), append(c.pTo, c.slot(d.DependsOnID))
		}
	}
}

// counts is readyPass and countRecords over the tasks read.
func (c *compactCount) counts() Counts {
	for e, from := range c.bFrom {
		if from < 0 {
			if from = c.rec[^from]; from < 0 {
				continue
			}
		}
		if to := c.rec[c.bTo[e]]; to >= 0 && c.active[c.st[to]] {
			c.flags[from] |= cfBlocked
		}
	}
	byCode := make([]int, len(c.statuses))
	out := Counts{Total: len(c.st), ByStatus: make(map[string]int, len(c.statuses))}
	p := 0
	for k, code := range c.st {
		f := c.flags[k]
		byCode[code]++
		if f&cfFailed != 0 && c.statuses[code] == StatusBlocked {
			out.Failed++
		}
		if f&(cfOwnReady|cfDeferred|cfBlocked) != cfOwnReady {
			continue
		}
		for p < len(c.pK) && c.pK[p] < int32(k) {
			p++
		}
		held := false
		for ; p < len(c.pK) && c.pK[p] == int32(k); p++ {
			if j := c.rec[c.pTo[p]]; j >= 0 && (c.flags[j]&cfDeferred != 0 || c.flags[j]&cfBlocked != 0 && c.active[c.st[j]]) {
				held = true
			}
		}
		if !held {
			out.Ready++
		}
	}
	for code, m := range byCode {
		if m > 0 {
			out.ByStatus[c.statuses[code]] = m
		}
	}
	return out
}
