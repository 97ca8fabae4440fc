package term

// Color is a cell colour. The zero value is the terminal's default colour,
// kept distinct from every palette entry so a front end can map it to the
// host theme instead of guessing a palette index.
type Color uint32

const (
	colorKindShift = 24
	kindIndexed    = 1
	kindRGB        = 2
)

// DefaultColor is the terminal's default foreground or background.
const DefaultColor Color = 0

// IndexedColor returns palette colour i (0–15 are the ANSI colours).
func IndexedColor(i uint8) Color { return Color(kindIndexed<<colorKindShift | uint32(i)) }

// RGBColor returns a truecolor value.
func RGBColor(r, g, b uint8) Color {
	return Color(kindRGB<<colorKindShift | uint32(r)<<16 | uint32(g)<<8 | uint32(b))
}

// IsDefault reports whether c is the default colour.
func (c Color) IsDefault() bool { return c == DefaultColor }

// Index returns the palette index when c is an indexed colour.
func (c Color) Index() (uint8, bool) {
	return uint8(c), c>>colorKindShift == kindIndexed
}

// RGB returns the components when c is a truecolor value.
func (c Color) RGB() (r, g, b uint8, ok bool) {
	return uint8(c >> 16), uint8(c >> 8), uint8(c), c>>colorKindShift == kindRGB
}

// Attr is a set of SGR attributes plus two layout bits for wide characters.
type Attr uint16

// Attributes. AttrWide marks the left half of a two-column character and
// AttrWideCont its right half, which holds no text of its own.
const (
	AttrBold Attr = 1 << iota
	AttrFaint
	AttrItalic
	AttrUnderline
	AttrBlink
	AttrReverse
	AttrInvisible
	AttrStrike
	AttrOverline
	AttrWide
	AttrWideCont

	attrLayout = AttrWide | AttrWideCont
)

// Cell is one screen position. It is 16 bytes so that a long scrollback
// stays cheap.
// Cluster reports that the cell holds a multi-rune grapheme, whose text
// lives in the snapshot it came from (so two such cells from different
// snapshots cannot be compared by value).
func (c Cell) Cluster() bool { return c.comb != 0 }

type Cell struct {
	// Rune is the character, 0 for a cell never written or erased.
	Rune rune
	Fg   Color
	Bg   Color
	Attr Attr
	// comb is 1+index into the emulator's cluster table when the cell holds
	// a multi-rune grapheme (a base plus combining marks or a ZWJ sequence).
	comb uint16
}

// blank reports whether the cell shows nothing but the default background.
func (c Cell) blank() bool {
	return (c.Rune == 0 || c.Rune == ' ') && c.Bg == DefaultColor && c.comb == 0 &&
		c.Attr&(AttrReverse|AttrUnderline|AttrStrike|AttrOverline|attrLayout) == 0
}

// Width returns how many columns the cell's character covers: 2 for the left
// half of a wide character, 0 for its right half, otherwise 1.
func (c Cell) Width() int {
	switch {
	case c.Attr&AttrWide != 0:
		return 2
	case c.Attr&AttrWideCont != 0:
		return 0
	}
	return 1
}
