//go:build linux || darwin

package beads

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A file cut short while mapped faults when its lost pages are read: guard
// turns that into false instead of a crash, and counting falls back.
func TestGuardMappedFileCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "issues.jsonl")
	data := bytes.Repeat([]byte("x"), 1<<16)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, unmap, ok := mapFile(f, int64(len(data)))
	if !ok {
		t.Fatal("file not mapped")
	}
	defer unmap()
	if !guard(true, func() { _ = bytes.Count(b, []byte("x")) }) {
		t.Fatal("a whole mapped file faulted")
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if guard(true, func() { _ = bytes.Count(b, []byte("x")) }) {
		t.Fatal("reading past the end of a cut file did not fault")
	}
	defer func() {
		if recover() == nil {
			t.Error("a panic that is not a fault was swallowed")
		}
	}()
	guard(true, func() { panic("other") })
}

// The index pass in parallel over a mapping cut short under it: a
// worker's fault reaches the caller's guard (the count then reads the
// file), not the process.
func TestParallelDecodeMappedCutShort(t *testing.T) {
	path := filepath.Join(t.TempDir(), "issues.jsonl")
	var data []byte
	for i := range 8000 {
		data = fmt.Appendf(data, `{"_type":"issue","id":"ch-%d","title":"Task %d","status":"open","priority":1,"issue_type":"task","created_at":"2026-01-01T00:00:00Z"}`+"\n", i, i)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, unmap, ok := mapFile(f, int64(len(data)))
	if !ok {
		t.Fatal("file not mapped")
	}
	defer unmap()
	var sn *snapshot
	if !guard(true, func() { sn, _ = parseSnapshotMemo(b, path, nil, nil, true) }) || len(sn.recs) != 8000 || sn.bad != nil {
		t.Fatal("a whole mapped file did not decode")
	}
	recs := make([]record, len(sn.recs))
	for i, r := range sn.recs {
		recs[i] = record{line: r.line, raw: r.raw}
	}
	if err := os.Truncate(path, 0); err != nil {
		t.Fatal(err)
	}
	if guard(true, func() { decodeParallel(recs, make([]error, len(recs)), true) }) {
		t.Fatal("decoding a cut file in parallel did not fault")
	}
}

// Counting through the mapping after each change matches a full recount.
func TestCountsMappedMatchFullParse(t *testing.T) {
	dir := t.TempDir()
	lines := memoLines(300)
	path := filepath.Join(dir, "issues.jsonl")
	if err := os.MkdirAll(filepath.Join(dir, readyCacheDir), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		if i > 0 {
			lines[i*7] = bytes.Replace(lines[i*7], []byte(`"status":"`), []byte(`"status":"closed","x":"`), 1)
		}
		if err := os.WriteFile(path, join(lines), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := openBuiltin(dir, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// Another variant than the memo's counts: always the slow way.
		sn, release, err := s.loadCounting("other", ReadyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := parseSnapshot(join(lines), path)
		if i == 0 {
			// The first count counts as it reads: no records, no line sums.
			if sn.sums != nil || sn.memoRead != nil || sn.memo == nil || len(sn.recs) != 0 || !sn.mapped {
				t.Fatal("the first count built records or took line sums for a memo")
			}
			if c := indexCounts(want, ReadyOptions{}, time.Now()); !sameCounts(sn.memo.Counts, c) {
				t.Errorf("first count %+v, want %+v", sn.memo.Counts, c)
			}
			// The memo as a later count writes it.
			full := s.parseCounting(join(lines), sn.key, nil, nil, false)
			now := time.Now()
			bits := make([]byte, len(full.recs))
			s.renewMemo(full, "counted", countRecords(full, ReadyOptions{}, now, bits), bits, now)
		}
		if i > 0 && !sn.mapped {
			t.Errorf("change %d: counted without the mapping though a memo exists", i)
		}
		if i > 0 {
			sameIndex(t, "mapped", sn, want)
		}
		release()
	}
}

// A chorus binary built anew from the same task store code (an upgrade
// that did not touch it, a rebuild) takes the counts kept and the index
// memo another one wrote; answers rendered outside this package do not.
func TestCountsAndMemoOutliveTheBinary(t *testing.T) {
	dir := t.TempDir()
	lines := memoLines(300)
	path := filepath.Join(dir, "issues.jsonl")
	if err := os.WriteFile(path, join(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := openBuiltin(dir, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := s.Counts(t.Context(), ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sn, release, err := s.loadCounting("counted", ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	full := s.parseCounting(join(lines), sn.key, nil, nil, false)
	release()
	now := time.Now()
	bits := make([]byte, len(full.recs))
	s.renewMemo(full, "counted", countRecords(full, ReadyOptions{}, now, bits), bits, now)
	render := func(ts []Task) ([]byte, error) { return fmt.Appendf(nil, "%d", len(ts)), nil }
	for _, first := range []bool{true, false} {
		if computed, err := s.CachedReady(t.Context(), io.Discard, ReadyOptions{}, "ids", render); err != nil || computed != first {
			t.Fatalf("ready list computed %v, want %v (%v)", computed, first, err)
		}
	}
	kept := s.countsPath(variantOf(ReadyOptions{}, "counts"))
	before, err := os.Stat(kept)
	if err != nil {
		t.Fatal(err)
	}

	was := exeID
	exeID = func() string { return "another-build" }
	defer func() { exeID = was }()
	memoPath := filepath.Join(dir, readyCacheDir, indexMemoFile)
	if readMemo(memoPath) == nil {
		t.Error("the memo of the same code was refused by another binary")
	}
	got, err := s.Counts(t.Context(), ReadyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(kept)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the counts kept were counted again by another binary")
	}
	if got.Total != want.Total || got.Ready != want.Ready {
		t.Errorf("counts %+v, want %+v", got, want)
	}
	if computed, err := s.CachedReady(t.Context(), io.Discard, ReadyOptions{}, "ids", render); err != nil || !computed {
		t.Errorf("a ready list of another binary was served (%v)", err)
	}
}
