package host

import (
	"os"
	"sync/atomic"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
)

// tailCap bounds the raw output a host keeps after its last checkpoint;
// past it the host parses the tail itself (an engine that sends no
// checkpoints), up to where the engine said it has read, so every resize
// of the engine's is known before the host parses past it; past
// 4×tailCap it parses all. The tail holds the same chunks as the
// engine's outbox (up to outboxCap) until they are checkpointed, so it
// is above that: an engine reading a flood behind the host does not make
// the host parse. Options.tailCap sets another for tests.
const defaultTailCap = outboxCap + 4*defaultCkBytes

// mirror is the host's copy of its agent's terminal, kept cheaply. While
// an engine is connected the host parses nothing: the engine's emulator
// parses the output, and sends its state now and then as a checkpoint at
// an offset of the output stream. The host keeps the last checkpoint and
// the raw output after it, with the resizes among it at their offsets,
// and builds an emulator from them only when it needs a screen: an engine
// connecting, a snapshot, no engine (then it parses output as it comes and
// answers the agent's terminal queries), or a tail past tailCap. Caller
// serialises all calls.
type mirror struct {
	scrollback int
	rep        *replies
	tailCap    int64

	emu      *term.Emulator // the base as an emulator; nil: ck and ckHist, or an empty ckW×ckH
	ckW, ckH int
	ck       *term.Parts // the engine's last checkpoint
	ckHist   []byte      // its history, packed …
	ckFile   string      // … or in this file (see ckFile)
	base     int64       // the stream offset the base is at
	tail     [][]byte    // output after base: the agent's chunks, not copied
	tailLen  int64
	marks    []mark // resizes within tail, in order
	ckSeq    uint64 // the engine's resizes the base holds
	maxSeq   uint64 // the last of the engine's resizes received
	tracked  bool   // the engine says where it has read to (position)
	safeAt   int64  // the engine had read to here …
	safeSeq  uint64 // … after this many resizes
	live     bool   // no engine: output is parsed as it comes
	// remote: the engine reads the terminal itself (it holds its
	// descriptor); the output reaches the host only through the log,
	// which from byte logOff on holds the stream from offset logAt
	// (logOff -1: no log to read).
	remote  bool
	logPath string
	logOff  int64
	logAt   int64
}

// mark is a resize at a stream offset; seq numbers one engine's resizes,
// so a checkpoint says which of them it already holds.
type mark struct {
	at   int64
	seq  uint64
	w, h int
}

func newMirror(w, h, scrollback int, rep *replies, tailCap int64) *mirror {
	return &mirror{scrollback: scrollback, rep: rep, tailCap: tailCap, ckW: w, ckH: h}
}

// off is the stream offset of the output's end.
func (m *mirror) off() int64 { return m.base + m.tailLen }

// consume takes the tail's bytes up to offset upto off it, handing them
// to fn (nil: dropped).
func (m *mirror) consume(upto int64, fn func([]byte)) {
	for m.base < upto && len(m.tail) > 0 {
		c := m.tail[0]
		n := min(int64(len(c)), upto-m.base)
		if fn != nil {
			fn(c[:n])
		}
		if n == int64(len(c)) {
			m.tail[0] = nil
			m.tail = m.tail[1:]
		} else {
			m.tail[0] = c[n:]
		}
		m.base += n
		m.tailLen -= n
	}
	if len(m.tail) == 0 {
		m.tail = nil
	}
}

// write takes output the agent wrote (and the engine, if one is
// connected, was sent); p is kept, not copied, and must not change.
func (m *mirror) write(p []byte) {
	if m.live {
		_, _ = m.emu.Write(p)
		m.base += int64(len(p))
		return
	}
	m.tail = append(m.tail, p)
	m.tailLen += int64(len(p))
	if m.tailLen <= m.tailCap {
		return
	}
	switch {
	case !m.tracked || m.tailLen > 4*m.tailCap:
		m.parseTo(m.off(), ^uint64(0))
	case m.safeAt > m.base && m.maxSeq >= m.safeSeq:
		m.parseTo(m.safeAt, m.safeSeq)
	}
}

