package taskid

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{"ch-1", "bd-a3f8.1", "X_2", "a", strings.Repeat("a", MaxLen)} {
		if err := Check(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		"":                            "empty",
		"-x":                          "start with",
		"_x":                          "start with",
		".x":                          "start with",
		"a..b":                        `".."`,
		"x.lock":                      ".lock",
		"x.":                          `"."`,
		"a b":                         `' '`,
		"a/b":                         `'/'`,
		"a~1":                         `'~'`,
		"é":                           "start with",
		"aé":                          "contains",
		strings.Repeat("a", MaxLen+1): "longer than",
	} {
		err := Check(bad)
		if err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: want %q in %v", bad, why, err)
		}
	}
}
