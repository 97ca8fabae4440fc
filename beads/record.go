package beads

import (
	"maps"
	"slices"
	"sort"
	"strings"
	"time"
)

// record is one line of issues.jsonl: the fields Ready needs, the line as
// read (so untouched records are written back byte for byte and unknown
// fields survive rewrites), and the full Task once something asked for it.
type record struct {
	line int
	raw  []byte
	kind string // "_type"; only "issue" records are tasks

	id         string
	status     string
	itype      string
	deferUntil time.Time
	ephemeral  bool
	dirty      bool // beside ephemeral: one word for both
	labels     []string
	deps       []edge

	more *recordMore // nil in a count's records (the tally's, the memo's)
}

// recordMore is what a record holds beyond what counting reads: Ready's
// order and the full task. Kept apart, the first count's 10,000 records
// are 560 KB less fresh memory to fault in.
type recordMore struct {
	priority int
	created  time.Time
	task     *Task
	drop     map[string]bool // unknown fields to remove on rewrite
}

// ext is r's recordMore, made on first use.
func (r *record) ext() *recordMore {
	if r.more == nil {
		r.more = new(recordMore)
	}
	return r.more
}

// task is r's decoded task, nil before full or setTask.
func (r *record) task() *Task {
	if r.more == nil {
		return nil
	}
	return r.more.task
}

// order is r's priority and creation time, as Ready sorts by them.
func (r *record) order() (int, time.Time) {
	if r.more == nil {
		return 0, time.Time{}
	}
	return r.more.priority, r.more.created
}

// setTask makes t the record's truth and refreshes the index fields.
func (r *record) setTask(t *Task) {
	m := r.ext()
	m.task, m.priority, m.created = t, t.Priority, t.CreatedAt
	r.id, r.status, r.itype = t.ID, t.Status, t.IssueType
	r.labels = slices.Clone(t.Labels)
	r.deps = edgesOf(t.Dependencies)
}

// full returns the decoded task, decoding the line on first use.
func (r *record) full() (*Task, error) {
	if t := r.task(); t != nil {
		return t, nil
	}
	// encoding/json, from Task's tags: a whole task is decoded only for the
	// records a caller gets back, once per version of the file.
	var x record
	if err := decodeSlow(r.raw, &x); err != nil {
		return nil, err
	}
	r.ext().task = x.task()
	return r.more.task, nil
}

// edge is a dependency as the index fields keep it: what Ready reads of
// it, 48 bytes against a Dependency's 88 (10,000 tasks' 20,000 edges were
// 1.8 MB of fresh memory to fault in).
type edge struct {
	IssueID, DependsOnID, Type string
}

func edgesOf(ds []Dependency) []edge {
	if len(ds) == 0 {
		return nil
	}
	es := make([]edge, len(ds))
	for i, d := range ds {
		es[i] = edge{d.IssueID, d.DependsOnID, d.Type}
	}
	return es
}

func cloneTask(t *Task) Task {
	c := *t
	c.Labels = slices.Clone(t.Labels)
	c.Dependencies = slices.Clone(t.Dependencies)
	c.Metadata = maps.Clone(t.Metadata)
	if t.StartedAt != nil {
		v := *t.StartedAt
		c.StartedAt = &v
	}
	if t.ClosedAt != nil {
		v := *t.ClosedAt
		c.ClosedAt = &v
	}
	return c
}

func hasLabel(ls []string, l string) bool {
	for _, x := range ls {
		if x == l {
			return true
		}
	}
	return false
}

// Dependency types that hold back the dependent issue (bd's AffectsReadyWork
// minus waits-for gates, which Chorus does not create).
func blockingType(t string) bool { return t == "blocks" || t == "conditional-blocks" || t == "" }

// activeStatus: a blocker in any of these states still blocks.
func activeStatus(s string) bool { return s != StatusClosed && s != "pinned" }

// readyExcluded: issue types bd leaves out of ready work by default.
func readyExcluded(itype string) bool {
	switch itype {
	case "merge-request", "gate", "molecule", "message", "agent", "role", "rig":
		return true
	}
	return false
}

// readyIndex computes ready work over recs the way bd does (§3 of the CLI
// contract) in a few linear passes over records and edges, in bd's order.
func readyIndex(recs []*record, byID map[string]int, opt ReadyOptions, now time.Time) []int {
	out := readyUnordered(recs, byID, opt, now)
	sort.Slice(out, func(a, b int) bool {
		ra, rb := recs[out[a]], recs[out[b]]
		pa, ca := ra.order()
		pb, cb := rb.order()
		return readyLess(pa, pb, ca, cb, ra.id, rb.id)
	})
	return out
}

