package term

import "testing"

func TestStringWidthAndTruncate(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
	}{
		{"", 0}, {"abc", 3}, {"─│", 2}, {"日本", 4}, {"e\u0301", 1}, {"✓ ok", 4}, {"👍🏽", 2},
	} {
		if got := StringWidth(c.s); got != c.width {
			t.Errorf("StringWidth(%q) = %d, want %d", c.s, got, c.width)
		}
	}
	for _, c := range []struct {
		s    string
		w    int
		want string
	}{
		{"hello", 5, "hello"},
		{"hello", 4, "hel…"},
		{"hello", 1, "…"},
		{"日本語", 5, "日本…"},
		{"日本語", 4, "日…"},
		{"e\u0301e\u0301e\u0301", 2, "e\u0301…"},
	} {
		if got := Truncate(c.s, c.w, "…"); got != c.want {
			t.Errorf("Truncate(%q, %d) = %q, want %q", c.s, c.w, got, c.want)
		}
	}
	if RuneWidth('日') != 2 || RuneWidth('a') != 1 || RuneWidth('\u0301') != 0 {
		t.Error("RuneWidth disagrees with the emulator's widths")
	}
}
