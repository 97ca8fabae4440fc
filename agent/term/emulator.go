package term

import (
	"io"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"
)

// DefaultScrollback is the number of main-screen lines kept when no
// WithScrollback option is given.
const DefaultScrollback = 10000

// SyncTimeout bounds how long synchronized output (mode 2026) may hold back
// drawing, so a child that dies mid-frame cannot freeze its tile.
const SyncTimeout = 300 * time.Millisecond

// maxString caps the OSC/DCS payload kept; longer strings are consumed and
// dropped so a runaway sequence cannot grow memory.
const maxString = 4096

// Option configures an Emulator.
type Option func(*Emulator)

// WithScrollback sets how many lines scrolled off the main screen are kept.
func WithScrollback(lines int) Option {
	return func(e *Emulator) {
		if lines < 0 {
			lines = 0
		}
		e.sb.max = lines
	}
}

// WithReplies sets where answers to the child's queries (DA1, DSR, DECRQM,
// XTVERSION) go; normally the PTY. They are written after the emulator lock
// is released, on the goroutine that called Write. Without it they are
// dropped.
func WithReplies(w io.Writer) Option {
	return func(e *Emulator) { e.replyTo = w }
}

// Emulator is a terminal screen model: it consumes the child's output bytes
// and keeps the cells, cursor, modes, title and scrollback. It is safe for
// concurrent use: one goroutine writes, others read snapshots and text.
type Emulator struct {
	mu sync.Mutex

	p      *vtParser
	dirty  atomic.Bool
	notify atomic.Pointer[func()] // see OnDirty

	w, h int
	main screen
	alt  screen
	cur  *screen // main or alt
	sb   scrollback

	cx, cy   int
	wrapNext bool // pending wrap: the last column was written
	pen      Cell // current attributes; Rune unused
	saved    savedCursor
	altSaved savedCursor

	top, bot int // scroll region, inclusive

	tabs []bool

	modes     modes
	charsets  [2]bool // G0, G1 designated as DEC special graphics
	shiftOut  bool    // SO: G1 is active
	lastRune  rune    // for REP
	clusters  []string
	clusterIx map[string]uint16

	title       string
	titleStack  []string
	cursorStyle int

	syncSince time.Time // when mode 2026 was set

	// The TextSince reader: the mark it was last handed (readNext), and,
	// once a reflow has re-cut the history since, the row it reads from
	// instead (readFloor): the first row holding text it had not read.
	// Reflowed history is not new text; without this a resize made the
	// reader read the whole history again.
	readNext  uint64
	readFloor uint64
	readValid bool
	floorSet  bool

	// input filter state; persists across writes so any chunking of the
	// stream gives the same result.
	fstate  filterState
	strKind byte // ']' OSC, 'P' DCS, other: ignored string
	strBuf  []byte
	u8      [4]byte
	u8n     int
	u8need  int

	replies []byte
	replyTo io.Writer
	replyMu sync.Mutex

	// gen counts snapshots taken; a change is marked with it, on its row
	// or in fullGen (changed.go).
	gen, fullGen uint64

	taps           []*Tap // see Attach
	waiting        []*waitingTap
	wantHistory    func() // see OnWantHistory
	historyPending bool   // wanted, not loaded yet
}

type filterState uint8

const (
	fGround    filterState = iota
	fEsc                   // saw ESC, not yet passed to the parser
	fString                // inside OSC/DCS/SOS/PM/APC
	fStringEsc             // ESC inside a string: maybe ST
)

type savedCursor struct {
	x, y     int
	wrapNext bool
	pen      Cell
	origin   bool
	charsets [2]bool
	shiftOut bool
	valid    bool
}

type modes struct {
	insert       bool // IRM
	newline      bool // LNM
	origin       bool // DECOM
	autowrap     bool // DECAWM
	cursorHidden bool // DECTCEM reset
	appCursor    bool // DECCKM
	appKeypad    bool // DECKPAM
	bracketed    bool // 2004
	focus        bool // 1004
	mouse        MouseMode
	mouseSGR     bool // 1006
	sync         bool // 2026
	altScreen    bool
	reverse      bool // DECSCNM
	modifyOther  int  // XTMODKEYS resource 4
	cursorBlink  bool // 12
}

// New returns an emulator of w columns and h rows.
func New(w, h int, opts ...Option) *Emulator {
	if w < 1 {
		w = 1
	}
	if h < 1 {
		h = 1
	}
	e := &Emulator{w: w, h: h, gen: 1}
	e.sb.max = DefaultScrollback
	for _, o := range opts {
		o(e)
	}
	e.p = newVTParser(vtHandler{
		Print:     e.print,
		Execute:   e.execute,
		HandleCsi: e.csi,
		HandleEsc: e.esc,
	}, 256) // strings never reach it; see filter
	e.main.init(w, h)
	// The alternate screen is made on the first switch to it: most
	// agents never use one, and an engine holds an emulator per agent.
	e.cur = &e.main
	e.reset()
	return e
}

