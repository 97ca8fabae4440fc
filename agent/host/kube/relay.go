package kube

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
)

// helloFrame is the frame type of a hello, both ways first on a host's
// stream (its layout never changes, see host.Version).
const helloFrame = 'H'

// Relay is Start (start: the agent's Job created first) or Connect for
// an engine in another process, which speaks to the host itself over in
// and out (cmd/chorus-kube): hello, the engine's first frame, goes to the
// host over each exec stream tried until one answers; the host's answer
// and all that follows go to out, and what comes from in to the host.
// It returns once the stream has ended: the engine closed in and the host
// had its last words, or the stream broke. A host of another protocol
// version has its answer relayed (the engine tells) and the stream
// ended, as is a start's Job.
func (r *Runner) Relay(ctx context.Context, m host.Meta, start bool, hello []byte, in io.Reader, out io.Writer) error {
	if len(hello) < 5 || hello[0] != helloFrame {
		return fmt.Errorf("the engine's first frame is not a hello (%d bytes)", len(hello))
	}
	relayed := make(chan struct{})
	greet := func(ctx context.Context, c net.Conn, name string) (<-chan struct{}, error) {
		dl, ok := ctx.Deadline()
		if !ok {
			dl = time.Now().Add(10 * time.Second)
		}
		_ = c.SetDeadline(dl)
		if _, err := c.Write(hello); err != nil {
			return nil, fmt.Errorf("agent host at %s did not take hello: %w", name, err)
		}
		answer, version, err := readHello(c)
		if err != nil {
			return nil, fmt.Errorf("agent host at %s did not answer hello: %w", name, err)
		}
		_ = c.SetDeadline(time.Time{})
		if _, err := out.Write(answer); err != nil {
			return nil, err
		}
		if version != host.Version {
			return nil, host.ErrVersion{Host: version, Engine: host.Version}
		}
		done := make(chan struct{})
		go func() {
			_, _ = io.Copy(c, in)
			close(done)
		}()
		go func() {
			_, _ = io.Copy(out, c)
			close(relayed)
		}()
		return done, nil
	}
	var ended <-chan struct{}
	var err error
	if start {
		ended, err = r.start(ctx, m, greet)
	} else {
		ended, err = r.connect(ctx, m.AgentID, r.Selector(m.AgentID), false, greet)
	}
	if err != nil {
		return err
	}
	<-ended
	<-relayed
	return nil
}

// readHello reads one hello frame whole and the version it gives.
func readHello(c io.Reader) (frame []byte, version int, err error) {
	var h [5]byte
	if _, err := io.ReadFull(c, h[:]); err != nil {
		return nil, 0, err
	}
	n := binary.BigEndian.Uint32(h[1:])
	if h[0] != helloFrame || n > 64<<10 {
		return nil, 0, fmt.Errorf("a frame %q of %d bytes came first", h[0], n)
	}
	frame = make([]byte, 5+n)
	copy(frame, h[:])
	if _, err := io.ReadFull(c, frame[5:]); err != nil {
		return nil, 0, err
	}
	var v struct {
		Version int `json:"version"`
	}
	if err := json.Unmarshal(frame[5:], &v); err != nil {
		return nil, 0, err
	}
	return frame, v.Version, nil
}
