package signal

import (
	"net"

	"golang.org/x/sys/unix"
)

// peerCred is the pid and uid of the process at the other end, recorded
// by the kernel when it connected (SO_PEERCRED).
func peerCred(c *net.UnixConn) (pid, uid int, err error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, 0, err
	}
	var cerr error
	if err := raw.Control(func(fd uintptr) {
		var cred *unix.Ucred
		cred, cerr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
		if cerr == nil {
			pid, uid = int(cred.Pid), int(cred.Uid)
		}
	}); err != nil {
		return 0, 0, err
	}
	return pid, uid, cerr
}
