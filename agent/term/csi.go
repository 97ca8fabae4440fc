package term

import "strconv"

// Version is reported to XTVERSION queries.
const Version = "chorus-term(1)"

// param returns parameter i clamped to a sane range, def when missing.
func param(p seqParams, i, def int) int {
	v, _, ok := p.Param(i, def)
	if !ok {
		return def
	}
	if v > 0xffff {
		v = 0xffff
	}
	return v
}

// count returns parameter i for a count, where 0 and missing mean 1.
func count(p seqParams, i int) int {
	v := param(p, i, 1)
	if v < 1 {
		v = 1
	}
	return v
}

// execute handles C0 controls.
func (e *Emulator) execute(b byte) {
	switch b {
	case 0x08: // BS
		if e.cx > 0 {
			if e.wrapNext {
				// xterm leaves the cursor on the last column and just
				// cancels the pending wrap.
				e.wrapNext = false
			} else {
				e.cx--
			}
		}
		e.wrapNext = false
	case 0x09: // HT
		e.tab(1)
	case 0x0a, 0x0b, 0x0c: // LF, VT, FF
		e.lineFeed()
		if e.modes.newline {
			e.cx = 0
		}
	case 0x0d: // CR
		e.cx = 0
		e.wrapNext = false
	case 0x0e: // SO
		e.shiftOut = true
	case 0x0f: // SI
		e.shiftOut = false
	}
}

func (e *Emulator) tab(n int) {
	for ; n > 0 && e.cx < e.w-1; n-- {
		e.cx++
		for e.cx < e.w-1 && !e.tabs[e.cx] {
			e.cx++
		}
	}
	e.wrapNext = false
}

func (e *Emulator) backTab(n int) {
	for ; n > 0 && e.cx > 0; n-- {
		e.cx--
		for e.cx > 0 && !e.tabs[e.cx] {
			e.cx--
		}
	}
	e.wrapNext = false
}

// esc handles ESC sequences other than the string introducers.
func (e *Emulator) esc(cmd seqCmd) {
	inter := cmd.Intermediate()
	final := cmd.Final()
	switch inter {
	case 0:
		switch final {
		case '7':
			e.saveCursor()
		case '8':
			e.restoreCursor()
		case 'D': // IND
			e.lineFeed()
		case 'E': // NEL
			e.lineFeed()
			e.cx = 0
		case 'H': // HTS
			e.tabs[e.cx] = true
		case 'M': // RI
			e.reverseIndex()
		case 'c': // RIS
			// Like tmux, keep what was on the main screen in the
			// scrollback rather than dropping it.
			if e.cur == &e.main {
				e.eraseDisplay(2)
			}
			e.reset()
		case '=':
			e.modes.appKeypad = true
		case '>':
			e.modes.appKeypad = false
		}
	case '(', ')':
		g := 0
		if inter == ')' {
			g = 1
		}
		e.charsets[g] = final == '0'
	case '#':
		if final == '8' { // DECALN
			e.markAll()
			for y := range e.cur.rows {
				for x := range e.cur.rows[y].cells {
					e.cur.rows[y].cells[x] = Cell{Rune: 'E'}
				}
				e.cur.rows[y].wrapped = false
			}
			e.top, e.bot = 0, e.h-1
			e.moveTo(0, 0, false)
		}
	}
}

