package tile

import (
	"strconv"
	"unicode/utf8"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/agent/term"
)

// xtermMod is the xterm modifier parameter: 1 + shift + 2·alt + 4·ctrl.
func xtermMod(m tcell.ModMask) int {
	n := 1
	if m&tcell.ModShift != 0 {
		n++
	}
	if m&tcell.ModAlt != 0 {
		n += 2
	}
	if m&tcell.ModCtrl != 0 {
		n += 4
	}
	return n
}

// cursorKeys end in a letter and honour DECCKM.
var cursorKeys = map[tcell.Key]byte{
	tcell.KeyUp: 'A', tcell.KeyDown: 'B', tcell.KeyRight: 'C', tcell.KeyLeft: 'D',
	tcell.KeyHome: 'H', tcell.KeyEnd: 'F',
}

// ss3Keys are F1–F4, sent as SS3 without modifiers.
var ss3Keys = map[tcell.Key]byte{
	tcell.KeyF1: 'P', tcell.KeyF2: 'Q', tcell.KeyF3: 'R', tcell.KeyF4: 'S',
}

// tildeKeys are sent as CSI n ~.
var tildeKeys = map[tcell.Key]int{
	tcell.KeyInsert: 2, tcell.KeyDelete: 3, tcell.KeyPgUp: 5, tcell.KeyPgDn: 6,
	tcell.KeyF5: 15, tcell.KeyF6: 17, tcell.KeyF7: 18, tcell.KeyF8: 19,
	tcell.KeyF9: 20, tcell.KeyF10: 21, tcell.KeyF11: 23, tcell.KeyF12: 24,
}

// EncodeKey returns the bytes a terminal sends for ev, given the child's
// input modes (DECCKM, modifyOtherKeys). It returns nil for keys that have
// no encoding.
func EncodeKey(ev *tcell.EventKey, m term.InputModes) []byte {
	key, mods := ev.Key(), ev.Modifiers()
	mod := xtermMod(mods)
	if c, ok := cursorKeys[key]; ok {
		switch {
		case mod > 1:
			return []byte("\x1b[1;" + strconv.Itoa(mod) + string(c))
		case m.AppCursor:
			return []byte{0x1b, 'O', c}
		default:
			return []byte{0x1b, '[', c}
		}
	}
	if c, ok := ss3Keys[key]; ok {
		if mod > 1 {
			return []byte("\x1b[1;" + strconv.Itoa(mod) + string(c))
		}
		return []byte{0x1b, 'O', c}
	}
	if n, ok := tildeKeys[key]; ok {
		s := "\x1b[" + strconv.Itoa(n)
		if mod > 1 {
			s += ";" + strconv.Itoa(mod)
		}
		return []byte(s + "~")
	}
	switch key {
	case tcell.KeyBacktab:
		return []byte("\x1b[Z")
	case tcell.KeyRune:
		r := ev.Rune()
		if m.ModifyOtherKeys >= 2 && mods&tcell.ModCtrl != 0 {
			// A control combination with no C0 byte (Ctrl+1, Ctrl+;):
			// only modifyOtherKeys can carry it.
			return modOther(mod, int(r))
		}
		b := utf8.AppendRune(nil, r)
		if mods&tcell.ModAlt != 0 {
			b = append([]byte{0x1b}, b...)
		}
		return b
	}
	if key >= tcell.KeyCtrlSpace && key <= tcell.KeyCtrlUnderscore {
		// tcell's Ctrl+letter keys; the byte is the C0 control.
		return altPrefix(mods, byte(key-tcell.KeyCtrlSpace))
	}
	if key < 0x20 || key == tcell.KeyDEL {
		c := byte(key)
		if key == tcell.KeyBackspace || key == tcell.KeyDEL {
			// tcell folds both backspace codes into KeyBackspace; send
			// DEL, as xterm does by default.
			c = 0x7f
		}
		// Enter, Tab, Backspace and Esc with modifiers are otherwise
		// indistinguishable from the plain keys (Shift+Enter in agents'
		// input boxes), so use modifyOtherKeys when the child enabled it.
		plain := key == tcell.KeyEnter || key == tcell.KeyTab || key == tcell.KeyEscape ||
			key == tcell.KeyBackspace || key == tcell.KeyDEL
		if m.ModifyOtherKeys >= 1 && plain && mods&^tcell.ModAlt != 0 {
			return modOther(mod, int(c))
		}
		return altPrefix(mods, c)
	}
	return nil
}

// modOther encodes a key as xterm's modifyOtherKeys does: CSI 27;mod;code~.
func modOther(mod, code int) []byte {
	return []byte("\x1b[27;" + strconv.Itoa(mod) + ";" + strconv.Itoa(code) + "~")
}

func altPrefix(mods tcell.ModMask, c byte) []byte {
	if mods&tcell.ModAlt != 0 {
		return []byte{0x1b, c}
	}
	return []byte{c}
}
