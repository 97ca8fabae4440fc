package term

import (
	"sync"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// The width policy is uniseg's, as tcell v2 uses when it draws, so a tile
// never disagrees with its own renderer. go-runewidth is not used: it
// follows LANG and would make widths depend on the user's locale.
var (
	bmpWidthOnce sync.Once
	bmpWidth     []int8 // width of every BMP rune, filled once
)

func initWidths() {
	bmpWidthOnce.Do(func() {
		t := make([]int8, 0x10000)
		var buf [4]byte
		for r := rune(0); r < 0x10000; r++ {
			if r < 0x300 {
				if r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
					t[r] = 1
				}
				if r == 0xad { // soft hyphen: uniseg gives 1, terminals too
					t[r] = 1
				}
				continue
			}
			if r >= 0xd800 && r < 0xe000 {
				continue
			}
			n := utf8.EncodeRune(buf[:], r)
			t[r] = int8(uniseg.StringWidth(string(buf[:n])))
		}
		bmpWidth = t
	})
}

// runeWidth returns 0, 1 or 2 columns for r under the one width policy.
func runeWidth(r rune) int {
	if r < 0x10000 {
		return int(bmpWidth[r])
	}
	var buf [4]byte
	n := utf8.EncodeRune(buf[:], r)
	w := uniseg.StringWidth(string(buf[:n]))
	if w > 2 {
		w = 2
	}
	return w
}
