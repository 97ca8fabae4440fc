package term

import (
	"sync/atomic"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// The width policy is uniseg's, as tcell v2 uses when it draws, so a tile
// never disagrees with its own renderer. go-runewidth is not used: it
// follows LANG and would make widths depend on the user's locale.
//
// Widths of the Basic Multilingual Plane are kept in pages of 256 runes,
// each filled the first time one of its runes is printed. Filling the
// whole plane up front took 65,536 width lookups, about 5 ms, on the path
// of every process's first emulator: most of the time `chorus attach`
// took to show the agents' screens.
var bmpPages [0x100]atomic.Pointer[[0x100]int8]

// bmpPage returns the widths of runes page<<8 .. page<<8+255.
func bmpPage(page rune) *[0x100]int8 {
	if p := bmpPages[page].Load(); p != nil {
		return p
	}
	// Two goroutines may fill the same page at once: both get the same
	// widths, and one page is kept.
	t := new([0x100]int8)
	var buf [4]byte
	for i := range rune(0x100) {
		r := page<<8 | i
		if r < 0x300 {
			if r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
				t[i] = 1
			}
			if r == 0xad { // soft hyphen: uniseg gives 1, terminals too
				t[i] = 1
			}
			continue
		}
		if r >= 0xd800 && r < 0xe000 {
			continue
		}
		n := utf8.EncodeRune(buf[:], r)
		t[i] = int8(uniseg.StringWidth(string(buf[:n])))
	}
	if bmpPages[page].CompareAndSwap(nil, t) {
		return t
	}
	return bmpPages[page].Load()
}

// runeWidth returns 0, 1 or 2 columns for r under the one width policy.
func runeWidth(r rune) int {
	if r >= 0 && r < 0x10000 {
		return int(bmpPage(r >> 8)[r&0xff])
	}
	var buf [4]byte
	n := utf8.EncodeRune(buf[:], r)
	w := uniseg.StringWidth(string(buf[:n]))
	if w > 2 {
		w = 2
	}
	return w
}
