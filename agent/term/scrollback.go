package term

import (
	"encoding/binary"
	"errors"
	"unicode/utf8"
)

// scrollback is a ring of the rows that scrolled off the top of the main
// screen, oldest first. Rows are kept packed (pack): a run of cells in
// one style costs its text's UTF-8 bytes and a few bytes of header, not
// 16 bytes a cell, so a long history stays near the size of its text.
// The packed rows are laid end to end in blocks, oldest first; a block is
// let go when its last row is evicted. Nothing in it holds a pointer per
// row, so the garbage collector does not walk the history.
type scrollback struct {
	rows  []span // the ring
	head  int    // index of the oldest row once the ring is full
	n     int
	max   int
	total uint64 // rows ever pushed, for incremental text extraction

	blocks [][]byte // blocks[0] is block number block0
	block0 uint32

	styles  []style // a run's style by index
	styleIx map[style]uint32
	enc     []byte // scratch for packing
	dec     []Cell // scratch for at
}

// span is one history row: the block and offset its packed runs start
// at, and whether its text continues on the next row (the offset's top
// bit). Rows are stored end to end, so a row ends where the next one
// starts in the same block, or at its block's end: 8 bytes a row, not 16
// (1.3 MB less for 8 agents x 10,000 rows, in the engine and wherever a
// history is loaded).
type span struct {
	block uint32
	off   uint32
}

const spanWrapped = 1 << 31

func (r span) offset() uint32 { return r.off &^ spanWrapped }
func (r span) wrapped() bool  { return r.off&spanWrapped != 0 }

// blockSize is the usual block: large enough that the blocks' own cost
// is nothing, small enough that the one partly evicted costs little.
const blockSize = 32 << 10

// style is what a run's cells share.
type style struct {
	fg, bg Color
	attr   Attr
}

func (s *scrollback) len() int { return s.n }

// bytesOf is the packed runs of row i, 0 being the oldest.
func (s *scrollback) bytesOf(i int) []byte {
	r := s.rows[(s.head+i)%len(s.rows)]
	b := s.blocks[r.block-s.block0]
	end := uint32(len(b))
	if i+1 < s.n {
		if next := s.rows[(s.head+i+1)%len(s.rows)]; next.block == r.block {
			end = next.offset()
		}
	}
	return b[r.offset():end]
}

// at returns the i-th row, 0 being the oldest. Its cells are valid until
// the next call of at: a caller that keeps them copies them.
func (s *scrollback) at(i int) row {
	s.dec = s.unpack(s.dec[:0], s.bytesOf(i))
	return row{cells: s.dec, wrapped: s.rows[(s.head+i)%len(s.rows)].wrapped()}
}

func (s *scrollback) push(r row) {
	s.total++
	if s.max == 0 {
		return
	}
	n := len(r.cells)
	for n > 0 && r.cells[n-1].blank() {
		n--
	}
	s.enc = s.pack(s.enc[:0], r.cells[:n])
	sp := s.store(s.enc, r.wrapped)
	switch {
	case s.n < len(s.rows):
		s.rows[(s.head+s.n)%len(s.rows)] = sp
		s.n++
	case s.n < s.max:
		// Grow; the ring is contiguous from head==0 while growing.
		s.rows = append(s.rows, sp)
		s.n++
	default:
		s.rows[s.head] = sp
		s.head = (s.head + 1) % len(s.rows)
		s.release()
	}
}

// store appends a row's packed runs to the newest block.
func (s *scrollback) store(p []byte, wrapped bool) span {
	last := len(s.blocks) - 1
	if last < 0 || len(s.blocks[last])+len(p) > cap(s.blocks[last]) {
		s.blocks = append(s.blocks, make([]byte, 0, max(blockSize, len(p))))
		last++
	}
	b := s.blocks[last]
	sp := span{block: s.block0 + uint32(last), off: uint32(len(b))}
	if wrapped {
		sp.off |= spanWrapped
	}
	s.blocks[last] = append(b, p...)
	return sp
}

// release lets go of the blocks before the oldest row's.
func (s *scrollback) release() {
	if s.n == 0 {
		return
	}
	oldest := s.rows[s.head].block
	for s.block0 < oldest && len(s.blocks) > 1 {
		s.blocks[0] = nil
		s.blocks = s.blocks[1:]
		s.block0++
	}
}

