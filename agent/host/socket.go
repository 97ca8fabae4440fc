package host

import (
	"encoding/json"
	"net"
	"os"

	"github.com/chorus-dev/chorus/unixsock"
)

// listen listens on path for the engine (unixsock.Listen).
func listen(path string) (net.Listener, error) {
	return unixsock.Listen(path, "an agent host")
}

// writeMeta writes m to path atomically (0600).
func writeMeta(path string, m Meta) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
