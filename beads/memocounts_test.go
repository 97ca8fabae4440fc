//go:build linux || darwin

package beads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// graphLines is a task file of n tasks, each with up to three
// dependencies (blocks, parent-child, related) on other tasks, so that
// closing or blocking one unblocks, blocks, holds or frees others; some
// labelled, some deferred around now.
func graphLines(rng *rand.Rand, n int, now time.Time) [][]byte {
	statuses := []string{"open", "open", "open", "closed", "in_progress", "blocked"}
	var out [][]byte
	for i := range n {
		id := fmt.Sprintf("ch-%04d", i)
		m := map[string]any{"_type": "issue", "id": id, "title": fmt.Sprintf("Task %d", i), "status": statuses[rng.IntN(len(statuses))],
			"priority": rng.IntN(5), "issue_type": "task", "created_at": "2026-01-01T00:00:00Z"}
		var deps []map[string]any
		for range rng.IntN(4) {
			typ := []string{"blocks", "blocks", "parent-child", "related"}[rng.IntN(4)]
			deps = append(deps, map[string]any{"issue_id": id, "depends_on_id": fmt.Sprintf("ch-%04d", rng.IntN(n)), "type": typ})
		}
		if deps != nil {
			m["dependencies"] = deps
		}
		switch rng.IntN(8) {
		case 0:
			m["labels"] = []string{LabelDeferred}
		case 1:
			m["labels"] = []string{"area-1"}
		case 2:
			m["defer_until"] = now.Add(time.Duration(rng.IntN(72)-24) * time.Hour)
		}
		b, err := json.Marshal(m)
		if err != nil {
			panic(err)
		}
		out = append(out, b)
	}
	return out
}

// sameButStatusAndLabels reports whether a and b hold the same records,
// line for line, as far as counting reads them, but for status and labels.
func sameButStatusAndLabels(a, b *snapshot) bool {
	if len(a.recs) != len(b.recs) {
		return false
	}
	for i, r := range a.recs {
		o := b.recs[i]
		if r.kind != o.kind || r.id != o.id || r.itype != o.itype || r.ephemeral != o.ephemeral ||
			!r.deferUntil.Equal(o.deferUntil) ||
			!slices.Equal(r.deps, o.deps) {
			return false
		}
	}
	return true
}

func sameCounts(a, b Counts) bool {
	return a.Total == b.Total && a.Ready == b.Ready && a.Failed == b.Failed && maps.Equal(a.ByStatus, b.ByStatus)
}

