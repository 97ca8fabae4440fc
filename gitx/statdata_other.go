//go:build !linux && !darwin

package gitx

import "io/fs"

// statOf: the index's stat data is read on Linux and macOS only; elsewhere
// SurelyClean leaves every question to git.
func statOf(fs.FileInfo) (statData, bool) { return statData{}, false }
