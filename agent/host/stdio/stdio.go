// Package stdio carries an agent host's socket over a process's stdin
// and stdout: `chorus agent-host-bridge SOCKET`, run next to a host that
// an engine reaches only through a stream (a pod's exec), is the
// engine's connection to it.
package stdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/chorus-dev/chorus/agent/host"
)

// Bridge connects to the host at socket and copies in to it and its
// answers to out, until the host closes the connection (or in ends and
// the host has answered everything).
func Bridge(ctx context.Context, socket string, in io.Reader, out io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "unix", socket)
	if err != nil {
		return fmt.Errorf("no agent host at %s: %w", socket, err)
	}
	defer c.Close()
	go func() {
		_, _ = io.Copy(c, in)
		_ = c.(*net.UnixConn).CloseWrite()
	}()
	_, err = io.Copy(out, c)
	if errors.Is(err, net.ErrClosed) {
		err = nil
	}
	return err
}

// Main is `chorus agent-host-bridge [--stop] SOCKET`: the bridge, or with
// --stop, asking the host to stop its agent (its work kept) and end.
func Main(ctx context.Context, args []string, in io.Reader, out io.Writer) error {
	stop := len(args) == 2 && args[0] == "--stop"
	if stop {
		args = args[1:]
	}
	if len(args) != 1 || args[0] == "" {
		return errors.New("agent-host-bridge: want [--stop] SOCKET (the engine runs it through a pod's exec)")
	}
	if stop {
		return host.StopHost(ctx, args[0])
	}
	return Bridge(ctx, args[0], in, out)
}