// pop removes and returns the newest row (used when the screen grows), in
// storage of its own.
func (s *scrollback) pop() row {
	if s.n == 0 {
		return row{}
	}
	i := (s.head + s.n - 1) % len(s.rows)
	r := s.rows[i]
	out := row{cells: s.unpack(nil, s.bytesOf(s.n-1)), wrapped: r.wrapped()}
	// The newest row ends its block: the block ends where it started.
	k := r.block - s.block0
	s.blocks[k] = s.blocks[k][:r.offset()]
	s.rows[i] = span{}
	s.n--
	if s.total > 0 {
		s.total--
	}
	return out
}

func (s *scrollback) clear() {
	s.rows = nil
	s.head, s.n = 0, 0
	s.blocks, s.block0 = nil, 0
	s.styles, s.styleIx = nil, nil
	s.enc, s.dec = nil, nil
}

// pack appends cells as runs. A run is a header, uvarint(style<<1 |
// cluster), then for a plain run uvarint(count) and count runes in UTF-8
// (a never-written cell is rune 0), or for a cluster cell
// uvarint(cluster) and its rune.
func (s *scrollback) pack(b []byte, cells []Cell) []byte {
	for i := 0; i < len(cells); {
		c := cells[i]
		st := s.styleOf(c)
		if c.comb != 0 {
			b = binary.AppendUvarint(b, uint64(st)<<1|1)
			b = binary.AppendUvarint(b, uint64(c.comb))
			b = utf8.AppendRune(b, c.Rune)
			i++
			continue
		}
		j := i + 1
		for j < len(cells) && cells[j].comb == 0 && cells[j].Fg == c.Fg && cells[j].Bg == c.Bg && cells[j].Attr == c.Attr {
			j++
		}
		b = binary.AppendUvarint(b, uint64(st)<<1)
		b = binary.AppendUvarint(b, uint64(j-i))
		for _, x := range cells[i:j] {
			if x.Rune < utf8.RuneSelf && x.Rune >= 0 {
				b = append(b, byte(x.Rune))
			} else {
				b = utf8.AppendRune(b, x.Rune)
			}
		}
		i = j
	}
	return b
}

// unpack appends the cells of a packed row.
func (s *scrollback) unpack(cells []Cell, b []byte) []Cell {
	for len(b) > 0 {
		h, k := binary.Uvarint(b)
		if k <= 0 {
			return cells
		}
		b = b[k:]
		var st style
		if int(h>>1) < len(s.styles) {
			st = s.styles[h>>1]
		}
		if h&1 != 0 {
			comb, k := binary.Uvarint(b)
			if k <= 0 {
				return cells
			}
			r, size := utf8.DecodeRune(b[k:])
			b = b[k+size:]
			cells = append(cells, Cell{Rune: r, Fg: st.fg, Bg: st.bg, Attr: st.attr, comb: uint16(comb)})
			continue
		}
		n, k := binary.Uvarint(b)
		if k <= 0 {
			return cells
		}
		b = b[k:]
		c := Cell{Fg: st.fg, Bg: st.bg, Attr: st.attr}
		for ; n > 0 && len(b) > 0; n-- {
			if b[0] < utf8.RuneSelf {
				c.Rune = rune(b[0])
				b = b[1:]
			} else {
				r, size := utf8.DecodeRune(b)
				c.Rune = r
				b = b[size:]
			}
			cells = append(cells, c)
		}
	}
	return cells
}

// styleOf is c's style's index, added to the table when new.
func (s *scrollback) styleOf(c Cell) uint32 {
	st := style{c.Fg, c.Bg, c.Attr}
	if len(s.styles) > 0 && s.styles[len(s.styles)-1] == st {
		return uint32(len(s.styles) - 1)
	}
	if i, ok := s.styleIx[st]; ok {
		return i
	}
	if s.styleIx == nil {
		s.styleIx = map[style]uint32{}
	}
	i := uint32(len(s.styles))
	s.styles = append(s.styles, st)
	s.styleIx[st] = i
	return i
}

