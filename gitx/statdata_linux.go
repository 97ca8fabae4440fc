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
	return statData{
		ctime: timespec{uint32(st.Ctim.Sec), uint32(st.Ctim.Nsec)},
		mtime: timespec{uint32(st.Mtim.Sec), uint32(st.Mtim.Nsec)},
		dev:   uint32(st.Dev), ino: uint32(st.Ino), uid: st.Uid, gid: st.Gid, size32: uint32(st.Size),
	}, true
}
