package term

// Character attributes and colours (SGR).

// sgr applies Select Graphic Rendition parameters.
func (e *Emulator) sgr(p seqParams) {
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
func extColor(p seqParams, i int) (Color, int) {
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