// handOff says the engine reads the terminal itself from the output's
// end on, appending what it reads to the log at logPath from byte logOff
// (-1: there is none to read).
func (m *mirror) handOff(logPath string, logOff int64) {
	m.remote, m.logPath, m.logOff, m.logAt = true, logPath, logOff, m.off()
}

// catchUp takes what the engine read and logged after the output's end
// (as the host knows it) into the tail, once the engine is gone: while it
// reads, its emulator may be behind its log, and a resize it takes after
// must not find the host's screen past it (so a snapshot meanwhile is the
// engine's last checkpoint). The log is read up to its cap only: past it
// the engine logs nothing, and the cap's note is not output.
func (m *mirror) catchUp() {
	if !m.remote || m.logOff < 0 {
		return
	}
	from := m.logOff + m.off() - m.logAt
	f, err := os.Open(m.logPath)
	if err != nil {
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return
	}
	end := min(st.Size(), ptyproc.DefaultLogCap)
	if end <= from {
		return
	}
	b := make([]byte, end-from)
	n, _ := f.ReadAt(b, from)
	if n > 0 {
		m.write(b[:n])
	}
}

// takeBack ends the engine's reading (handOff): what it logged is taken
// in, and resizes it took after that apply at the end.
func (m *mirror) takeBack() {
	if !m.remote {
		return
	}
	m.catchUp()
	m.remote = false
	if len(m.marks) > 0 {
		e := m.screen()
		for _, mk := range m.marks {
			e.Resize(mk.w, mk.h)
		}
		m.marks = nil
	}
}

// position is where the engine's emulator has read to: offset at, after
// seq resizes.
func (m *mirror) position(at int64, seq uint64) {
	if !m.live && at > m.safeAt && at <= m.off() {
		m.tracked, m.safeAt, m.safeSeq = true, at, seq
	}
}

// screen parses the tail into the base emulator (built from the
// checkpoint first if need be) and returns it, at the output's end.
// Queries in what it parses here were answered by the engine that saw
// them: it does not answer again.
func (m *mirror) screen() *term.Emulator { return m.parseTo(m.off(), ^uint64(0)) }

// parseTo parses the tail up to offset limit, with the resizes before it
// (at limit: those numbered up to seq).
func (m *mirror) parseTo(limit int64, seq uint64) *term.Emulator {
	m.rep.on.Store(false)
	defer m.rep.on.Store(m.live)
	if m.emu == nil && m.ck != nil {
		m.emu = term.FromParts(*m.ck, term.WithReplies(m.rep))
		hist := m.ckHist
		if m.ckFile != "" {
			// Unreadable: the screen stands without its history.
			hist, _ = os.ReadFile(m.ckFile)
		}
		_ = m.emu.LoadHistory(hist)
		m.ck, m.ckHist, m.ckFile = nil, nil, ""
	} else if m.emu == nil {
		m.emu = term.New(m.ckW, m.ckH, term.WithScrollback(m.scrollback), term.WithReplies(m.rep))
	}
	write := func(p []byte) { _, _ = m.emu.Write(p) }
	i := 0
	for ; i < len(m.marks); i++ {
		mk := m.marks[i]
		if mk.at > limit || mk.at == limit && mk.seq > seq {
			break
		}
		m.consume(mk.at, write)
		m.emu.Resize(mk.w, mk.h)
	}
	m.marks = m.marks[i:]
	m.consume(limit, write)
	return m.emu
}

// fresh reports whether nothing was written yet: the screen is empty and
// no emulator need be built to say so.
func (m *mirror) fresh() bool { return m.emu == nil && m.ck == nil && m.off() == 0 }

