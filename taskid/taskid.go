// Package taskid is the one rule for task ids: an id Chorus runs must be
// usable verbatim as a git ref component (branches, refs/chorus/…), as a
// directory name under .worktrees/, and as an argv element that no command
// reads as an option. The task store, the engine, worktree names and the
// merge queue all check ids with Check.
package taskid

import (
	"fmt"
	"strings"
)

// MaxLen bounds an id so that the paths and refs built from it stay well
// under filesystem and ref length limits.
const MaxLen = 100

// Check returns nil for a valid id: ASCII letters, digits, '_', '-' and '.',
// starting with a letter or digit, at most MaxLen long, without "..", not
// ending in '.' or ".lock". The error says what is wrong and what to do.
func Check(id string) error {
	if id == "" {
		return fmt.Errorf("empty task id")
	}
	why := ""
	switch {
	case len(id) > MaxLen:
		why = fmt.Sprintf("longer than %d characters", MaxLen)
	case !alnum(id[0]):
		why = "it must start with a letter or digit"
	case strings.Contains(id, ".."):
		why = `it contains ".."`
	case strings.HasSuffix(id, "."), strings.HasSuffix(id, ".lock"):
		why = `it ends in "." or ".lock"`
	default:
		for i := 0; i < len(id); i++ {
			if c := id[i]; !alnum(c) && c != '_' && c != '-' && c != '.' {
				why = fmt.Sprintf("it contains %q", rune(c))
				break
			}
		}
	}
	if why == "" {
		return nil
	}
	return fmt.Errorf("task id %q cannot be used (%s): ids may hold only letters, digits, '_', '-' and '.', start with a letter or digit, and not contain \"..\"; rename the task", id, why)
}

func alnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
