package chorus

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The go directive is the oldest Go that builds Chorus; the README tells
// people which Go to install. A patch-level directive (say 1.26.8) would make
// an older 1.26 toolchain download another while the README says it is enough.
func TestGoDirectiveMatchesREADME(t *testing.T) {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod has no go directive")
	}
	directive := string(m[1])
	r := regexp.MustCompile(`Go (1\.\d+) or newer`).FindSubmatch(readme)
	if r == nil {
		t.Fatal(`README.md does not say "Go 1.N or newer"`)
	}
	minor := string(r[1])
	if directive != minor && directive != minor+".0" {
		t.Errorf("go.mod says go %s, README says Go %s or newer: make them agree (go %s.0)", directive, minor, minor)
	}
	if tc := regexp.MustCompile(`(?m)^toolchain (\S+)$`).FindSubmatch(mod); tc != nil {
		if v := strings.TrimPrefix(string(tc[1]), "go"); !strings.HasPrefix(v, minor+".") && v != minor {
			t.Errorf("go.mod's toolchain %s is not a Go %s toolchain", tc[1], minor)
		}
	}
}
