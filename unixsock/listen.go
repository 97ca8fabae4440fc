// Package unixsock is a private Unix socket for one user: the engine's
// and each agent host's. The directory is 0700 and this user's, the
// socket 0600 from bind on, and a peer's uid is read from the kernel.
package unixsock

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
)

// Listen makes the socket's directory (0700, owned by this user) and
// listens on path (0600). A socket file left by a process that died is
// removed first; one that still answers is not, and Listen fails saying
// that what (e.g. "an engine") already listens there.
func Listen(path, what string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := PrivateDir(dir); err != nil {
		return nil, err
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s already listens on %s", what, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The umask decides the socket's mode at bind time: make it private
	// from the start rather than chmod after (a window for others).
	old := syscall.Umask(0o177)
	ln, err := net.Listen("unix", path)
	syscall.Umask(old)
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return nil, err
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(true)
	return ln, nil
}

// PrivateDir insists dir is ours and closed to others, fixing its mode
// when it is ours.
func PrivateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory; remove it and start again", dir)
	}
	if s, ok := st.Sys().(*syscall.Stat_t); ok && int(s.Uid) != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to you; remove it and start again", dir, s.Uid)
	}
	if st.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}
