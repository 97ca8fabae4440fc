package beads

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"time"
	"unsafe"
)

// The index memo keeps, in the cache directory, each good record's index
// fields (those counting and Ready read) under its line's checksums, and
// the counts of those records. The first count after a change then
// decodes only the lines that changed, and takes the counts whole when
// none of them changed what counting reads (memocounts.go): decoding all
// 10,000 records was 8x the CPU of `git status`. It serves counting only:
// its records lack the fields a list, a full decode or a write needs.
const (
	indexMemoFile  = "index-memo"
	indexMemoMagic = "chorus-index-memo 4\n" // bump when the format or what decoding yields changes
)

// castagnoli is made on first use: its tables take about 0.2 ms, which
// every chorus process (a `chorus signal` too) paid at start.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// lineSum identifies a line's bytes: two different CRCs and the length.
type lineSum struct {
	c, i uint32
	n    int
}

func sumLine(b []byte) lineSum {
	return lineSum{crc32.Checksum(b, castagnoli()), crc32.ChecksumIEEE(b), len(b)}
}

// memoRec is one good record's index fields.
type memoRec struct {
	sum                     lineSum
	kind, id, status, itype string
	ephemeral               bool
	deferUntil              time.Time
	labels                  []string
	deps                    []edge
}

// indexMemo is a read memo: its view, the record each line's sum names
// (at, built on the first line that is not where it was), and the arrays
// its records' labels and dependencies are decoded into.
type indexMemo struct {
	v      *memoView
	at     map[lineSum]int
	labels []string
	deps   []edge
}

// find returns the memo's record for line i with sum, if it has one.
func (m *indexMemo) find(i int, sum lineSum) (int, bool) {
	if m == nil {
		return 0, false
	}
	if i < m.v.n && m.v.sum(i) == sum {
		return i, true
	}
	if m.at == nil {
		m.at = make(map[lineSum]int, m.v.n)
		for j := range m.v.n {
			m.at[m.v.sum(j)] = j
		}
	}
	j, ok := m.at[sum]
	return j, ok
}

// fill sets r's index fields from memo record j.
func (m *indexMemo) fill(j int, r *record) error {
	var mr memoRec
	off := int(binary.LittleEndian.Uint32(m.v.offs[4*j:]))
	if off > len(m.v.recs) {
		return errMemo
	}
	if _, err := decodeMemoRec(m.v.recs, off, &mr, &m.labels, &m.deps); err != nil {
		return err
	}
	r.kind, r.id, r.status, r.itype = mr.kind, mr.id, mr.status, mr.itype
	r.ephemeral, r.deferUntil, r.labels, r.deps = mr.ephemeral, mr.deferUntil, mr.labels, mr.deps
	return nil
}

// recBytes is memo record j as encoded.
func (m *indexMemo) recBytes(j int) (string, bool) {
	lo := int(binary.LittleEndian.Uint32(m.v.offs[4*j:]))
	hi := len(m.v.recs)
	if j+1 < m.v.n {
		hi = int(binary.LittleEndian.Uint32(m.v.offs[4*j+4:]))
	}
	if lo > hi || hi > len(m.v.recs) {
		return "", false
	}
	return m.v.recs[lo:hi], true
}

