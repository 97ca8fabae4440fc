//go:build linux || darwin

package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// After a first count, counting after each of many random edits through
// the count blocks gives what a full recount of the file gives, and the
// blocks answer exactly when no run changed what counting reads: titles,
// descriptions and blank lines edited, which they answer; statuses,
// labels, dependencies, defer dates and the clock passing them, tasks
// added, deleted and moved, broken and duplicate lines, a file cut short
// and other ready options, which they leave to the full count.
func TestCountBlocksAfterRandomEditsMatchFullRecount(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "issues.jsonl")
	rng := rand.New(rand.NewPCG(30, 7))
	clock := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	lines := graphLines(rng, 700, clock)
	pick := func() int { return rng.IntN(len(lines)) }
	edit := func(i int, f func(m map[string]any)) {
		var m map[string]any
		if err := json.Unmarshal(lines[i], &m); err != nil {
			return
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	write := func(data []byte) {
		if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	count := func(opt ReadyOptions) (*builtinStore, Counts) {
		s, err := openBuiltin(dir, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return clock }
		c, err := s.Counts(context.Background(), opt)
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
	snap := func(d []byte) *snapshot { sn := parseSnapshot(d, path); sn.data = d; return sn }
	var base *snapshot // the file the blocks were counted from
	var baseClock time.Time
	fresh := true
	taken, declined := 0, 0
	for step := range 600 {
		if fresh {
			// A first count of the file as it is: it keeps the blocks.
			if err := os.RemoveAll(filepath.Join(dir, readyCacheDir)); err != nil {
				t.Fatal(err)
			}
			write(join(lines))
			count(ReadyOptions{})
			base, baseClock = snap(join(lines)), clock
			fresh = base.bad != nil
			if fresh {
				lines = graphLines(rng, 700, clock) // no blocks kept for a bad file
				continue
			}
		}
		opt := ReadyOptions{}
		what := rng.IntN(16)
		for range 1 + rng.IntN(3) {
			switch what {
			case 0, 1, 2:
				edit(pick(), func(m map[string]any) { m["title"] = fmt.Sprintf("Title %d", rng.Int()) })
			case 3:
				edit(pick(), func(m map[string]any) { m["description"] = fmt.Sprintf("About %d", rng.Int()); m["assignee"] = "x" })
			case 4:
				i := pick()
				lines[i] = append(append([]byte{}, lines[i]...), "\n  "...) // a blank line after it
			case 5:
				edit(pick(), func(m map[string]any) { m["status"] = []string{"closed", "open", "blocked"}[rng.IntN(3)] })
			case 6:
				edit(pick(), func(m map[string]any) { m["labels"] = []string{LabelFailed, "area-1"}[:1+rng.IntN(2)] })
			case 7:
				edit(pick(), func(m map[string]any) {
					deps, _ := m["dependencies"].([]any)
					m["dependencies"] = append(deps, map[string]any{"issue_id": m["id"], "depends_on_id": fmt.Sprintf("ch-%04d", rng.IntN(700)), "type": "blocks"})
				})
			case 8:
				i := pick()
				lines = slices.Delete(lines, i, i+1)
			case 9:
				i, j := pick(), pick()
				lines[i], lines[j] = lines[j], lines[i]
			case 10:
				edit(pick(), func(m map[string]any) { m["defer_until"] = clock.Add(time.Duration(rng.IntN(96)) * time.Hour) })
			case 11:
				clock = clock.Add(time.Duration(rng.IntN(48)) * time.Hour)
			case 12:
				lines = slices.Insert(lines, pick(), []byte(`{"_type":"issue","id":"ch-cut","title":"Cut sh`))
			case 13:
				lines = append(lines, lines[pick()])
			case 14:
				opt = ReadyOptions{ExcludeLabels: []string{"area-1"}}
			case 15:
				edit(pick(), func(m map[string]any) { m["id"] = fmt.Sprintf("ch-x%d", rng.Int()) })
			}
		}
		data := join(lines)
		write(data)
		cur := snap(data)
		w := indexCounts(cur, opt, clock)
		// The blocks answer when every record reads as it did for counting.
		lo, hi := deferWindow(base.recs, baseClock)
		want := cur.bad == nil && opt.ExcludeLabels == nil && lo <= clock.UnixNano() && clock.UnixNano() < hi &&
			len(cur.recs) == len(base.recs) && sameButStatusAndLabels(base, cur)
		for i := range cur.recs {
			if want && (cur.recs[i].status != base.recs[i].status || !slices.Equal(cur.recs[i].labels, base.recs[i].labels)) {
				want = false
			}
		}
		var mc *memoCounts
		guard(false, func() {
			mc = countsFromBlocks(data, filepath.Join(dir, readyCacheDir, "counts-"+variantOf(opt, "counts")[:16]), variantOf(opt, "counts"), clock)
		})
		if mc != nil {
			taken++
			if !sameCounts(mc.Counts, w) {
				t.Fatalf("step %d (edit %d): counts from the blocks %+v, a full recount %+v", step, what, mc.Counts, w)
			}
		} else {
			declined++
		}
		// Up to four runs changed, the blocks must answer when they can.
		if want && mc == nil && changedRuns(base, cur) <= 4 {
			t.Fatalf("step %d (edit %d): the blocks did not answer", step, what)
		}
		if !want && mc != nil {
			t.Fatalf("step %d (edit %d): the blocks answered for a file that counts differently", step, what)
		}
		_, c := count(opt)
		if !sameCounts(c, w) {
			t.Fatalf("step %d (edit %d): counts %+v, a full recount %+v", step, what, c, w)
		}
		if (cur.bad == nil) != (c.Malformed == nil) || (cur.bad != nil && !errors.Is(c.Malformed, ErrMalformed)) {
			t.Fatalf("step %d (edit %d): malformed %v, want %v", step, what, c.Malformed, cur.bad)
		}
		if cur.bad != nil {
			lines = graphLines(rng, 700, clock)
			fresh = true
		} else if mc == nil {
			fresh = true // counted the full way: the blocks are gone
		}
	}
	if taken < 100 || declined < 100 {
		t.Errorf("the blocks answered %d times and declined %d in 600 edits", taken, declined)
	}
}

// changedRuns is how many runs of memoBlock records differ in bytes.
func changedRuns(a, b *snapshot) int {
	n := 0
	for k := 0; k < len(b.recs); k += memoBlock {
		for i := k; i < min(k+memoBlock, len(b.recs)); i++ {
			if i >= len(a.recs) || !bytes.Equal(a.recs[i].raw, b.recs[i].raw) || (i > k && !sameGap(a, b, i)) {
				n++
				break
			}
		}
	}
	return n
}

// sameGap reports whether the bytes between records i-1 and i are alike.
func sameGap(a, b *snapshot, i int) bool {
	gap := func(sn *snapshot) []byte {
		lo, _ := offsetIn(sn.data, sn.recs[i-1].raw)
		hi, _ := offsetIn(sn.data, sn.recs[i].raw)
		return sn.data[lo+len(sn.recs[i-1].raw) : hi]
	}
	return bytes.Equal(gap(a), gap(b))
}

// Count blocks damaged, cut short, from another format or another build
// are not taken; intact ones are, for the file they were counted from and
// one whose titles changed, and not for another variant.
func TestCountBlocksDamagedAreNotTaken(t *testing.T) {
	dir := t.TempDir()
	s, err := openBuiltin(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clock := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return clock }
	data := join(memoLines(300))
	if err := os.WriteFile(s.path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := s.Counts(context.Background(), ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	variant := variantOf(ReadyOptions{}, "counts")
	path := s.countsPath(variant)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	at := bytes.Index(b, []byte(countBlocksMagic))
	if at < 0 {
		t.Fatal("the first count kept no blocks")
	}
	retitled := bytes.Replace(data, []byte(`"title":"T`), []byte(`"title":"Retitled T`), 3)
	for _, c := range []struct {
		name string
		data []byte
		take bool
	}{
		{"intact", b, true},
		{"flipped in the counts", func() []byte {
			c := slices.Clone(b)
			c[at+bytes.Index(c[at:], []byte(`"Total"`))+2] ^= 1
			return c
		}(), false},
		{"flipped in the sums", func() []byte { c := slices.Clone(b); c[len(c)-30] ^= 1; return c }(), false},
		{"flipped in the checksum", func() []byte { c := slices.Clone(b); c[len(c)-1] ^= 1; return c }(), false},
		{"short", b[:len(b)-9], false},
		{"no blocks", b[:at-1], false},
		{"format 0", slices.Concat(b[:at], []byte("chorus-count-blocks 0\n"), b[at+len(countBlocksMagic):]), false},
		{"another build", func() []byte { c := slices.Clone(b); c[at+len(countBlocksMagic)+6] ^= 1; return c }(), false},
	} {
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		for _, file := range [][]byte{data, retitled} {
			got := countsFromBlocks(file, path, variant, clock)
			if (got != nil) != c.take {
				t.Errorf("%s: taken %v, want %v", c.name, got != nil, c.take)
			}
			if got != nil && !sameCounts(got.Counts, want) {
				t.Errorf("%s: counts %+v, want %+v", c.name, got.Counts, want)
			}
		}
		if got := countsFromBlocks(data, path, variantOf(ReadyOptions{ExcludeLabels: []string{"x"}}, "counts"), clock); got != nil {
			t.Errorf("%s: taken for another variant", c.name)
		}
	}
	if got := countsFromBlocks(data, path+"-missing", variant, clock); got != nil {
		t.Error("missing blocks answered")
	}
}

// The first count's sums, taken as runs are read, are those of the
// whole file read first and summed after, blank lines aside.
func TestFirstCountBlocksMatchSumsAfterRead(t *testing.T) {
	n := 3*memoBlock*10 + 17
	lines := memoLines(n)
	lines = slices.Insert(lines, 100, []byte(""), []byte("  \t"))
	data := join(lines)
	got := countFirst(data, "f", ReadyOptions{}, time.Now())
	want := parseSnapshotWith(data, "f", func(store []record, errs []error) { tallyAll(store, errs, false) })
	spans := blockSpans(data, want.recs)
	if got.bad != nil || want.bad != nil || got.n != len(want.recs) || len(got.blocks) != len(spans) || len(spans) != (len(want.recs)+memoBlock-1)/memoBlock {
		t.Fatalf("bad %v, %d records, %d runs summed, %d spans", got.bad, got.n, len(got.blocks), len(spans))
	}
	for k, span := range spans {
		fields, _ := countFieldsSum(want.recs[k*memoBlock:min(len(want.recs), (k+1)*memoBlock)], nil)
		if got.blocks[k] != (countBlock{sumLine(span), fields}) {
			t.Fatalf("run %d: sums %+v, want %+v", k, got.blocks[k], countBlock{sumLine(span), fields})
		}
	}
}