// csi handles control sequences. Anything not listed is ignored without
// side effects: in particular the kitty keyboard queries (CSI ?u, >u, <u,
// =u) are not cursor restores.
func (e *Emulator) csi(cmd seqCmd, p seqParams) {
	prefix, inter, final := cmd.Prefix(), cmd.Intermediate(), cmd.Final()
	if prefix == '?' && inter == 0 {
		switch final {
		case 'h':
			e.setModes(p, true, true)
		case 'l':
			e.setModes(p, true, false)
		case 'n':
			if param(p, 0, 0) == 6 {
				e.reply("\x1b[?", strconv.Itoa(e.cy+1), ";", strconv.Itoa(e.cx+1), "R")
			}
		case 'J', 'K': // DECSED/DECSEL: no protected cells, so plain erase
			e.csi(seqCmd(final), p)
		}
		return
	}
	if prefix == '?' && inter == '$' && final == 'p' {
		e.decrqm(param(p, 0, 0), true)
		return
	}
	if prefix == '>' {
		switch {
		case final == 'c' && inter == 0: // DA2
			e.reply("\x1b[>1;10;0c")
		case final == 'q' && inter == 0: // XTVERSION
			e.reply("\x1bP>|", Version, "\x1b\\")
		case final == 'm' && inter == 0: // XTMODKEYS
			if param(p, 0, -1) == 4 {
				e.modes.modifyOther = param(p, 1, 0)
			} else if len(p) == 0 {
				e.modes.modifyOther = 0
			}
		case final == 'n' && inter == 0:
			if param(p, 0, -1) == 4 {
				e.modes.modifyOther = 0
			}
		}
		return
	}
	if prefix != 0 {
		return
	}
	switch inter {
	case '$':
		if final == 'p' {
			e.decrqm(param(p, 0, 0), false)
		}
		return
	case '!':
		if final == 'p' { // DECSTR
			e.softReset()
		}
		return
	case ' ':
		if final == 'q' { // DECSCUSR
			e.cursorStyle = param(p, 0, 0)
		}
		return
	case 0:
	default:
		return
	}

	switch final {
	case '@': // ICH
		e.wrapNext = false
		e.insertBlanks(count(p, 0))
	case 'A': // CUU
		e.cursorUp(count(p, 0))
	case 'B', 'e': // CUD, VPR
		e.cursorDown(count(p, 0))
	case 'C', 'a': // CUF, HPR
		e.cx = clamp(e.cx+count(p, 0), 0, e.w-1)
		e.wrapNext = false
	case 'D': // CUB
		e.cx = clamp(e.cx-count(p, 0), 0, e.w-1)
		e.wrapNext = false
	case 'E': // CNL
		e.cursorDown(count(p, 0))
		e.cx = 0
	case 'F': // CPL
		e.cursorUp(count(p, 0))
		e.cx = 0
	case 'G', '`': // CHA, HPA
		e.cx = clamp(count(p, 0)-1, 0, e.w-1)
		e.wrapNext = false
	case 'H', 'f': // CUP, HVP
		e.moveTo(count(p, 1)-1, count(p, 0)-1, true)
	case 'I': // CHT
		e.tab(count(p, 0))
	case 'J': // ED
		e.eraseDisplay(param(p, 0, 0))
	case 'K': // EL
		e.wrapNext = false
		switch param(p, 0, 0) {
		case 0:
			e.eraseCells(e.cy, e.cx, e.w)
		case 1:
			e.eraseCells(e.cy, 0, e.cx+1)
		case 2:
			e.eraseCells(e.cy, 0, e.w)
		}
	case 'L': // IL
		if e.cy >= e.top && e.cy <= e.bot {
			e.scrollDown(e.cy, e.bot, count(p, 0))
			e.cx, e.wrapNext = 0, false
		}
	case 'M': // DL
		if e.cy >= e.top && e.cy <= e.bot {
			e.scrollUpNoHistory(e.cy, e.bot, count(p, 0))
			e.cx, e.wrapNext = 0, false
		}
	case 'P': // DCH
		e.wrapNext = false
		e.deleteCells(count(p, 0))
	case 'S': // SU
		e.scrollUpNoHistory(e.top, e.bot, count(p, 0))
	case 'T': // SD; with more than one parameter it is a mouse-tracking request
		if len(p) <= 1 {
			e.scrollDown(e.top, e.bot, count(p, 0))
		}
	case 'X': // ECH
		e.wrapNext = false
		e.eraseCells(e.cy, e.cx, e.cx+count(p, 0))
	case 'Z': // CBT
		e.backTab(count(p, 0))
	case 'b': // REP
		if e.lastRune != 0 {
			n := min(count(p, 0), e.w*e.h)
			for i := 0; i < n; i++ {
				e.print(e.lastRune)
			}
		}
	case 'c': // DA1
		if param(p, 0, 0) == 0 {
			e.reply("\x1b[?62;22c")
		}
	case 'd': // VPA
		e.moveTo(e.cx, count(p, 0)-1, true)
	case 'g': // TBC
		switch param(p, 0, 0) {
		case 0:
			e.tabs[e.cx] = false
		case 3:
			clear(e.tabs)
		}
	case 'h':
		e.setModes(p, false, true)
	case 'l':
		e.setModes(p, false, false)
	case 'm':
		e.sgr(p)
	case 'n': // DSR
		switch param(p, 0, 0) {
		case 5:
			e.reply("\x1b[0n")
		case 6:
			y := e.cy
			if e.modes.origin {
				y -= e.top
			}
			e.reply("\x1b[", strconv.Itoa(y+1), ";", strconv.Itoa(e.cx+1), "R")
		}
	case 'r': // DECSTBM
		top := count(p, 0) - 1
		bot := param(p, 1, 0)
		if bot == 0 || bot > e.h {
			bot = e.h
		}
		bot--
		if top < bot {
			e.top, e.bot = top, bot
			e.moveTo(0, 0, true)
		}
	case 's': // SCOSC
		e.saveCursor()
	case 'u': // SCORC
		e.restoreCursor()
	case 't':
		e.windowOp(p)
	}
}