// loadCounting is load for counting the variant of the ready options:
// the counts straight from the index memo when no line changed what
// counting reads (sn.memo set, no records; memocounts.go), else the file
// parsed with the memo's help (the store's own snapshot when it is
// current). The snapshot it returns is not kept; release (never nil) ends
// it, after which its records' raw bytes are gone.
func (s *builtinStore) loadCounting(variant string, opt ReadyOptions) (sn *snapshot, release func(), err error) {
	release = func() {}
	f, err := os.Open(s.path)
	if err != nil {
		sn, err = s.load()
		return sn, release, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, release, err
	}
	key := keyOf(st)
	if s.snap != nil && s.snap.key == key {
		return s.snap, release, nil
	}
	path := filepath.Join(s.dir, readyCacheDir, indexMemoFile)
	// With a memo few lines are decoded, on this goroutine, so the file
	// can be read through a mapping under guard; a file cut short under it
	// is read again the ordinary way.
	if data, unmap, ok := mapFile(f, st.Size()); ok {
		var mc *memoCounts
		var sums []lineSum
		if guard(true, func() { mc, sums = countsFromMemo(data, path, variant, opt, s.now()) }) && mc == nil && sums == nil {
			// No memo: the first count's blocks may vouch for the counts.
			guard(true, func() { mc = countsFromBlocks(data, s.countsPath(variant), variant, s.now()) })
		}
		if mc != nil {
			return &snapshot{key: key, data: data, mapped: true, path: s.path, memo: mc}, unmap, nil
		}
		// Without a memo every line is read, still from the mapping: the
		// first count of a store (a fresh clone, a file another tool wrote)
		// counts as it reads (countFirst); a count after a new binary or a
		// change decodes records for the memo.
		memo := readMemo(path)
		if memo == nil && len(data) <= math.MaxUint32 && s.firstCount(variant) { // countFirst's offsets are 32-bit
			var fc *firstCounted
			if guard(true, func() { fc = countFirst(data, s.path, opt, s.now()) }) {
				return &snapshot{key: key, data: data, mapped: true, path: s.path, memo: fc.memoCounts(variant), bad: fc.bad}, unmap, nil
			}
			unmap() // cut short under the mapping: read it as it is now
			data := make([]byte, st.Size())
			if _, err := readFull(f, data); err != nil {
				return nil, release, err
			}
			fc = countFirst(data, s.path, opt, s.now())
			return &snapshot{key: key, data: data, path: s.path, memo: fc.memoCounts(variant), bad: fc.bad}, release, nil
		}
		if guard(true, func() { sn = s.parseCounting(data, key, memo, sums, true) }) {
			sn.mapped = true
			return sn, unmap, nil
		}
		unmap()
	}
	data := make([]byte, st.Size())
	if _, err := readFull(f, data); err != nil {
		return nil, release, err
	}
	return s.parseCounting(data, key, readMemo(path), nil, false), release, nil
}

// firstCount reports that the store was never counted for variant here:
// no answer is kept, not even one for an older version of the file (a
// fresh clone, or a task file written by another tool).
func (s *builtinStore) firstCount(variant string) bool {
	_, err := os.Lstat(s.countsPath(variant))
	return errors.Is(err, fs.ErrNotExist)
}

func (s *builtinStore) parseCounting(data []byte, key fileKey, memo *indexMemo, sums []lineSum, mapped bool) *snapshot {
	sn, _ := parseSnapshotMemo(data, s.path, memo, sums, mapped)
	sn.path, sn.data, sn.key = s.path, data, key
	return sn
}

// renewMemo writes sn's records as the index memo with their counts c for
// variant, so that the next count after a change that leaves what counting
// reads as it is takes c again. Counting renews it whenever it had to
// count: writing it costs about what decoding a hundred lines does.
func (s *builtinStore) renewMemo(sn *snapshot, variant string, c Counts, bits []byte, now time.Time) {
	if sn.sums == nil || sn.bad != nil || !sn.key.ok || len(bits) != len(sn.recs) {
		return
	}
	mc := &memoCounts{Variant: variant, Counts: c, bits: bits}
	mc.Lo, mc.Hi = deferWindow(sn.recs, now)
	if b := encodeMemo(sn, mc); b != nil {
		_ = atomicReplace(filepath.Join(s.dir, readyCacheDir, indexMemoFile), b) // a memo not written is only slower next time
	}
}

