package beads

import "github.com/chorus-dev/chorus/gitx"

// SanitizeText makes task text safe to print on a terminal: ANSI escape
// sequences, other C0/C1 controls, DEL and bidi overrides go; newlines and
// tabs stay (see gitx.SanitizeText, which also cleans what reaches git).
// Stored text is never changed; this is for display.
func SanitizeText(s string) string { return gitx.SanitizeText(s) }
