//go:build linux || darwin

package gitx

import (
	"io/fs"
	"syscall"
)

// statOf is fi's stat data as the index records it (32-bit fields).
func statOf(fi fs.FileInfo) (statData, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return statData{}, false
	}
	c, m := changeAndModTimes(st)
	return statData{
		ctime: timespec{uint32(c.Sec), uint32(c.Nsec)},
		mtime: timespec{uint32(m.Sec), uint32(m.Nsec)},
		dev:   uint32(st.Dev), ino: uint32(st.Ino), uid: st.Uid, gid: st.Gid, size32: uint32(st.Size),
	}, true
}