// parseSnapshotMemo is parseSnapshot taking each unchanged line's index
// fields from memo and reading the others with the tally (tally.go): its
// records hold what counting and the memo read, no more. It returns how
// many lines it decoded. sums are the
// lines' sums when already taken. mapped: data is a mapping read under
// guard, whose faults in parallel decoding reach the calling goroutine.
func parseSnapshotMemo(data []byte, path string, memo *indexMemo, sums []lineSum, mapped bool) (*snapshot, int) {
	decoded := 0
	var lineSums []lineSum
	var from []int32
	sn := parseSnapshotWith(data, path, func(store []record, errs []error) {
		taken := len(sums) == len(store)
		if !taken {
			sums = make([]lineSum, len(store))
		}
		var miss []int
		from = make([]int32, len(store))
		for i := range store {
			r := &store[i]
			if !taken {
				sums[i] = sumLine(r.raw)
			}
			j, ok := memo.find(i, sums[i])
			if ok && memo.fill(j, r) == nil {
				from[i] = int32(j)
				continue
			}
			from[i] = -1
			miss = append(miss, i)
		}
		decoded = len(miss)
		lineSums = sums
		// Read with the tally: the memo and the counts need no more.
		if len(miss) > len(store)/4 {
			tallyAll(store, errs, mapped) // mostly new: in parallel, as without a memo
			return
		}
		if len(miss) > 0 {
			t := newTally()
			for _, i := range miss {
				t.records(store[i:i+1], errs[i:i+1])
			}
		}
	})
	sn.sums = lineSums
	if memo != nil {
		sn.memoFrom, sn.memoRead = from, memo
	}
	return sn, decoded
}

// encodeMemo writes a snapshot's records (of a file with no bad line) as
// a memo, with mc the counts of those records when known; nil when the
// build cannot be identified.
//
// The body is laid out for reading a few records without decoding the
// rest: the record count, the counts (JSON, possibly empty), each line's
// sum (three uint32s: CRC-32C, CRC-32 IEEE, length), each record's offset
// in the records part, each record's state for the counts (a byte of
// memoReady, memoBlocked, memoHeld), the number of blocks and each block's
// sum (the bytes from the first to the last of each memoBlock lines; none
// when the lines' bytes are not at hand), then the records; a CRC-32C of
// all of it ends it.
func encodeMemo(sn *snapshot, mc *memoCounts) []byte {
	exe := codeID()
	if exe == "" {
		return nil
	}
	var cj []byte
	if mc != nil {
		var err error
		if cj, err = json.Marshal(mc); err != nil {
			return nil
		}
	}
	n := len(sn.recs)
	size := len(indexMemoMagic) + len(exe) + 17 + len(cj) + 17*n + 12*(n/memoBlock+1)
	for _, r := range sn.recs {
		size += len(r.kind) + len(r.id) + len(r.status) + len(r.itype) + 15
		for _, l := range r.labels {
			size += len(l) + 1
		}
		for _, d := range r.deps {
			size += len(d.IssueID) + len(d.DependsOnID) + len(d.Type) + 3
		}
	}
	b := make([]byte, 0, size+64) // the size it ends at, give or take long lengths: no growing copies
	b = append(b, indexMemoMagic...)
	b = append(b, exe...)
	b = append(b, '\n')
	head := len(b)
	b = binary.LittleEndian.AppendUint32(b, uint32(n))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cj)))
	b = append(b, cj...)
	for i, r := range sn.recs {
		var sum lineSum
		if len(sn.sums) == n {
			sum = sn.sums[i]
		} else {
			sum = sumLine(r.raw)
		}
		if sum.n > math.MaxUint32 {
			return nil
		}
		b = binary.LittleEndian.AppendUint32(b, sum.c)
		b = binary.LittleEndian.AppendUint32(b, sum.i)
		b = binary.LittleEndian.AppendUint32(b, uint32(sum.n))
	}
	offs := len(b)
	b = append(b, make([]byte, 4*n)...)
	if mc != nil && len(mc.bits) == n {
		b = append(b, mc.bits...)
	} else {
		b = append(b, make([]byte, n)...)
	}
	var blocks [][]byte
	if !guard(sn.mapped, func() {
		blocks = blockSpans(sn.data, sn.recs)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(blocks)))
		for _, bl := range blocks {
			sum := sumLine(bl)
			b = binary.LittleEndian.AppendUint32(b, sum.c)
			b = binary.LittleEndian.AppendUint32(b, sum.i)
			b = binary.LittleEndian.AppendUint32(b, uint32(sum.n))
		}
	}) {
		return nil // the file was cut short under the mapping
	}
	recs := len(b)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	reuse := sn.memoRead != nil && len(sn.memoFrom) == n
	for k, r := range sn.recs {
		if len(b)-recs > math.MaxUint32 {
			return nil
		}
		binary.LittleEndian.PutUint32(b[offs+4*k:], uint32(len(b)-recs))
		// A record taken from the memo read is copied as it was encoded.
		if reuse && sn.memoFrom[k] >= 0 {
			if enc, ok := sn.memoRead.recBytes(int(sn.memoFrom[k])); ok {
				b = append(b, enc...)
				continue
			}
		}
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
			b = binary.AppendVarint(b, r.deferUntil.UnixNano())
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
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[head:], castagnoli()))
}

