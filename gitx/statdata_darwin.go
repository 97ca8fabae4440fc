package gitx

import "syscall"

func changeAndModTimes(st *syscall.Stat_t) (c, m syscall.Timespec) { return st.Ctimespec, st.Mtimespec }
