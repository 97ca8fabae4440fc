package signal

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred is the pid (LOCAL_PEERPID) and uid (LOCAL_PEERCRED) of the
// process at the other end, recorded by the kernel when it connected.
func peerCred(c *net.UnixConn) (pid, uid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		pid, cerr = unix.GetsockoptInt(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERPID)
		if cerr != nil {
			return
		}
		var cred *unix.Xucred
		cred, cerr = unix.GetsockoptXucred(int(fd), unix.SOL_LOCAL, unix.LOCAL_PEERCRED)
		if cerr == nil {
			uid = int(cred.Uid)
		}
	}); err != nil {
		return 0, 0, err
	}
	return pid, uid, cerr
}
