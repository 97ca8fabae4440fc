package beads

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"hash/crc32"
	"math"
	"os"
	"time"
)

// The count blocks are what the first count of a store keeps so that the
// count after the first change need not count again: for each run of
// memoBlock records (blank lines aside), a sum of the run's bytes and a
// sum of what counting reads from its records (type, id, status, issue
// type, ephemeral, defer date, labels, dependency edges), with the counts
// of the whole file. A later count sums the runs of the file as it is;
// runs whose bytes are as they were read as they did, the others are read
// again with the tally, and when every run's counting sum is as it was the
// file holds what the first count counted, record for record, so the
// counts stand (a title or description edited, a note added). Anything
// else (a record added or removed, a status, label or edge changed, a bad
// line, another variant, a defer date crossed) counts the full way. The
// first count writes no index memo (memo.go): that cost a seventh of it,
// where these cost a few hundredths; the full count writes the memo.
const (
	countBlocksMagic = "chorus-count-blocks 1\n" // bump when the format or what a sum covers changes
)

// countBlock is one run's sums: its bytes, and its records' counting
// fields.
type countBlock struct {
	raw, fields lineSum
}

// countFieldsSum sums what counting reads from recs, each value with its
// length so that no two different runs encode alike. buf is scratch space,
// returned for reuse.
func countFieldsSum(recs []*record, buf []byte) (lineSum, []byte) {
	b := buf[:0]
	for _, r := range recs {
		b = appendCountFields(b, r)
	}
	return sumLine(b), b
}

// appendCountFields appends what counting reads from r to b, as
// countFieldsSum sums it.
func appendCountFields(b []byte, r *record) []byte {
	str := func(s string) {
		if len(s) < 0x80 {
			b = append(b, byte(len(s))) // its uvarint, without the call
		} else {
			b = binary.AppendUvarint(b, uint64(len(s)))
		}
		b = append(b, s...)
	}
	{
		str(r.kind)
		str(r.id)
		str(r.status)
		str(r.itype)
		var flags byte
		if r.ephemeral {
			flags |= 1
		}
		if !r.deferUntil.IsZero() {
			flags |= 2
		}
		b = append(b, flags)
		if !r.deferUntil.IsZero() {
			b = binary.AppendVarint(b, r.deferUntil.Unix())
			b = binary.AppendUvarint(b, uint64(r.deferUntil.Nanosecond()))
		}
		b = binary.AppendUvarint(b, uint64(len(r.labels)))
		for _, l := range r.labels {
			str(l)
		}
		b = binary.AppendUvarint(b, uint64(len(r.deps)))
		for _, d := range r.deps {
			str(d.IssueID)
			str(d.DependsOnID)
			str(d.Type)
		}
	}
	return b
}

// encodeCountBlocks is the count blocks of a first count of a file with
// no bad line (n records, their runs' sums blocks) with its counts mc;
// nil when the build cannot be identified.
//
// After the magic and the build: the record count, the counts (JSON of
// memoCounts), the number of runs and each run's two sums (three uint32s
// each: CRC-32C, CRC-32 IEEE, length); a CRC-32C of all of it ends it.
func encodeCountBlocks(n int, blocks []countBlock, mc *memoCounts) []byte {
	exe := codeID()
	if exe == "" || n > math.MaxUint32 || len(blocks) != (n+memoBlock-1)/memoBlock {
		return nil
	}
	cj, err := json.Marshal(mc)
	if err != nil {
		return nil
	}
	b := make([]byte, 0, len(countBlocksMagic)+len(exe)+len(cj)+24*len(blocks)+32)
	b = append(b, countBlocksMagic...)
	b = append(b, exe...)
	b = append(b, '\n')
	head := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cj)))
	b = append(b, cj...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(blocks)))
	put := func(s lineSum) {
		b = binary.LittleEndian.AppendUint32(b, s.c)
		b = binary.LittleEndian.AppendUint32(b, s.i)
		b = binary.LittleEndian.AppendUint32(b, uint32(s.n))
	}
	for _, bl := range blocks {
		put(bl.raw)
		put(bl.fields)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[head:], castagnoli()))
}

// withBlocks is the counts' cache payload: the counts as JSON (which has
// no newline) and, after a newline, the count blocks when there are any.
func withBlocks(counts, blocks []byte) []byte {
	if len(blocks) == 0 {
		return counts
	}
	return append(append(counts, '\n'), blocks...)
}

// countsPart is the counts' JSON in a counts cache payload.
func countsPart(payload []byte) []byte {
	if i := bytes.IndexByte(payload, '\n'); i >= 0 {
		return payload[:i]
	}
	return payload
}