var errMemo = errors.New("index memo damaged")

// memoBody checks raw as a memo of this build and returns its body.
func memoBody(raw []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(indexMemoMagic))
	nl := bytes.IndexByte(rest, '\n')
	if !ok || nl < 0 || string(rest[:nl]) != codeID() || len(rest) < nl+1+4 {
		return nil, false
	}
	body := rest[nl+1 : len(rest)-4]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(rest[len(rest)-4:]) {
		return nil, false
	}
	return body, true
}

// memoView reads a memo's body in place: sums and records by number,
// nothing decoded until asked for.
type memoView struct {
	n                        int
	counts                   []byte // JSON of memoCounts, or empty
	sums, offs, bits, blocks []byte
	recs                     string
}

// memoBlock lines make a block: a block whose bytes are as they were
// has its lines' sums taken from the memo, without hashing each line.
const memoBlock = 64

// block is block k's sum, if the memo has one.
func (v *memoView) block(k int) (lineSum, bool) {
	if 12*k+12 > len(v.blocks) {
		return lineSum{}, false
	}
	b := v.blocks[12*k:]
	return lineSum{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), int(binary.LittleEndian.Uint32(b[8:]))}, true
}

// blockSpans returns, for each run of memoBlock records, the bytes of
// data from its first line's start to its last line's end; nil when the
// records are not lines of data (a snapshot read without its bytes).
func blockSpans(data []byte, recs []*record) [][]byte {
	if len(data) == 0 || len(recs) == 0 {
		return nil
	}
	var out [][]byte
	for k := 0; k < len(recs); k += memoBlock {
		last := recs[min(k+memoBlock, len(recs))-1].raw
		lo, ok1 := offsetIn(data, recs[k].raw)
		hi, ok2 := offsetIn(data, last)
		if !ok1 || !ok2 || hi < lo || hi+len(last) > math.MaxUint32 {
			return nil
		}
		out = append(out, data[lo:hi+len(last)])
	}
	return out
}

// offsetIn is where b starts in data, when b is part of it.
func offsetIn(data, b []byte) (int, bool) {
	base, p := uintptr(unsafe.Pointer(unsafe.SliceData(data))), uintptr(unsafe.Pointer(unsafe.SliceData(b)))
	if p < base || p-base > uintptr(len(data)) || uintptr(len(b)) > uintptr(len(data))-(p-base) {
		return 0, false
	}
	return int(p - base), true
}

func viewMemo(body []byte) (*memoView, bool) {
	if len(body) < 8 {
		return nil, false
	}
	n := uint64(binary.LittleEndian.Uint32(body))
	cl := uint64(binary.LittleEndian.Uint32(body[4:]))
	if 8+cl+17*n+4 > uint64(len(body)) {
		return nil, false
	}
	v := &memoView{n: int(n)}
	at := 8 + int(cl)
	v.counts = body[8:at]
	v.sums, at = body[at:at+12*v.n], at+12*v.n
	v.offs, at = body[at:at+4*v.n], at+4*v.n
	v.bits, at = body[at:at+v.n], at+v.n
	if len(body)-at < 4 {
		return nil, false
	}
	nb := int(binary.LittleEndian.Uint32(body[at:]))
	at += 4
	if nb > (len(body)-at)/12 || nb > v.n/memoBlock+1 {
		return nil, false
	}
	v.blocks, at = body[at:at+12*nb], at+12*nb
	v.recs = unsafe.String(unsafe.SliceData(body[at:]), len(body)-at)
	return v, true
}

