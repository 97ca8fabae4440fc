//go:build linux || darwin

package beads

import (
	"os"
	"syscall"
)

// mapFile maps f's first n bytes read-only. Counting reads a 4 MB task file
// once and drops it: a mapping of the page cache spares the copy and the
// zeroed pages a read needs (a fifth of `chorus status`'s CPU after a
// change). The caller unmaps it with the function returned.
func mapFile(f *os.File, n int64) ([]byte, func(), bool) {
	if n <= 0 || int64(int(n)) != n {
		return nil, nil, false
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(n), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, false
	}
	return b, func() { _ = syscall.Munmap(b) }, true
}
