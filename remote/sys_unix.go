package remote

import (
	"os"
	"syscall"
)

func umask(m int) int { return syscall.Umask(m) }

func ownerOf(st os.FileInfo) (int, bool) {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(s.Uid), true
	}
	return 0, false
}