// reset puts everything but the size and scrollback back to power-on state.
func (e *Emulator) reset() {
	e.markAll()
	e.cur = &e.main
	e.main.clear(Cell{})
	e.alt.clear(Cell{})
	e.cx, e.cy, e.wrapNext = 0, 0, false
	e.pen = Cell{}
	e.saved, e.altSaved = savedCursor{}, savedCursor{}
	e.top, e.bot = 0, e.h-1
	e.modes = modes{autowrap: true}
	e.charsets = [2]bool{}
	e.shiftOut = false
	e.title = ""
	e.titleStack = nil
	e.cursorStyle = 0
	e.resetTabs()
}

func (e *Emulator) resetTabs() {
	e.tabs = make([]bool, e.w)
	for i := 8; i < e.w; i += 8 {
		e.tabs[i] = true
	}
}

// Write feeds output of the child. It never fails and always consumes all of
// p, so it can sit behind a plain io.Copy.
func (e *Emulator) Write(p []byte) (int, error) {
	e.mu.Lock()
	e.feed(p)
	for _, t := range e.taps {
		t.Output(p)
	}
	for len(e.waiting) > 0 && e.atRest() {
		e.startTap(e.waiting[0]) // its state holds p
	}
	var reply []byte
	if len(e.replies) > 0 {
		reply = append(reply, e.replies...)
		e.replies = e.replies[:0]
	}
	e.mu.Unlock()
	if len(p) > 0 {
		e.setDirty()
	}
	if reply != nil && e.replyTo != nil {
		// Serialised so that two writers cannot interleave answers.
		e.replyMu.Lock()
		_, _ = e.replyTo.Write(reply)
		e.replyMu.Unlock()
	}
	return len(p), nil
}

// feed runs the input filter. It keeps OSC, DCS and the other string
// sequences away from the parser (whose ST detection trips on a 0x9C byte
// inside UTF-8 text, charmbracelet/x#848), decodes UTF-8 itself, and prints
// runs of ASCII without a call per byte.
func (e *Emulator) feed(p []byte) {
	for i := 0; i < len(p); {
		b := p[i]
		switch e.fstate {
		case fEsc:
			switch b {
			case ']', 'P', 'X', '^', '_':
				// An ESC cancels whatever the parser was in the middle of.
				e.p.Reset()
				e.fstate = fString
				e.strKind = b
				e.strBuf = e.strBuf[:0]
				i++
				continue
			}
			e.fstate = fGround
			e.p.Advance(0x1b)
			if b == 0x1b {
				e.fstate = fEsc
				i++
				continue
			}
			e.p.Advance(b)
			i++
			continue
		case fString:
			switch b {
			case 0x07:
				e.endString()
				e.fstate = fGround
			case 0x1b:
				e.fstate = fStringEsc
			case 0x18, 0x1a: // CAN, SUB abort the string
				e.fstate = fGround
			default:
				if len(e.strBuf) < maxString {
					e.strBuf = append(e.strBuf, b)
				}
			}
			i++
			continue
		case fStringEsc:
			e.endString()
			e.fstate = fGround
			if b == '\\' {
				i++
				continue
			}
			// Any other ESC sequence ends the string and starts afresh.
			e.fstate = fEsc
			continue
		}

		// fGround: the parser may still be inside a CSI or ESC sequence.
		if b == 0x1b {
			e.flushUTF8()
			e.fstate = fEsc
			i++
			continue
		}
		if e.p.State() != stGround {
			if b < 0x80 {
				e.p.Advance(b)
			}
			// High bytes inside a control sequence are not part of it.
			i++
			continue
		}
		if b >= 0x80 {
			e.utf8Byte(b)
			i++
			continue
		}
		if e.u8need > 0 {
			e.flushUTF8()
		}
		if b >= 0x20 && b < 0x7f {
			j := i + 1
			for j < len(p) && p[j] >= 0x20 && p[j] < 0x7f {
				j++
			}
			e.printASCII(p[i:j])
			i = j
			continue
		}
		if b < 0x20 {
			e.execute(b)
		}
		i++ // DEL is ignored
	}
}