// state is the screen's size and the bytes that rebuild it (none for a
// fresh one), at the output's end.
func (m *mirror) state() (w, h int, st []byte) {
	if m.fresh() {
		return m.ckW, m.ckH, nil
	}
	return m.screen().State()
}

// atRest reports whether the output so far ends between two sequences.
func (m *mirror) atRest() bool { return m.fresh() || m.screen().AtRest() }

// setLive switches between parsing as output comes (no engine) and
// keeping the raw tail (an engine parses).
func (m *mirror) setLive(on bool) {
	if on || !m.fresh() {
		m.screen()
	}
	// A new engine numbers its resizes anew.
	m.live, m.ckSeq, m.maxSeq, m.tracked, m.safeAt, m.safeSeq = on, 0, 0, false, -1, 0
	m.rep.on.Store(on)
}

// resize records the engine's resize at offset at (its emulator's, when
// it tracks one; -1: now) and seq.
func (m *mirror) resize(w, h int, at int64, seq uint64) {
	m.maxSeq = max(m.maxSeq, seq)
	if seq > 0 && seq <= m.ckSeq {
		return // a checkpoint sent before this frame holds it already
	}
	if at < 0 || at > m.off() && !m.remote {
		// Beyond what the host has seen is where a remote engine is.
		at = m.off()
	}
	if n := len(m.marks); n > 0 && at < m.marks[n-1].at {
		at = m.marks[n-1].at
	}
	if m.live || at < m.base {
		// Already parsed past it (a tail that overflowed): as near as
		// can be, now.
		m.screen().Resize(w, h)
		return
	}
	m.marks = append(m.marks, mark{at: at, seq: seq, w: w, h: h})
}

// checkpoint takes the engine's emulator state at stream offset at,
// holding the engine's resizes up to seq. One the host has parsed past,
// or from beyond the output's end, is ignored.
func (m *mirror) checkpoint(at int64, seq uint64, p term.Parts, hist []byte) bool {
	if !m.accepts(at, p) {
		return false
	}
	m.take(at, seq, p)
	m.ckHist = hist
	return true
}

// accepts reports whether checkpoint would take a checkpoint at at.
func (m *mirror) accepts(at int64, p term.Parts) bool {
	return !m.live && at >= m.base && (at <= m.off() || m.remote) && p.W >= 2 && p.H >= 2
}

// checkpointFile is checkpoint with the history in file (see ckFile);
// the caller checked accepts.
func (m *mirror) checkpointFile(at int64, seq uint64, p term.Parts, file string) {
	m.take(at, seq, p)
	m.ckFile = file
}

func (m *mirror) take(at int64, seq uint64, p term.Parts) {
	keep := m.marks[:0]
	for _, mk := range m.marks {
		if mk.seq > seq {
			keep = append(keep, mk)
		}
	}
	m.marks = keep
	m.consume(at, nil)
	if at > m.base {
		// A remote engine read past what the host caught up with.
		m.tail, m.tailLen, m.base = nil, 0, at
	}
	m.ckSeq = seq
	m.position(at, seq)
	m.emu, m.ck, m.ckHist, m.ckFile = nil, &p, nil, ""
}

// replies hands the host emulator's answers to a goroutine that writes
// them to the agent, only while no engine is connected (an engine's own
// emulator answers otherwise): an agent that does not read its input must
// not stall its output (the emulator writes replies under its lock). Past
// 64 waiting answers, more are dropped.
type replies struct {
	ch chan []byte
	on atomic.Bool
}

func newReplies() *replies { return &replies{ch: make(chan []byte, 64)} }

func (r *replies) Write(b []byte) (int, error) {
	if !r.on.Load() {
		return len(b), nil
	}
	select {
	case r.ch <- append([]byte(nil), b...):
	default:
	}
	return len(b), nil
}

func (r *replies) run(p *ptyproc.Proc) {
	for {
		select {
		case b := <-r.ch:
			if _, err := p.Write(b); err != nil {
				return
			}
		case <-p.Done():
			return
		}
	}
}
