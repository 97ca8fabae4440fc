package beads

import (
	"os"
	"syscall"
)

// statIdentity returns the device, inode and change time of a file: with
// size and mtime they tell whether the task file is still the one read.
// macOS names the change time Ctimespec.
func statIdentity(st os.FileInfo) (dev, ino uint64, ctimeNanos int64) {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev), sys.Ino, sys.Ctimespec.Nano()
	}
	return 0, 0, 0
}
