package remote

import (
	"crypto/sha256"
	"encoding/hex"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/unixsock"
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

// Listen listens on path for front ends (unixsock.Listen: a private
// socket in a private directory).
func Listen(path string) (net.Listener, error) {
	return unixsock.Listen(path, "an engine")
}
