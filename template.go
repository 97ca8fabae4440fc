// Package chorus holds the files Chorus installs into a project: the
// .chorus-template directory, embedded so the binary is self-contained.
package chorus

import "embed"

// Template is the tree `chorus init` copies into a project's .chorus/
// (and agent/ into .agent/).
//
//go:embed all:.chorus-template
var Template embed.FS
