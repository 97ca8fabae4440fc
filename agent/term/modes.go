package term

import "strconv"

// Terminal modes: setting them (SM/RM, DECSET/DECRST) and reporting them
// (DECRQM).

// setModes handles SM/RM (ANSI) and DECSET/DECRST (private).
func (e *Emulator) setModes(p seqParams, private, on bool) {
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