// readyUnordered is readyIndex in file order: counting needs no more.
func readyUnordered(recs []*record, byID map[string]int, opt ReadyOptions, now time.Time) []int {
	return readyPass(recs, byID, opt, now, nil)
}

// readyPass is readyUnordered; with bits (one per record) it also marks
// each record's state as the index memo keeps it (memocounts.go).
func readyPass(recs []*record, byID map[string]int, opt ReadyOptions, now time.Time, bits []byte) []int {
	blocked := make([]bool, len(recs))
	for i, r := range recs {
		if r.kind != "issue" {
			continue
		}
		// A record's own blocked mark is read only while it is active (ready
		// wants it open, a parent holds only while active), unless the memo
		// keeps it: its own edges need no look-up when it is not, nor once
		// one of them blocked it (most of 10,000 tasks are closed).
		skipOwn := bits == nil && !activeStatus(r.status)
		for _, d := range r.deps {
			if (skipOwn || blocked[i]) && (d.IssueID == "" || d.IssueID == r.id) {
				continue
			}
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

// blockEdge resolves dependency d of record self (id) when it holds back
// work: the record it holds back and its blocker, both tasks.
func blockEdge(self int, id string, d edge, byID map[string]int) (from, to int, ok bool) {
	if !blockingType(d.Type) {
		return 0, 0, false
	}
	from = self
	if d.IssueID != "" && d.IssueID != id {
		if from, ok = byID[d.IssueID]; !ok {
			return 0, 0, false
		}
	}
	to, ok = byID[d.DependsOnID]
	return from, to, ok
}

// ownReady is what makes a task ready by its own fields: open, not
// ephemeral, of a type bd offers, not deferred, its labels let through.
func ownReady(r *record, opt ReadyOptions, now time.Time) bool {
	return r.kind == "issue" && r.status == StatusOpen && !r.ephemeral && !readyExcluded(r.itype) &&
		!deferredAt(r.deferUntil, now) && labelsPass(r.labels, opt)
}

func deferredAt(t, now time.Time) bool { return !t.IsZero() && t.After(now) }

// parentHolds: a parent blocked while still active, or deferred, keeps
// its children waiting.
func parentHolds(status string, deferUntil time.Time, blocked bool, now time.Time) bool {
	return (blocked && activeStatus(status)) || deferredAt(deferUntil, now)
}

// heldBack reports whether a parent of the task (id, deps) holds it
// (one level): holds says it of the parent's record number.
func heldBack(id string, deps []edge, byID map[string]int, holds func(j int) bool) bool {
	for _, d := range deps {
		if d.Type != "parent-child" || (d.IssueID != "" && d.IssueID != id) {
			continue
		}
		if j, ok := byID[d.DependsOnID]; ok && holds(j) {
			return true
		}
	}
	return false
}

func readyLess(pa, pb int, ca, cb time.Time, ia, ib string) bool {
	if pa != pb {
		return pa < pb
	}
	if !ca.Equal(cb) {
		return ca.Before(cb)
	}
	return ia < ib
}

func labelsPass(labels []string, opt ReadyOptions) bool {
	if !opt.IncludeDeferred && hasLabel(labels, LabelDeferred) {
		return false
	}
	for _, l := range opt.ExcludeLabels {
		if hasLabel(labels, l) {
			return false
		}
	}
	if len(opt.IncludeLabels) > 0 {
		for _, l := range opt.IncludeLabels {
			if hasLabel(labels, l) {
				return true
			}
		}
		return false
	}
	return true
}

// sortReady orders tasks as Ready promises: priority, then oldest first, then id.
func sortReady(ts []Task) {
	sort.SliceStable(ts, func(a, b int) bool {
		return readyLess(ts[a].Priority, ts[b].Priority, ts[a].CreatedAt, ts[b].CreatedAt, ts[a].ID, ts[b].ID)
	})
}

// cyclePath returns the cycle that the edge from → to (from depends on to)
// would close, as "from → to → … → from", or "" if there is none. next
// lists the ids an id depends on through blocking edges.
func cyclePath(from, to string, next func(id string) []string) string {
	if from == to {
		return from + " → " + from
	}
	prev := map[string]string{to: ""}
	queue := []string{to}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, n := range next(cur) {
			if _, seen := prev[n]; seen {
				continue
			}
			prev[n] = cur
			if n == from {
				path := []string{from}
				for p := cur; p != ""; p = prev[p] {
					path = append(path, p)
				}
				// path is from, …, to reversed; the cycle reads from → to → … → from.
				out := []string{from}
				for k := len(path) - 1; k >= 1; k-- {
					out = append(out, path[k])
				}
				out = append(out, from)
				return strings.Join(out, " → ")
			}
			queue = append(queue, n)
		}
	}
	return ""
}
