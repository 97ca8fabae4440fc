package term

import (
	"strconv"

	"github.com/charmbracelet/x/ansi"
)

// Version is reported to XTVERSION queries.
const Version = "chorus-term(1)"

// param returns parameter i clamped to a sane range, def when missing.
func param(p ansi.Params, i, def int) int {
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
func count(p ansi.Params, i int) int {
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
func (e *Emulator) esc(cmd ansi.Cmd) {
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
func (e *Emulator) csi(cmd ansi.Cmd, p ansi.Params) {
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
			e.csi(ansi.Cmd(final), p)
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

func (e *Emulator) windowOp(p ansi.Params) {
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

// setModes handles SM/RM (ANSI) and DECSET/DECRST (private).
func (e *Emulator) setModes(p ansi.Params, private, on bool) {
	for i := range p {
		m := param(p, i, 0)
		if !private {
			switch m {
			case 4:
				e.modes.insert = on
			case 20:
				e.modes.newline = on
			}
			continue
		}
		switch m {
		case 1:
			e.modes.appCursor = on
		case 5:
			e.modes.reverse = on
		case 6:
			e.modes.origin = on
			e.moveTo(0, 0, true)
		case 7:
			e.modes.autowrap = on
			if !on {
				e.wrapNext = false
			}
		case 12:
			e.modes.cursorBlink = on
		case 25:
			e.modes.cursorHidden = !on
		case 9:
			e.setMouse(MouseX10, on)
		case 1000:
			e.setMouse(MouseNormal, on)
		case 1002:
			e.setMouse(MouseButton, on)
		case 1003:
			e.setMouse(MouseAny, on)
		case 1004:
			e.modes.focus = on
		case 1006:
			e.modes.mouseSGR = on
		case 2004:
			e.modes.bracketed = on
		case 2026:
			if on && !e.modes.sync {
				e.syncSince = now()
			}
			e.modes.sync = on
		case 47:
			e.switchScreen(on, false)
		case 1047:
			e.switchScreen(on, true)
		case 1048:
			if on {
				e.saveCursor()
			} else {
				e.restoreCursor()
			}
		case 1049:
			if on {
				if e.cur != &e.alt {
					e.saveCursor()
					e.switchScreen(true, true)
				}
			} else if e.cur == &e.alt {
				e.switchScreen(false, false)
				e.restoreCursor()
			}
		}
	}
}

func (e *Emulator) setMouse(m MouseMode, on bool) {
	if on {
		e.modes.mouse = m
	} else if e.modes.mouse == m {
		e.modes.mouse = MouseNone
	}
}

// decrqm answers a mode query: 1 set, 2 reset, 0 not recognised.
func (e *Emulator) decrqm(m int, private bool) {
	state := 0
	b := func(v bool) {
		if v {
			state = 1
		} else {
			state = 2
		}
	}
	if private {
		switch m {
		case 1:
			b(e.modes.appCursor)
		case 5:
			b(e.modes.reverse)
		case 6:
			b(e.modes.origin)
		case 7:
			b(e.modes.autowrap)
		case 12:
			b(e.modes.cursorBlink)
		case 25:
			b(!e.modes.cursorHidden)
		case 9:
			b(e.modes.mouse == MouseX10)
		case 1000:
			b(e.modes.mouse == MouseNormal)
		case 1002:
			b(e.modes.mouse == MouseButton)
		case 1003:
			b(e.modes.mouse == MouseAny)
		case 1004:
			b(e.modes.focus)
		case 1006:
			b(e.modes.mouseSGR)
		case 2004:
			b(e.modes.bracketed)
		case 2026:
			// Reported because the tile really defers drawing while set.
			b(e.modes.sync)
		case 47, 1047, 1049:
			b(e.cur == &e.alt)
		}
		e.reply("\x1b[?", strconv.Itoa(m), ";", strconv.Itoa(state), "$y")
		return
	}
	switch m {
	case 4:
		b(e.modes.insert)
	case 20:
		b(e.modes.newline)
	}
	e.reply("\x1b[", strconv.Itoa(m), ";", strconv.Itoa(state), "$y")
}

// sgr applies Select Graphic Rendition parameters.
func (e *Emulator) sgr(p ansi.Params) {
	if len(p) == 0 {
		e.pen = Cell{}
		return
	}
	for i := 0; i < len(p); i++ {
		v, more, _ := p.Param(i, 0)
		switch {
		case v == 0:
			e.pen = Cell{}
		case v == 1:
			e.pen.Attr |= AttrBold
		case v == 2:
			e.pen.Attr |= AttrFaint
		case v == 3:
			e.pen.Attr |= AttrItalic
		case v == 4:
			style := 1
			if more {
				style = param(p, i+1, 1)
			}
			if style == 0 {
				e.pen.Attr &^= AttrUnderline
			} else {
				e.pen.Attr |= AttrUnderline
			}
		case v == 5 || v == 6:
			e.pen.Attr |= AttrBlink
		case v == 7:
			e.pen.Attr |= AttrReverse
		case v == 8:
			e.pen.Attr |= AttrInvisible
		case v == 9:
			e.pen.Attr |= AttrStrike
		case v == 21:
			e.pen.Attr |= AttrUnderline
		case v == 22:
			e.pen.Attr &^= AttrBold | AttrFaint
		case v == 23:
			e.pen.Attr &^= AttrItalic
		case v == 24:
			e.pen.Attr &^= AttrUnderline
		case v == 25:
			e.pen.Attr &^= AttrBlink
		case v == 27:
			e.pen.Attr &^= AttrReverse
		case v == 28:
			e.pen.Attr &^= AttrInvisible
		case v == 29:
			e.pen.Attr &^= AttrStrike
		case v >= 30 && v <= 37:
			e.pen.Fg = IndexedColor(uint8(v - 30))
		case v == 38:
			var c Color
			c, i = extColor(p, i)
			e.pen.Fg = c
			continue
		case v == 39:
			e.pen.Fg = DefaultColor
		case v >= 40 && v <= 47:
			e.pen.Bg = IndexedColor(uint8(v - 40))
		case v == 48:
			var c Color
			c, i = extColor(p, i)
			e.pen.Bg = c
			continue
		case v == 49:
			e.pen.Bg = DefaultColor
		case v == 53:
			e.pen.Attr |= AttrOverline
		case v == 55:
			e.pen.Attr &^= AttrOverline
		case v == 58: // underline colour: parsed to skip its arguments
			_, i = extColor(p, i)
			continue
		case v >= 90 && v <= 97:
			e.pen.Fg = IndexedColor(uint8(v - 90 + 8))
		case v >= 100 && v <= 107:
			e.pen.Bg = IndexedColor(uint8(v - 100 + 8))
		}
		// Skip the sub-parameters of anything handled above.
		for more && i+1 < len(p) {
			i++
			_, more, _ = p.Param(i, 0)
		}
	}
}

// extColor parses the colour after 38/48/58 at index i, in both the
// colon (38:2::r:g:b, 38:5:n) and semicolon (38;2;r;g;b) forms. It returns
// the colour and the index of the last parameter it used.
func extColor(p ansi.Params, i int) (Color, int) {
	_, more, _ := p.Param(i, 0)
	if more {
		// Colon form: collect the sub-parameters.
		var sub [8]int
		n := 0
		j := i
		for more && j+1 < len(p) {
			j++
			var v int
			v, more, _ = p.Param(j, 0)
			if n < len(sub) {
				sub[n] = min(v, 0xffff)
				n++
			}
		}
		if n == 0 {
			return DefaultColor, j
		}
		switch sub[0] {
		case 5:
			if n >= 2 {
				return IndexedColor(uint8(sub[1])), j
			}
		case 2:
			// 38:2:cs:r:g:b carries a colour-space id; 38:2:r:g:b does not.
			if n >= 5 {
				return RGBColor(uint8(sub[2]), uint8(sub[3]), uint8(sub[4])), j
			}
			if n == 4 {
				return RGBColor(uint8(sub[1]), uint8(sub[2]), uint8(sub[3])), j
			}
		}
		return DefaultColor, j
	}
	switch param(p, i+1, -1) {
	case 5:
		if i+2 < len(p) {
			return IndexedColor(uint8(param(p, i+2, 0))), i + 2
		}
		return DefaultColor, len(p)
	case 2:
		if i+4 < len(p) {
			return RGBColor(uint8(param(p, i+2, 0)), uint8(param(p, i+3, 0)), uint8(param(p, i+4, 0))), i + 4
		}
		return DefaultColor, len(p)
	}
	return DefaultColor, i + 1
}
