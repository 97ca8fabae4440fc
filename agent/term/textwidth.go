package term

import "github.com/rivo/uniseg"

// RuneWidth is the columns r takes in a tile: 0, 1 or 2, by the width
// policy the emulator and tcell use. Front ends measure their own text
// with it and StringWidth, not go-runewidth: its first width past U+02FF
// fills a 2 MiB table, most of the TUI's own memory after its heap.
func RuneWidth(r rune) int { return runeWidth(r) }

// StringWidth is the columns s takes, grapheme by grapheme.
func StringWidth(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return uniseg.StringWidth(s)
		}
	}
	return len(s) // printable ASCII
}

// Truncate cuts s to at most w columns, ending in tail when it cuts (as
// go-runewidth's Truncate does).
func Truncate(s string, w int, tail string) string {
	if StringWidth(s) <= w {
		return s
	}
	w -= StringWidth(tail)
	used, end := 0, 0
	state := -1
	for rest := s; rest != ""; {
		var cluster string
		var cw int
		cluster, rest, cw, state = uniseg.FirstGraphemeClusterInString(rest, state)
		if used+cw > w {
			break
		}
		used += cw
		end += len(cluster)
	}
	return s[:end] + tail
}