func (e *Emulator) cursorUp(n int) {
	top := 0
	if e.cy >= e.top {
		top = e.top
	}
	e.cy = max(e.cy-n, top)
	e.wrapNext = false
}

func (e *Emulator) cursorDown(n int) {
	bot := e.h - 1
	if e.cy <= e.bot {
		bot = e.bot
	}
	e.cy = min(e.cy+n, bot)
	e.wrapNext = false
}

// scrollUpNoHistory scrolls a region without feeding the scrollback, as
// DL and SU do: they edit the screen rather than print past its end.
func (e *Emulator) scrollUpNoHistory(top, bot int, n int) {
	saved := e.sb.max
	total := e.sb.total
	e.sb.max = 0
	e.scrollUp(top, bot, n)
	e.sb.max = saved
	e.sb.total = total
}

func (e *Emulator) eraseDisplay(mode int) {
	e.wrapNext = false
	switch mode {
	case 0:
		e.eraseCells(e.cy, e.cx, e.w)
		for y := e.cy + 1; y < e.h; y++ {
			e.eraseCells(y, 0, e.w)
		}
	case 1:
		for y := 0; y < e.cy; y++ {
			e.eraseCells(y, 0, e.w)
		}
		e.eraseCells(e.cy, 0, e.cx+1)
	case 2:
		// Keep a cleared main screen in the scrollback (tmux's
		// scroll-on-clear), so its text is still there for the engine.
		if e.cur == &e.main {
			last := -1
			for y := e.h - 1; y >= 0; y-- {
				if !rowBlank(e.main.rows[y].cells) {
					last = y
					break
				}
			}
			for y := 0; y <= last; y++ {
				e.sb.push(e.main.rows[y])
			}
		}
		for y := 0; y < e.h; y++ {
			e.eraseCells(y, 0, e.w)
		}
	case 3:
		e.sb.clear()
		e.markAll() // a view scrolled back shows other rows
	}
}

func (e *Emulator) softReset() {
	e.modes.insert = false
	e.modes.origin = false
	e.modes.autowrap = true
	e.modes.cursorHidden = false
	e.modes.appCursor = false
	e.modes.appKeypad = false
	e.top, e.bot = 0, e.h-1
	e.pen = Cell{}
	e.charsets = [2]bool{}
	e.shiftOut = false
	e.saved = savedCursor{}
	e.altSaved = savedCursor{}
	e.wrapNext = false
}

func (e *Emulator) windowOp(p seqParams) {
	switch param(p, 0, 0) {
	case 8: // resize request: the tile decides the size, so ignore
	case 18:
		e.reply("\x1b[8;", strconv.Itoa(e.h), ";", strconv.Itoa(e.w), "t")
	case 22: // push title
		if len(e.titleStack) < 16 {
			e.titleStack = append(e.titleStack, e.title)
		}
	case 23: // pop title
		if n := len(e.titleStack); n > 0 {
			e.title = e.titleStack[n-1]
			e.titleStack = e.titleStack[:n-1]
		}
	}
}
