//go:build !linux && !darwin

package signal

import (
	"errors"
	"net"
)

// peerCred is not available on this system: no signal is taken.
func peerCred(*net.UnixConn) (pid, uid int, err error) {
	return 0, 0, errors.New("peer credentials are not available on this system")
}
