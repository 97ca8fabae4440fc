package term

// scrollback is a ring of the rows that scrolled off the top of the main
// screen, oldest first. Rows are stored without their trailing blank cells,
// and an evicted row's storage is reused, so a full scrollback stops
// allocating.
type scrollback struct {
	rows  []row
	head  int // index of the oldest row once the ring is full
	n     int
	max   int
	total uint64 // rows ever pushed, for incremental text extraction
}

func (s *scrollback) len() int { return s.n }

// at returns the i-th row, 0 being the oldest.
func (s *scrollback) at(i int) *row {
	return &s.rows[(s.head+i)%len(s.rows)]
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
	var dst *row
	if s.n < s.max {
		if s.n < len(s.rows) {
			dst = &s.rows[(s.head+s.n)%len(s.rows)]
		} else {
			// Grow; the ring is contiguous from head==0 while growing.
			s.rows = append(s.rows, row{})
			dst = &s.rows[len(s.rows)-1]
		}
		s.n++
	} else {
		dst = &s.rows[s.head]
		s.head = (s.head + 1) % len(s.rows)
	}
	if cap(dst.cells) >= n {
		dst.cells = dst.cells[:n]
	} else {
		// Rounded up so that a row evicted later can usually take the
		// next one without a new allocation.
		dst.cells = make([]Cell, n, (n+15)&^15)
	}
	copy(dst.cells, r.cells[:n])
	dst.wrapped = r.wrapped
}

// pop removes and returns the newest row (used when the screen grows).
func (s *scrollback) pop() row {
	if s.n == 0 {
		return row{}
	}
	i := (s.head + s.n - 1) % len(s.rows)
	r := s.rows[i]
	s.rows[i] = row{}
	s.n--
	if s.total > 0 {
		s.total--
	}
	return r
}

func (s *scrollback) clear() {
	s.rows = nil
	s.head, s.n = 0, 0
}
