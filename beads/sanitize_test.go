package beads_test

import (
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

func TestSanitizeText(t *testing.T) {
	cases := map[string]string{
		"plain text ✓ 日本":                                  "plain text ✓ 日本",
		"keep\nnewline\tand tab":                           "keep\nnewline\tand tab",
		"\x1b[31mred\x1b[0m":                               "red",
		"\x1b[38;2;255;0;0mtrue colour\x1b[m":              "true colour",
		"title\x1b]0;evil window title\x07 after":          "title after",
		"link \x1b]8;;http://evil\x1b\\text\x1b]8;;\x1b\\": "link text",
		"clear\x1b[2J\x1b[H screen":                        "clear screen",
		"dcs \x1bPq#0;2;0;0;0\x1b\\ end":                   "dcs  end",
		"esc 7 \x1b7 save":                                 "esc 7  save",
		"bell\x07 bs\x08 cr\r del\x7f nul\x00":             "bell bs cr del nul",
		"c1 csi \u009b31m red":                             "c1 csi  red",
		"c1 osc \u009d0;t\u009c x":                         "c1 osc  x",
		"bidi \u202eevil\u202c \u2066x\u2069":              "bidi evil x",
		"bad utf8 \xff\xfe":                                "bad utf8 \ufffd\ufffd",
		"truncated \x1b[31":                                "truncated ",
		"unterminated osc \x1b]0;forever":                  "unterminated osc ",
		"lone esc \x1b":                                    "lone esc ",
	}
	for in, want := range cases {
		if got := beads.SanitizeText(in); got != want {
			t.Errorf("SanitizeText(%q) = %q, want %q", in, got, want)
		}
	}
}
