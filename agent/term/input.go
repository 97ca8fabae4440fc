package term

import (
	"bytes"
	"strconv"
)

// MouseMode is the mouse tracking the child asked for.
type MouseMode uint8

// Mouse tracking modes (DECSET 9, 1000, 1002, 1003).
const (
	MouseNone   MouseMode = iota
	MouseX10              // presses only
	MouseNormal           // presses and releases
	MouseButton           // plus motion while a button is held
	MouseAny              // plus all motion
)

// InputModes is what an input encoder needs to know about the child.
type InputModes struct {
	AppCursor       bool // DECCKM: arrows send SS3 instead of CSI
	AppKeypad       bool
	BracketedPaste  bool
	Focus           bool // report focus in/out
	Mouse           MouseMode
	MouseSGR        bool // 1006 encoding
	ModifyOtherKeys int  // XTMODKEYS level for resource 4
	AltScreen       bool
}

// InputModes returns the modes that decide how keys and mouse events are
// encoded for the child.
func (e *Emulator) InputModes() InputModes {
	e.mu.Lock()
	defer e.mu.Unlock()
	return InputModes{
		AppCursor:       e.modes.appCursor,
		AppKeypad:       e.modes.appKeypad,
		BracketedPaste:  e.modes.bracketed,
		Focus:           e.modes.focus,
		Mouse:           e.modes.mouse,
		MouseSGR:        e.modes.mouseSGR,
		ModifyOtherKeys: e.modes.modifyOther,
		AltScreen:       e.cur == &e.alt,
	}
}

// MouseEvent is a terminal-neutral mouse event in cell coordinates
// (0-based) of the emulator's screen.
type MouseEvent struct {
	X, Y int
	// Button is 0 left, 1 middle, 2 right, 3 none (motion or release in
	// the legacy encoding), 64/65 wheel up/down.
	Button  int
	Release bool
	Motion  bool
	Shift   bool
	Alt     bool
	Ctrl    bool
}

// Mouse button codes for MouseEvent.Button.
const (
	ButtonLeft      = 0
	ButtonMiddle    = 1
	ButtonRight     = 2
	ButtonNone      = 3
	ButtonWheelUp   = 64
	ButtonWheelDown = 65
)

// EncodeMouse returns the bytes to send for ev under modes m, or nil when
// the child did not ask for this kind of event.
func EncodeMouse(m InputModes, ev MouseEvent) []byte {
	switch m.Mouse {
	case MouseNone:
		return nil
	case MouseX10:
		if ev.Release || ev.Motion {
			return nil
		}
	case MouseNormal:
		if ev.Motion {
			return nil
		}
	case MouseButton:
		if ev.Motion && ev.Button == ButtonNone {
			return nil
		}
	}
	code := ev.Button
	if m.Mouse != MouseX10 {
		if ev.Shift {
			code |= 4
		}
		if ev.Alt {
			code |= 8
		}
		if ev.Ctrl {
			code |= 16
		}
	}
	if ev.Motion {
		code |= 32
	}
	if m.MouseSGR {
		final := byte('M')
		if ev.Release {
			final = 'm'
		}
		b := []byte("\x1b[<")
		b = strconv.AppendInt(b, int64(code), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(ev.X+1), 10)
		b = append(b, ';')
		b = strconv.AppendInt(b, int64(ev.Y+1), 10)
		return append(b, final)
	}
	if ev.Release {
		code = code&^3 | 3
	}
	// Legacy encoding cannot address past column 223.
	if ev.X > 222 || ev.Y > 222 {
		return nil
	}
	return []byte{0x1b, '[', 'M', byte(32 + code), byte(33 + ev.X), byte(33 + ev.Y)}
}

// EncodeFocus returns the focus report for the child, or nil if it did not
// ask for focus events.
func EncodeFocus(m InputModes, focused bool) []byte {
	if !m.Focus {
		return nil
	}
	if focused {
		return []byte("\x1b[I")
	}
	return []byte("\x1b[O")
}

// EncodePaste wraps pasted text in bracketed-paste markers when the child
// enabled them. Any end marker inside the text is removed so the paste
// cannot end early and inject keystrokes.
func EncodePaste(m InputModes, text []byte) []byte {
	if !m.BracketedPaste {
		return append([]byte(nil), text...)
	}
	const start, end = "\x1b[200~", "\x1b[201~"
	b := make([]byte, 0, len(text)+12)
	b = append(b, start...)
	for len(text) > 0 {
		i := bytes.Index(text, []byte(end))
		if i < 0 {
			b = append(b, text...)
			break
		}
		b = append(b, text[:i]...)
		text = text[i+len(end):]
	}
	return append(b, end...)
}