// readCountBlocks reads the count blocks kept in the counts cache entry at
// path, whatever version of the task file it was written for (the blocks
// say themselves what they hold): the record count, the counts, the runs'
// sums, and the blocks as encoded (kept again by a count they answer);
// ok false when missing, damaged or from another build.
func readCountBlocks(path string) (n int, mc memoCounts, blocks []countBlock, enc []byte, ok bool) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0, mc, nil, nil, false
	}
	// The entry's magic and header, then the counts' JSON: the blocks
	// follow.
	for range 3 {
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			return 0, mc, nil, nil, false
		}
		raw = raw[i+1:]
	}
	enc = raw
	rest, ok := bytes.CutPrefix(raw, []byte(countBlocksMagic))
	nl := bytes.IndexByte(rest, '\n')
	if !ok || nl < 0 || string(rest[:nl]) != codeID() || len(rest) < nl+1+4 {
		return 0, mc, nil, nil, false
	}
	body := rest[nl+1 : len(rest)-4]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(rest[len(rest)-4:]) || len(body) < 8 {
		return 0, mc, nil, nil, false
	}
	n = int(binary.LittleEndian.Uint32(body))
	cl := int(binary.LittleEndian.Uint32(body[4:]))
	if cl > len(body)-12 {
		return 0, mc, nil, nil, false
	}
	if json.Unmarshal(body[8:8+cl], &mc) != nil || mc.Counts.ByStatus == nil {
		return 0, mc, nil, nil, false
	}
	body = body[8+cl:]
	nb := int(binary.LittleEndian.Uint32(body))
	body = body[4:]
	if nb != (n+memoBlock-1)/memoBlock || len(body) != 24*nb {
		return 0, mc, nil, nil, false
	}
	get := func(b []byte) lineSum {
		return lineSum{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), int(binary.LittleEndian.Uint32(b[8:]))}
	}
	blocks = make([]countBlock, nb)
	for k := range blocks {
		blocks[k] = countBlock{get(body[24*k:]), get(body[24*k+12:])}
	}
	return n, mc, blocks, enc, true
}

// countsFromBlocks returns the counts kept in the count blocks in the
// counts cache entry at path when data (the task file) holds, run for run, what the counted file
// held for counting; nil otherwise, and then the caller counts the full
// way. Run under guard: data is a mapping.
func countsFromBlocks(data []byte, path, variant string, now time.Time) *memoCounts {
	n, mc, blocks, enc, ok := readCountBlocks(path)
	if !ok || mc.Variant != variant {
		return nil
	}
	if t := now.UnixNano(); t < mc.Lo || t >= mc.Hi {
		return nil
	}
	mc.blocks = enc
	// The runs as parseSnapshotWith splits the lines: blank ones left out.
	type run struct {
		k     int
		first int // the line number of its first line
		lines [][]byte
	}
	var changed []run
	cur := run{k: -1}
	var lo, end int // where the current run's bytes start and end
	at := 0         // records seen
	done := func() bool {
		if cur.k >= len(blocks) {
			return false
		}
		if sumLine(data[lo:end]) != blocks[cur.k].raw {
			if len(changed) >= max(4, len(blocks)/8) {
				return false // as good as all new: the full count is as cheap
			}
			changed = append(changed, cur)
		}
		if len(changed) > 0 && changed[len(changed)-1].k == cur.k {
			cur = run{k: -1} // its lines are kept
		} else {
			cur = run{k: -1, lines: cur.lines[:0]}
		}
		return true
	}
	for rest, lineNo := data, 1; len(rest) > 0; lineNo++ {
		from := len(data) - len(rest)
		var line []byte
		if j := bytes.IndexByte(rest, '\n'); j >= 0 {
			line, rest = rest[:j], rest[j+1:]
		} else {
			line, rest = rest, nil
		}
		if len(line) == 0 || (line[0] != '{' && len(bytes.TrimSpace(line)) == 0) {
			continue
		}
		if cur.k < 0 {
			cur.k, cur.first, lo = at/memoBlock, lineNo, from
		}
		cur.lines = append(cur.lines, line)
		end = from + len(line)
		if at++; at%memoBlock == 0 && !done() {
			return nil
		}
	}
	if (cur.k >= 0 && !done()) || at != n {
		return nil
	}
	// Read the changed runs as the full count would, and compare what
	// counting reads.
	t := newTally()
	var buf []byte
	for _, c := range changed {
		store := make([]record, len(c.lines))
		errs := make([]error, len(store))
		recs := make([]*record, len(store))
		for j := range store {
			store[j] = record{line: c.first + j, raw: c.lines[j]}
			recs[j] = &store[j]
		}
		t.records(store, errs)
		for j := range store {
			if errs[j] != nil || (store[j].kind == "issue" && store[j].id == "") {
				return nil // the full count reports it
			}
		}
		var sum lineSum
		if sum, buf = countFieldsSum(recs, buf); sum != blocks[c.k].fields {
			return nil
		}
	}
	return &mc
}
