package term

import (
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/rivo/uniseg"
)

// TestRuneWidthPages: the pages filled on demand give every rune of the
// Basic Multilingual Plane the width the policy says, whichever page is
// asked for first and however many goroutines ask at once.
func TestRuneWidthPages(t *testing.T) {
	want := func(r rune) int {
		switch {
		case r < 0x300:
			if r >= 0x20 && r != 0x7f && (r < 0x80 || r >= 0xa0) {
				return 1
			}
			return 0
		case r >= 0xd800 && r < 0xe000:
			return 0
		}
		var buf [4]byte
		n := utf8.EncodeRune(buf[:], r)
		return uniseg.StringWidth(string(buf[:n]))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each goroutine walks the plane from another page.
			for i := range rune(0x10000) {
				r := (i + rune(g)*0x4000) % 0x10000
				if got := runeWidth(r); got != want(r) {
					t.Errorf("runeWidth(%U) = %d, want %d", r, got, want(r))
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, c := range []struct {
		r rune
		w int
	}{{'a', 1}, {'世', 2}, {'\u0301', 0}, {0xad, 1}, {'👍', 2}, {0x1F600, 2}} {
		if got := runeWidth(c.r); got != c.w {
			t.Errorf("runeWidth(%U) = %d, want %d", c.r, got, c.w)
		}
	}
}