// utf8Byte collects one byte of a multi-byte character. Malformed input
// is dropped rather than shown, as terminals in UTF-8 mode do not treat
// lone 0x80–0x9F bytes as C1 controls.
func (e *Emulator) utf8Byte(b byte) {
	if e.u8need == 0 {
		switch {
		case b >= 0xc2 && b <= 0xdf:
			e.u8need = 2
		case b >= 0xe0 && b <= 0xef:
			e.u8need = 3
		case b >= 0xf0 && b <= 0xf4:
			e.u8need = 4
		default:
			return
		}
		e.u8[0] = b
		e.u8n = 1
		return
	}
	if b < 0x80 || b > 0xbf {
		e.flushUTF8()
		e.utf8Byte(b)
		return
	}
	e.u8[e.u8n] = b
	e.u8n++
	if e.u8n < e.u8need {
		return
	}
	r, size := utf8.DecodeRune(e.u8[:e.u8n])
	e.u8n, e.u8need = 0, 0
	if r == utf8.RuneError && size <= 1 {
		return
	}
	e.print(r)
}

// flushUTF8 drops an incomplete character interrupted by another byte.
func (e *Emulator) flushUTF8() {
	e.u8n, e.u8need = 0, 0
}

// endString acts on a finished OSC or DCS string.
func (e *Emulator) endString() {
	switch e.strKind {
	case ']':
		e.osc(e.strBuf)
	case 'P':
		e.dcs(e.strBuf)
	}
}

// Resize changes the screen size. Call it before resizing the PTY so that
// the redraw the child sends in answer lands on a grid of the new size.
func (e *Emulator) Resize(w, h int) {
	if w < 1 {
		w = 1
	}
	if h < 1 {
		h = 1
	}
	e.mu.Lock()
	if w == e.w && h == e.h {
		e.mu.Unlock()
		return
	}
	e.resize(w, h)
	e.markAll()
	for _, t := range e.taps {
		t.Resize(w, h)
	}
	e.mu.Unlock()
	e.setDirty()
}

// Size returns the columns and rows.
func (e *Emulator) Size() (w, h int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.w, e.h
}

// Dirty reports whether the screen changed since the last TakeDirty.
func (e *Emulator) Dirty() bool { return e.dirty.Load() }

// TakeDirty reports whether the screen changed and clears the flag; a
// frame ticker calls it to decide whether to redraw.
func (e *Emulator) TakeDirty() bool { return e.dirty.Swap(false) }

// MarkDirty forces the next TakeDirty to report a change.
func (e *Emulator) MarkDirty() { e.setDirty() }

// OnDirty sets fn to be called whenever the screen goes from clean to
// dirty, so a renderer can sleep until there is something to draw rather
// than poll TakeDirty: after a TakeDirty the next change calls fn again.
// fn runs on the goroutine that made the change (the PTY reader, or a
// renderer calling Resize or MarkDirty), outside the emulator's lock, so
// it must be quick and never block. If the screen is already dirty, fn is
// called at once: no change would announce it. nil removes it.
func (e *Emulator) OnDirty(fn func()) {
	if fn == nil {
		e.notify.Store(nil)
		return
	}
	e.notify.Store(&fn)
	if e.dirty.Load() {
		fn()
	}
}

// setDirty marks the screen changed and tells the OnDirty func when it
// was clean until now.
func (e *Emulator) setDirty() {
	if !e.dirty.Swap(true) {
		if fn := e.notify.Load(); fn != nil {
			(*fn)()
		}
	}
}

// Title returns the last OSC 0/2 window title.
func (e *Emulator) Title() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.title
}

// Cursor returns the cursor position and whether the child wants it shown.
func (e *Emulator) Cursor() (x, y int, visible bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cx, e.cy, !e.modes.cursorHidden
}

// AltScreen reports whether the alternate screen is active.
func (e *Emulator) AltScreen() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cur == &e.alt
}

// SyncHeld reports whether the child is in the middle of a synchronized
// update (mode 2026) begun less than SyncTimeout before now; a renderer
// keeps showing the previous frame while it is.
func (e *Emulator) SyncHeld(now time.Time) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.modes.sync && now.Sub(e.syncSince) < SyncTimeout
}

func (e *Emulator) reply(s ...string) {
	for _, x := range s {
		e.replies = append(e.replies, x...)
	}
}

var now = time.Now

// Reset returns the emulator to its state after New, keeping its size.
func (e *Emulator) Reset() {
	e.mu.Lock()
	e.reset()
	e.sb.clear()
	e.sb.total = 0
	e.clusters, e.clusterIx = nil, nil
	e.p.Reset()
	e.fstate = fGround
	e.flushUTF8()
	e.replies = e.replies[:0]
	e.mu.Unlock()
	e.setDirty()
}
