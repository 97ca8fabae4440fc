package beads

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"os"
	"path/filepath"
	"time"
	"unsafe"
)

// The index memo keeps, in the cache directory, each good record's index
// fields (those counting and Ready read) under its line's checksums. The
// first count after a change (one task updated, one added) then decodes
// only the lines that changed: decoding all 10,000 records was 8x the
// CPU of `git status`. It serves counting only: its records lack the
// fields a list, a full decode or a write needs.
const (
	indexMemoFile  = "index-memo"
	indexMemoMagic = "chorus-index-memo 1\n" // bump when the format or what decoding yields changes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// lineSum identifies a line's bytes: two different CRCs and the length.
type lineSum struct {
	c, i uint32
	n    int
}

func sumLine(b []byte) lineSum {
	return lineSum{crc32.Checksum(b, castagnoli), crc32.ChecksumIEEE(b), len(b)}
}

// memoRec is one good record's index fields.
type memoRec struct {
	sum                     lineSum
	kind, id, status, itype string
	ephemeral               bool
	deferUntil              time.Time
	labels                  []string
	deps                    []Dependency
}

// indexMemo is a read memo; at maps a line's sum to its record, built on
// the first line that is not where it was.
type indexMemo struct {
	recs []memoRec
	at   map[lineSum]int
}

func (m *indexMemo) find(i int, sum lineSum) (*memoRec, bool) {
	if m == nil {
		return nil, false
	}
	if i < len(m.recs) && m.recs[i].sum == sum {
		return &m.recs[i], true
	}
	if m.at == nil {
		m.at = make(map[lineSum]int, len(m.recs))
		for j := range m.recs {
			m.at[m.recs[j].sum] = j
		}
	}
	j, ok := m.at[sum]
	if !ok {
		return nil, false
	}
	return &m.recs[j], true
}

// loadCounting is load for counting: the file parsed with the memo's help
// (the store's own snapshot when it is current), and the memo renewed when
// lines were decoded. The snapshot it returns is not kept; release (never
// nil) ends it, after which its records' raw bytes are gone.
func (s *builtinStore) loadCounting() (sn *snapshot, release func(), err error) {
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
	memo := readMemo(path)
	// With a memo few lines are decoded, on this goroutine, so the file
	// can be read through a mapping under guard; a file cut short under it
	// is read again the ordinary way.
	if memo != nil {
		if data, unmap, ok := mapFile(f, st.Size()); ok {
			if guard(true, func() { sn = s.parseCounting(data, key, memo, true) }) {
				sn.mapped = true
				return sn, unmap, nil
			}
			unmap()
		}
	}
	data := make([]byte, st.Size())
	if _, err := readFull(f, data); err != nil {
		return nil, release, err
	}
	return s.parseCounting(data, key, memo, false), release, nil
}

func (s *builtinStore) parseCounting(data []byte, key fileKey, memo *indexMemo, serial bool) *snapshot {
	sn, decoded := parseSnapshotMemo(data, s.path, memo, serial)
	sn.path, sn.data, sn.key = s.path, data, key
	// Renewed when it is missing or a good share of the lines missed it:
	// writing it costs about what decoding a hundred lines does.
	if (memo == nil || decoded > max(100, len(sn.recs)/50)) && sn.bad == nil {
		if b := encodeMemo(sn); b != nil {
			_ = atomicReplace(filepath.Join(s.dir, readyCacheDir, indexMemoFile), b) // a memo not written is only slower next time
		}
	}
	return sn
}

// parseSnapshotMemo is parseSnapshot taking each unchanged line's index
// fields from memo; it returns how many lines it decoded. serial keeps
// all decoding on the calling goroutine.
func parseSnapshotMemo(data []byte, path string, memo *indexMemo, serial bool) (*snapshot, int) {
	decoded := 0
	sn := parseSnapshotWith(data, path, func(store []record, errs []error) {
		sums := make([]lineSum, len(store))
		var miss []int
		for i := range store {
			r := &store[i]
			sums[i] = sumLine(r.raw)
			m, ok := memo.find(i, sums[i])
			if !ok {
				miss = append(miss, i)
				continue
			}
			r.kind, r.id, r.status, r.itype = m.kind, m.id, m.status, m.itype
			r.ephemeral, r.deferUntil, r.labels, r.deps = m.ephemeral, m.deferUntil, m.labels, m.deps
		}
		decoded = len(miss)
		if len(miss) > len(store)/4 && !serial {
			decodeAll(store, errs) // mostly new: in parallel, as without a memo
			return
		}
		for _, i := range miss {
			decodeRecords(store[i:i+1], errs[i:i+1])
		}
	})
	return sn, decoded
}

// encodeMemo writes a snapshot's records (of a file with no bad line) as
// a memo; nil when the build cannot be identified.
func encodeMemo(sn *snapshot) []byte {
	exe := exeID()
	if exe == "" {
		return nil
	}
	b := append([]byte(indexMemoMagic), exe...)
	b = append(b, '\n')
	head := len(b)
	b = binary.AppendUvarint(b, uint64(len(sn.recs)))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	for _, r := range sn.recs {
		sum := sumLine(r.raw)
		b = binary.LittleEndian.AppendUint32(b, sum.c)
		b = binary.LittleEndian.AppendUint32(b, sum.i)
		b = binary.AppendUvarint(b, uint64(sum.n))
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
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[head:], castagnoli))
}

