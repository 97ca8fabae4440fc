package beads

import (
	"embed"
	"encoding/binary"
	"encoding/hex"
	"hash/crc32"
	"io"
	"math/bits"
	"runtime"
	"strings"
	"sync"
)

// ownSource is this package's source, for codeID.
//
//go:embed *.go
var ownSource embed.FS

// codeID identifies the code that decides what the index memo and the
// kept counts hold: this package's source (the index pass, Ready's rules,
// the formats) and the Go release (encoding/json's verdict on a line).
// Unlike exeID it survives a new chorus binary whose task store did not
// change, so the first `chorus status` after an upgrade or a rebuild
// takes the counts kept or counts from the memo, instead of decoding every
// task again. Answers rendered outside this package (the ready lists) stay
// keyed by exeID. "" when the source cannot be read (never, for a build).
var codeID = sync.OnceValue(hashOwnSource)

// hashOwnSource is codeID, computed. Every `chorus status` pays it, cache
// hit or not, so it is kept cheap: the files are read through one small
// buffer (ReadFile's copies were 200 KB of fresh memory, most of its cost)
// and summed with CRC-32 IEEE, whose carry-less multiply needs no tables,
// and a 64-bit word hash (sourceHash) beside it. CRC-32C's table setup
// alone was 0.2 ms, a twentieth of a status from the cache.
func hashOwnSource() string {
	var h sourceHash
	h.write([]byte(runtime.Version()))
	ents, err := ownSource.ReadDir(".") // sorted by name
	if err != nil {
		return ""
	}
	buf := make([]byte, 16<<10)
	for _, e := range ents {
		p := e.Name()
		if e.IsDir() || strings.HasSuffix(p, "_test.go") {
			continue // tests change no answer
		}
		h.write([]byte(p + "\x00"))
		f, err := ownSource.Open(p)
		if err != nil {
			return ""
		}
		for {
			n, err := f.Read(buf)
			h.write(buf[:n])
			if err == io.EOF {
				break
			}
			if err != nil {
				f.Close()
				return ""
			}
		}
		f.Close()
	}
	var sum [12]byte
	binary.LittleEndian.PutUint32(sum[:], h.crc)
	binary.LittleEndian.PutUint64(sum[4:], h.finish())
	return "code-" + hex.EncodeToString(sum[:])
}

// sourceHash sums a stream of writes (their concatenation: how the bytes
// are cut into writes does not matter) with CRC-32 IEEE and a 64-bit hash
// of its little-endian words, dealt in turn to four lanes (so that the
// multiplies do not wait on each other), each word mixed into its lane by
// xor, multiply and rotate; the lanes are folded together at the end.
type sourceHash struct {
	crc  uint32
	lane [4]uint64
	n    uint64 // bytes written
	tail [32]byte
	nt   int // bytes in tail
}

const sourceMul = 0x9e3779b97f4a7c15

// block mixes 32 bytes into the lanes.
func (s *sourceHash) block(b []byte) {
	s.blocks(b[:32])
}

// blocks mixes b's whole 32-byte blocks into the lanes, in locals so the
// four multiplies of a block run side by side.
func (s *sourceHash) blocks(b []byte) {
	l0, l1, l2, l3 := s.lane[0], s.lane[1], s.lane[2], s.lane[3]
	for ; len(b) >= 32; b = b[32:] {
		l0 = bits.RotateLeft64((l0^binary.LittleEndian.Uint64(b))*sourceMul, 29)
		l1 = bits.RotateLeft64((l1^binary.LittleEndian.Uint64(b[8:]))*sourceMul, 29)
		l2 = bits.RotateLeft64((l2^binary.LittleEndian.Uint64(b[16:]))*sourceMul, 29)
		l3 = bits.RotateLeft64((l3^binary.LittleEndian.Uint64(b[24:]))*sourceMul, 29)
	}
	s.lane = [4]uint64{l0, l1, l2, l3}
}

func (s *sourceHash) write(b []byte) {
	s.crc = crc32.Update(s.crc, crc32.IEEETable, b)
	s.n += uint64(len(b))
	if s.nt > 0 {
		k := copy(s.tail[s.nt:], b)
		s.nt += k
		b = b[k:]
		if s.nt < len(s.tail) {
			return
		}
		s.block(s.tail[:])
		s.nt = 0
	}
	s.blocks(b)
	s.nt = copy(s.tail[:], b[len(b)&^31:])
}

// finish is the word hash of all written: the last partial block padded
// with zeros, then the lanes folded one into the next with the length, so
// that trailing zero bytes and the lanes' order count.
func (s *sourceHash) finish() uint64 {
	t := *s
	if t.nt > 0 {
		clear(t.tail[t.nt:])
		t.block(t.tail[:])
	}
	h := t.n
	for _, l := range t.lane {
		h = bits.RotateLeft64((h^l)*sourceMul, 29)
		h ^= h >> 32
	}
	return h
}
