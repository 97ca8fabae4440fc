//go:build !oldui

package main

import "github.com/chorus-dev/chorus/ui"

// openTerminal opens the terminal ahead of the UI, as chorus attach does.
func openTerminal() (with func(*ui.Options), closeTerm func()) {
	t := ui.OpenTerminal()
	return func(o *ui.Options) { o.Terminal = t }, t.Close
}