// Counting after each of many random edits gives what a full recount of
// the file gives: titles and other fields counting does not read, closes,
// reopens, failures, labels, dependencies added and removed, defer dates
// and the clock passing them, tasks added, deleted and moved, broken and
// duplicate lines, a file cut short at a line's end or within one, other
// ready options, and lines appended while counting runs. The counts come
// from the memo exactly when what counting reads is as the memo has it but
// for statuses and labels.
func TestCountsAfterRandomEditsMatchFullRecount(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "issues.jsonl")
	memoPath := filepath.Join(dir, readyCacheDir, indexMemoFile)
	rng := rand.New(rand.NewPCG(7, 30))
	clock := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	lines := graphLines(rng, 300, clock)
	next := 1000
	pick := func() int { return rng.IntN(len(lines)) }
	// edit decodes line i, changes it and encodes it again: its bytes
	// change even when what counting reads does not.
	edit := func(i int, f func(m map[string]any)) {
		var m map[string]any
		if err := json.Unmarshal(lines[i], &m); err != nil {
			return // a broken line is left for the repair below
		}
		f(m)
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = b
	}
	newTask := func() []byte {
		next++
		dep := fmt.Sprintf("ch-%04d", rng.IntN(300))
		return fmt.Appendf(nil, `{"_type":"issue","id":"ch-n%d","title":"New %d","status":"open","priority":2,"issue_type":"task","created_at":"2026-01-01T00:00:00Z","dependencies":[{"issue_id":"ch-n%d","depends_on_id":%q,"type":"blocks"}]}`, next, next, next, dep)
	}
	write := func(data []byte) {
		if err := os.WriteFile(path+".tmp", data, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(path+".tmp", path); err != nil {
			t.Fatal(err)
		}
	}
	recount := func(data []byte, opt ReadyOptions) (Counts, error) {
		sn := parseSnapshot(data, path)
		return indexCounts(sn, opt, clock), sn.bad
	}
	// The file, options and clock the memo's counts were taken with;
	// unknown after a race.
	var memoData *snapshot
	var memoClock time.Time
	memoOpt, known := ReadyOptions{}, true
	var broken int = -1 // a broken or duplicate line to take out next
	fast := 0
	for step := range 800 {
		opt := ReadyOptions{}
		var appends [][]byte
		if broken >= 0 {
			lines = slices.Delete(lines, broken, broken+1)
			broken = -1
		}
		what := rng.IntN(19)
		switch what {
		case 0:
			edit(pick(), func(m map[string]any) { m["title"] = fmt.Sprintf("Title %d", rng.Int()) })
		case 1:
			edit(pick(), func(m map[string]any) { m["description"] = fmt.Sprintf("About %d", rng.Int()); m["assignee"] = "x" })
		case 2:
			edit(pick(), func(m map[string]any) { m["status"] = "closed" })
		case 3:
			edit(pick(), func(m map[string]any) { m["status"] = "open" })
		case 4:
			edit(pick(), func(m map[string]any) { m["status"] = "blocked"; m["labels"] = []string{LabelFailed} })
		case 5:
			edit(pick(), func(m map[string]any) {
				m["labels"] = []string{fmt.Sprintf("area-%d", rng.IntN(3)), LabelDeferred}[:1+rng.IntN(2)]
			})
		case 6:
			edit(pick(), func(m map[string]any) {
				typ := []string{"blocks", "parent-child", "related"}[rng.IntN(3)]
				deps, _ := m["dependencies"].([]any)
				m["dependencies"] = append(deps, map[string]any{"issue_id": m["id"], "depends_on_id": fmt.Sprintf("ch-%04d", rng.IntN(300)), "type": typ})
			})
		case 7:
			edit(pick(), func(m map[string]any) { delete(m, "dependencies") })
		case 8:
			i := pick()
			lines = slices.Delete(lines, i, i+1)
		case 9:
			lines = slices.Insert(lines, pick(), newTask())
		case 10:
			i, j := pick(), pick()
			lines[i], lines[j] = lines[j], lines[i]
		case 11:
			edit(pick(), func(m map[string]any) { m["defer_until"] = clock.Add(time.Duration(rng.IntN(96)) * time.Hour) })
		case 12:
			clock = clock.Add(time.Duration(rng.IntN(48)) * time.Hour)
		case 13:
			broken = pick()
			lines = slices.Insert(lines, broken, []byte(`{"_type":"issue","id":"ch-cut","title":"Cut sh`))
		case 14:
			broken = len(lines)
			lines = append(lines, lines[pick()])
		case 15:
			opt = ReadyOptions{ExcludeLabels: []string{"area-1"}}
		case 17: // cut short at a line's end
			lines = lines[:len(lines)-1-rng.IntN(3)]
		case 18: // cut short within the last line
			broken = len(lines) - 1
			lines[broken] = lines[broken][:rng.IntN(len(lines[broken]))]
		case 16:
			for range 1 + rng.IntN(20) {
				appends = append(appends, newTask())
			}
		}
		data := join(lines)
		write(data)
		s, err := openBuiltin(dir, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.now = func() time.Time { return clock }

		// What the memo's counts should serve: the file reads as the memo
		// has it, for the same options, with no defer date crossed since.
		var want bool
		if memoData != nil && slices.Equal(opt.ExcludeLabels, memoOpt.ExcludeLabels) {
			old, cur := memoData, parseSnapshot(data, path)
			lo, hi := deferWindow(old.recs, memoClock)
			changed := 0
			for i, r := range cur.recs {
				if i >= len(old.recs) || !bytes.Equal(r.raw, old.recs[i].raw) {
					changed++
				}
			}
			want = cur.bad == nil && sameButStatusAndLabels(old, cur) && lo <= clock.UnixNano() && clock.UnixNano() < hi &&
				changed <= max(100, len(old.recs)/50)
		}
		mc, _ := countsFromMemo(data, memoPath, variantOf(opt, "counts"), opt, clock)
		got := mc != nil
		if known && got != want {
			t.Fatalf("step %d (edit %d): counts taken from the memo %v, want %v", step, what, got, want)
		}
		if got {
			fast++
		}

		var c Counts
		if len(appends) == 0 {
			c, err = s.Counts(context.Background(), opt)
		} else {
			// Lines appended in place while counting runs: the answer is
			// that of the file before, after, or between two appends.
			var wg sync.WaitGroup
			wg.Go(func() {
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					t.Error(err)
					return
				}
				defer f.Close()
				for _, l := range appends {
					if _, err := f.Write(append(slices.Clip(l), '\n')); err != nil {
						t.Error(err)
					}
				}
			})
			c, err = s.Counts(context.Background(), opt)
			wg.Wait()
			if err != nil {
				t.Fatalf("step %d: counting during appends: %v", step, err)
			}
			lines = append(lines, appends...)
			ok := false
			for k := range appends {
				w, _ := recount(join(lines[:len(lines)-len(appends)+k]), opt)
				ok = ok || sameCounts(c, w)
			}
			final, _ := recount(join(lines), opt)
			if !ok && !sameCounts(c, final) {
				t.Fatalf("step %d: counts with appends %+v match no state of the file", step, c)
			}
			c, err = s.Counts(context.Background(), opt)
			data = join(lines)
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		w, bad := recount(data, opt)
		if !sameCounts(c, w) {
			t.Fatalf("step %d (edit %d): counts %+v, a full recount %+v", step, what, c, w)
		}
		if (bad == nil) != (c.Malformed == nil) || (bad != nil && !errors.Is(c.Malformed, ErrMalformed)) {
			t.Fatalf("step %d (edit %d): malformed %v, want %v", step, what, c.Malformed, bad)
		}
		switch {
		case len(appends) > 0:
			known = false // which state the memo has depends on the race
		case !got && bad == nil:
			memoData, memoOpt, memoClock, known = parseSnapshot(data, path), opt, clock, true
		}
	}
	if fast < 100 {
		t.Errorf("counts came from the memo %d times in 800 edits", fast)
	}
}

// A memo whose counts are damaged, cut short, from another format or
// another build is not taken; the intact one is.
func TestMemoCountsDamagedAreNotTaken(t *testing.T) {
	data := join(memoLines(50))
	sn := parseSnapshot(data, "f")
	clock := time.Date(2026, 11, 28, 0, 0, 0, 0, time.UTC)
	mc := &memoCounts{Variant: "v", Counts: indexCounts(sn, ReadyOptions{}, clock)}
	mc.Lo, mc.Hi = deferWindow(sn.recs, clock)
	b := encodeMemo(sn, mc)
	path := filepath.Join(t.TempDir(), indexMemoFile)
	other := slices.Clone(b)
	other[len(indexMemoMagic)] ^= 1 // another build's id
	for _, c := range []struct {
		name string
		data []byte
		take bool
	}{
		{"intact", b, true},
		{"flipped in the counts", func() []byte {
			c := slices.Clone(b)
			c[bytes.Index(c, []byte(`"Total"`))+2] ^= 1
			return c
		}(), false},
		{"flipped in the sums", func() []byte { c := slices.Clone(b); c[len(c)-30] ^= 1; return c }(), false},
		{"short", b[:len(b)-9], false},
		{"empty", nil, false},
		{"format 1", append([]byte("chorus-index-memo 1\n"), b[len(indexMemoMagic):]...), false},
		{"another build", other, false},
	} {
		if err := os.WriteFile(path, c.data, 0o644); err != nil {
			t.Fatal(err)
		}
		got, _ := countsFromMemo(data, path, "v", ReadyOptions{}, clock)
		if (got != nil) != c.take {
			t.Errorf("%s: taken %v, want %v", c.name, got != nil, c.take)
		}
		if got != nil && !sameCounts(got.Counts, mc.Counts) {
			t.Errorf("%s: counts %+v, want %+v", c.name, got.Counts, mc.Counts)
		}
	}
	if got, _ := countsFromMemo(data, path+"-missing", "v", ReadyOptions{}, clock); got != nil {
		t.Error("a missing memo answered")
	}
}
