//go:build oldui

package main

import "github.com/chorus-dev/chorus/ui"

// openTerminal: a revision whose UI opens the terminal itself (built
// with -tags oldui by bench-attach.sh for such a BASE_REV).
func openTerminal() (with func(*ui.Options), closeTerm func()) {
	return func(*ui.Options) {}, func() {}
}
