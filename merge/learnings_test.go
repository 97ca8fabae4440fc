package merge

import (
	"testing"
	"time"
)

func TestFormatLearnings(t *testing.T) {
	now := time.Date(2026, 1, 9, 23, 0, 0, 0, time.UTC)
	src := "  Source: ch-1 (2026-01-09, codex)"
	for _, tc := range []struct{ name, body, want string }{
		{"bullets", "- a\n* b", "- a\n" + src + "\n- b\n" + src},
		{"continuation", "- a\n  more on a\n- b", "- a\n  more on a\n" + src + "\n- b\n" + src},
		{"topic heading", "### Testing\n- a\n\n### Speed\n- b", "### Testing\n- a\n" + src + "\n\n### Speed\n- b\n" + src},
		{"prose", "the API needs a token", "the API needs a token\n" + src},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FormatLearnings(tc.body, "ch-1", "codex", now); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}
