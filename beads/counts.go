package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"time"
)

// Counts is how many tasks a store holds, by status, and how many are ready.
type Counts struct {
	Total    int
	ByStatus map[string]int // as stored; Failed ones are in "blocked" too
	Failed   int            // blocked and labelled failed
	Ready    int
	// Malformed is the task file's first unreadable line (wrapping
	// ErrMalformed), left out of the counts; nil when every line reads.
	Malformed error `json:"-"`
}

// Counter is a store that counts from its index without decoding whole
// tasks (the built-in store: `chorus status` on 10k tasks reads only the
// fields Ready needs).
type Counter interface {
	Counts(ctx context.Context, opt ReadyOptions) (Counts, error)
}

// CountTasks counts s's tasks, through Counter when s has it and from
// List and Ready otherwise.
func CountTasks(ctx context.Context, s Store, opt ReadyOptions) (Counts, error) {
	if c, ok := s.(Counter); ok {
		return c.Counts(ctx, opt)
	}
	all, err := s.List(ctx)
	if err != nil {
		return Counts{}, err
	}
	ready, err := s.Ready(ctx, opt)
	if err != nil {
		return Counts{}, err
	}
	c := Counts{Total: len(all), ByStatus: map[string]int{}, Ready: len(ready)}
	for _, t := range all {
		c.add(t.Status, t.Labels)
	}
	return c, nil
}

func (c *Counts) add(status string, labels []string) {
	c.ByStatus[status]++
	if status == StatusBlocked && hasLabel(labels, LabelFailed) {
		c.Failed++
	}
}

// Counts reads the index fields only: the load pass already has each
// record's status, labels and edges, so nothing is decoded in full and
// Ready is computed once. The answer is kept in the ready cache beside the
// ready lists, under the same validity rules, so that the next `chorus
// status` on an unchanged file does not read the file at all; and in the
// index memo with the records it was counted from, so that after an edit
// that leaves what counting reads as it was the answer is taken again.
func (s *builtinStore) Counts(ctx context.Context, opt ReadyOptions) (Counts, error) {
	variant := variantOf(opt, "counts")
	path := s.countsPath(variant)
	var c Counts
	if f, e, ok := s.openCached(path, variant, codeID()); ok {
		var buf bytes.Buffer
		err := copyPayload(&buf, f, e)
		f.Close()
		if err == nil && json.Unmarshal(countsPart(buf.Bytes()), &c) == nil && c.ByStatus != nil {
			return c, nil
		}
	}
	release := func() {}
	load := func() (*snapshot, error) {
		sn, rel, err := s.loadCounting(variant, opt)
		release = rel
		return sn, err
	}
	var bad error
	out, err := s.renderCached(path, variant, codeID(), load, func(sn *snapshot, now time.Time) func() ([]byte, error) {
		bad = sn.bad
		if sn.memo != nil {
			c, blocks := sn.memo.Counts, sn.memo.blocks
			return func() ([]byte, error) { b, err := json.Marshal(c); return withBlocks(b, blocks), err }
		}
		var bits []byte
		if sn.sums != nil {
			bits = make([]byte, len(sn.recs))
		}
		c := countRecords(sn, opt, now, bits)
		s.renewMemo(sn, variant, c, bits, now)
		return func() ([]byte, error) { return json.Marshal(c) }
	})
	release() // nothing kept refers to the file's bytes: counts were copied out
	if err != nil {
		return Counts{}, err
	}
	c = Counts{}
	if err := json.Unmarshal(countsPart(out), &c); err != nil {
		return Counts{}, err
	}
	c.Malformed = bad
	return c, nil
}

// countsPath is where the counts of variant are kept.
func (s *builtinStore) countsPath(variant string) string {
	return filepath.Join(s.dir, readyCacheDir, "counts-"+variant[:min(16, len(variant))])
}

func indexCounts(sn *snapshot, opt ReadyOptions, now time.Time) Counts {
	return countRecords(sn, opt, now, nil)
}

// countRecords counts sn's records; with bits (one per record) it also
// marks each record's state for the index memo.
func countRecords(sn *snapshot, opt ReadyOptions, now time.Time, bits []byte) Counts {
	c := Counts{ByStatus: map[string]int{}}
	for _, r := range sn.recs {
		if r.kind == "issue" {
			c.Total++
			c.add(r.status, r.labels)
		}
	}
	c.Ready = len(readyPass(sn.recs, sn.byID, opt, now, bits))
	return c
}