// export packs the whole history for load in another process: the row
// count ever pushed, the style table, the cluster table, then each row
// (wrapped flag, length, packed runs).
func (s *scrollback) export(clusters []string) []byte {
	n := 0
	for i := range s.n {
		n += len(s.bytesOf(i)) + 4
	}
	b := make([]byte, 0, n+len(s.styles)*8+64)
	b = binary.AppendUvarint(b, s.total)
	b = binary.AppendUvarint(b, uint64(len(s.styles)))
	for _, st := range s.styles {
		b = binary.AppendUvarint(b, uint64(st.fg))
		b = binary.AppendUvarint(b, uint64(st.bg))
		b = binary.AppendUvarint(b, uint64(st.attr))
	}
	b = binary.AppendUvarint(b, uint64(len(clusters)))
	for _, c := range clusters {
		b = binary.AppendUvarint(b, uint64(len(c)))
		b = append(b, c...)
	}
	b = binary.AppendUvarint(b, uint64(s.n))
	for i := range s.n {
		w := byte(0)
		if s.rows[(s.head+i)%len(s.rows)].wrapped() {
			w = 1
		}
		p := s.bytesOf(i)
		b = append(b, w)
		b = binary.AppendUvarint(b, uint64(len(p)))
		b = append(b, p...)
	}
	return b
}

var errBadHistory = errors.New("a malformed history: the peer does not speak this protocol")

// load replaces the history with one export made. Rows without clusters
// are taken as they are (styles keep their indexes when this history had
// none); cluster cells are interned here, their rows packed again.
func (s *scrollback) load(b []byte, intern func(string) uint16) error {
	r := reader{b: b}
	total := r.uvarint()
	var styles []style
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		styles = append(styles, style{Color(r.uvarint()), Color(r.uvarint()), Attr(r.uvarint())})
	}
	var clusters []string
	for n := r.uvarint(); n > 0 && r.err == nil; n-- {
		clusters = append(clusters, string(r.bytes(int(r.uvarint()))))
	}
	rows := int(r.uvarint())
	if r.err != nil || rows > len(b) {
		return errBadHistory
	}
	// Built aside, so a malformed history leaves this one as it was.
	keep := min(rows, s.max)
	ns := scrollback{max: s.max, rows: make([]span, 0, keep), enc: s.enc, dec: s.dec}
	ns.styles, ns.styleIx = styles, make(map[style]uint32, len(styles))
	for i, st := range styles {
		if _, ok := ns.styleIx[st]; !ok {
			ns.styleIx[st] = uint32(i)
		}
	}
	for i := range rows {
		w := r.bytes(1)
		p := r.bytes(int(r.uvarint()))
		if r.err != nil {
			return errBadHistory
		}
		if i < rows-keep {
			continue
		}
		if len(clusters) > 0 {
			cells := ns.unpack(ns.dec[:0], p)
			ns.dec = cells
			repacked := false
			for j, c := range cells {
				if c.comb != 0 {
					ix := uint16(0)
					if int(c.comb) <= len(clusters) {
						ix = intern(clusters[c.comb-1])
					}
					cells[j].comb = ix
					repacked = true
				}
			}
			if repacked {
				p = ns.pack(ns.enc[:0], cells)
				ns.enc = p
			}
		}
		sp := ns.store(p, w[0] == 1)
		ns.rows = append(ns.rows, sp)
		ns.n++
	}
	ns.total = total
	*s = ns
	return nil
}

// reader reads an export, remembering the first error.
type reader struct {
	b   []byte
	off int
	err error
}

func (r *reader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, k := binary.Uvarint(r.b[r.off:])
	if k <= 0 {
		r.err = errBadHistory
		return 0
	}
	r.off += k
	return v
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b)-r.off {
		r.err = errBadHistory
		return nil
	}
	p := r.b[r.off : r.off+n]
	r.off += n
	return p
}

// internCluster is the cluster table's index of g (1-based), added when
// new; 0 when the table is full.
func (e *Emulator) internCluster(g string) uint16 {
	if ix, ok := e.clusterIx[g]; ok {
		return ix
	}
	if len(e.clusters) >= 0xfffe {
		return 0
	}
	if e.clusterIx == nil {
		e.clusterIx = make(map[string]uint16)
	}
	e.clusters = append(e.clusters, g)
	ix := uint16(len(e.clusters))
	e.clusterIx[g] = ix
	return ix
}