var errMemo = errors.New("index memo damaged")

// readMemo reads the memo at path; nil when it is missing, damaged, or
// from another build.
func readMemo(path string) *indexMemo {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	rest, ok := bytes.CutPrefix(raw, []byte(indexMemoMagic))
	nl := bytes.IndexByte(rest, '\n')
	if !ok || nl < 0 || string(rest[:nl]) != exeID() || len(rest) < nl+1+4 {
		return nil
	}
	body := rest[nl+1 : len(rest)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(rest[len(rest)-4:]) {
		return nil
	}
	// One string over raw, which nothing else holds or writes: every field
	// is a slice of it, with no second copy of the memo.
	m, err := decodeMemo(unsafe.String(unsafe.SliceData(body), len(body)))
	if err != nil {
		return nil
	}
	return m
}

func decodeMemo(b string) (*indexMemo, error) {
	i := 0
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
	count, err := uv()
	if err != nil || count > uint64(len(b)) {
		return nil, errMemo
	}
	m := &indexMemo{recs: make([]memoRec, count)}
	// Labels and dependencies of all records share two arrays: one
	// allocation each rather than two per record.
	labels := make([]string, 0, 2*count)
	deps := make([]Dependency, 0, 2*count)
	for k := range m.recs {
		r := &m.recs[k]
		if len(b)-i < 8 {
			return nil, errMemo
		}
		r.sum.c = binary.LittleEndian.Uint32([]byte(b[i : i+4]))
		r.sum.i = binary.LittleEndian.Uint32([]byte(b[i+4 : i+8]))
		i += 8
		n, err := uv()
		if err != nil {
			return nil, err
		}
		r.sum.n = int(n)
		for _, p := range []*string{&r.kind, &r.id, &r.status, &r.itype} {
			if *p, err = str(); err != nil {
				return nil, err
			}
		}
		if i >= len(b) {
			return nil, errMemo
		}
		flags := b[i]
		i++
		r.ephemeral = flags&1 != 0
		if flags&2 != 0 {
			v, n := binary.Varint([]byte(b[i:min(len(b), i+binary.MaxVarintLen64)]))
			if n <= 0 {
				return nil, errMemo
			}
			i += n
			r.deferUntil = time.Unix(0, v).UTC()
		}
		nl, err := uv()
		if err != nil || nl > uint64(len(b)) {
			return nil, errMemo
		}
		if nl > 0 {
			start := len(labels)
			for range nl {
				l, err := str()
				if err != nil {
					return nil, err
				}
				labels = append(labels, l)
			}
			r.labels = labels[start:len(labels):len(labels)]
		}
		nd, err := uv()
		if err != nil || nd > uint64(len(b)) {
			return nil, errMemo
		}
		if nd > 0 {
			start := len(deps)
			for range nd {
				var d Dependency
				for _, p := range []*string{&d.IssueID, &d.DependsOnID, &d.Type} {
					if *p, err = str(); err != nil {
						return nil, err
					}
				}
				deps = append(deps, d)
			}
			r.deps = deps[start:len(deps):len(deps)]
		}
	}
	if i != len(b) {
		return nil, errMemo
	}
	return m, nil
}