func (v *memoView) sum(i int) lineSum {
	b := v.sums[12*i:]
	return lineSum{binary.LittleEndian.Uint32(b), binary.LittleEndian.Uint32(b[4:]), int(binary.LittleEndian.Uint32(b[8:]))}
}

// rec decodes record i; its strings are slices of the memo's bytes.
func (v *memoView) rec(i int) (memoRec, error) {
	var r memoRec
	off := int(binary.LittleEndian.Uint32(v.offs[4*i:]))
	if off > len(v.recs) {
		return r, errMemo
	}
	if _, err := decodeMemoRec(v.recs, off, &r, nil, nil); err != nil {
		return r, err
	}
	r.sum = v.sum(i)
	return r, nil
}

// readMemo reads the memo at path; nil when it is missing, damaged, or
// from another build. Records are decoded as lines ask for them.
func readMemo(path string) *indexMemo {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	body, ok := memoBody(raw)
	if !ok {
		return nil
	}
	// raw is held or written by nothing else: every field decoded is a
	// slice of it, with no second copy of the memo.
	v, ok := viewMemo(body)
	if !ok {
		return nil
	}
	// Labels and dependencies of all records share two arrays: one
	// allocation each rather than two per record.
	return &indexMemo{v: v, labels: make([]string, 0, 2*v.n), deps: make([]edge, 0, 2*v.n)}
}

// decodeMemoRec decodes the record at b[i:] into r and returns where it
// ends. Labels and dependencies are appended to the shared arrays when
// given, else to arrays of their own.
func decodeMemoRec(b string, i int, r *memoRec, labels *[]string, deps *[]edge) (int, error) {
	if labels == nil {
		labels, deps = new([]string), new([]edge)
	}
	uv := func() (uint64, error) {
		v, n := binary.Uvarint([]byte(b[i:min(len(b), i+binary.MaxVarintLen64)]))
		if n <= 0 {
			return 0, errMemo
		}
		i += n
		return v, nil
	}
	str := func() (string, error) {
		n, err := uv()
		if err != nil || n > uint64(len(b)-i) {
			return "", errMemo
		}
		s := b[i : i+int(n)]
		i += int(n)
		return s, nil
	}
	var err error
	for _, p := range []*string{&r.kind, &r.id, &r.status, &r.itype} {
		if *p, err = str(); err != nil {
			return i, err
		}
	}
	if i >= len(b) {
		return i, errMemo
	}
	flags := b[i]
	i++
	r.ephemeral = flags&1 != 0
	if flags&2 != 0 {
		v, n := binary.Varint([]byte(b[i:min(len(b), i+binary.MaxVarintLen64)]))
		if n <= 0 {
			return i, errMemo
		}
		i += n
		r.deferUntil = time.Unix(0, v).UTC()
	}
	nl, err := uv()
	if err != nil || nl > uint64(len(b)) {
		return i, errMemo
	}
	if nl > 0 {
		start := len(*labels)
		for range nl {
			l, err := str()
			if err != nil {
				return i, err
			}
			*labels = append(*labels, l)
		}
		r.labels = (*labels)[start:len(*labels):len(*labels)]
	}
	nd, err := uv()
	if err != nil || nd > uint64(len(b)) {
		return i, errMemo
	}
	if nd > 0 {
		start := len(*deps)
		for range nd {
			var d edge
			for _, p := range []*string{&d.IssueID, &d.DependsOnID, &d.Type} {
				if *p, err = str(); err != nil {
					return i, err
				}
			}
			*deps = append(*deps, d)
		}
		r.deps = (*deps)[start:len(*deps):len(*deps)]
	}
	return i, nil
}
