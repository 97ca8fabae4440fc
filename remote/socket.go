package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chorus-dev/chorus/chorusdir"
)

// maxSocketPath is below the shortest sun_path limit (104 bytes on macOS).
const maxSocketPath = 100

// SocketPath is where the engine of the repository d listens:
// .chorus/engine/engine.sock, or, when that path is too long for a Unix
// socket, a file named after the repository in a per-user directory under
// the temp dir.
func SocketPath(d chorusdir.Dir) string {
	p := filepath.Join(d.Path, "engine", "engine.sock")
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(d.Root))
	return filepath.Join(os.TempDir(), "chorus-"+strconv.Itoa(os.Getuid()), hex.EncodeToString(sum[:8])+".sock")
}

// Listen makes the socket's directory (0700, owned by this user) and
// listens on path (0600). A socket file left by an engine that died is
// removed first; one that still answers is not, and Listen fails.
func Listen(path string) (net.Listener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	if err := privateDir(dir); err != nil {
		return nil, err
	}
	if c, err := net.Dial("unix", path); err == nil {
		c.Close()
		return nil, fmt.Errorf("an engine already listens on %s", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	// The umask decides the socket's mode at bind time: make it private
	// from the start rather than chmod after (a window for others).
	old := umask(0o177)
	ln, err := net.Listen("unix", path)
	umask(old)
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

// privateDir insists dir is ours and closed to others, fixing its mode
// when it is ours.
func privateDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory; remove it and start again", dir)
	}
	if uid, ok := ownerOf(st); ok && uid != os.Getuid() {
		return fmt.Errorf("%s belongs to user %d, not to you; remove it and start again", dir, uid)
	}
	if st.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}
