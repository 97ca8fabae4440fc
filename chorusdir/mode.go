package chorusdir

import (
	"io/fs"
	"os"
	"path/filepath"
)

// .chorus/ holds what agents printed (transcripts, logs), the engine's
// state and ledgers: private to the user who runs Chorus.
const (
	DirMode  os.FileMode = 0o700 // .chorus/ and every directory in it
	FileMode os.FileMode = 0o600 // every file Chorus writes in it
)

// Ensure creates .chorus/ and its logs/ private (an existing directory
// keeps its mode; Tighten fixes that).
func (d Dir) Ensure() error {
	if err := os.MkdirAll(d.Path, DirMode); err != nil {
		return err
	}
	return os.MkdirAll(d.Logs(), DirMode)
}

// Tighten takes group and other permissions off .chorus/ and everything
// in it, for installs made before it was private; the owner's bits stay
// (hooks stay executable); a file of another user is skipped. Symbolic links are left alone: their mode
// means nothing and their target may be outside. It returns the paths it
// changed.
func (d Dir) Tighten() ([]string, error) {
	var changed []string
	err := filepath.WalkDir(d.Path, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		if !e.IsDir() && !e.Type().IsRegular() {
			return nil
		}
		info, err := e.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while we walked
			}
			return err
		}
		if m := info.Mode().Perm(); m&0o077 != 0 {
			if err := os.Chmod(p, m&^0o077); err != nil {
				if os.IsNotExist(err) || os.IsPermission(err) {
					return nil // gone, or another user's: not ours to change
				}
				return err
			}
			changed = append(changed, p)
		}
		return nil
	})
	return changed, err
}

// dirModeFor is the mode of directories WriteAtomic creates for a file of
// mode perm: private when the file is.
func dirModeFor(perm os.FileMode) os.FileMode {
	if perm&0o077 == 0 {
		return DirMode
	}
	return 0o755
}
