package kubeproc

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// conn is a host's stream carried by a chorus-kube process: written to
// its stdin, read from its stdout. Its deadlines do nothing: the wait for
// the host's hello covers a pod's start, which the caller's context
// bounds instead (giveUp).
type conn struct {
	cmd    *exec.Cmd
	w, r   *os.File
	exited chan struct{} // closed once the process ended and was reaped
	stderr string        // its last lines other than steps, once exited
	once   sync.Once
}

// startConn runs exe op with req, then the stream, on its stdin; step
// hears the steps it reports on stderr.
func startConn(exe, op string, req []byte, step func(string)) (*conn, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := exec.Command(exe, op)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("running %s: %w", exe, err)
	}
	c := &conn{cmd: cmd, w: inW, r: outR, exited: make(chan struct{})}
	l := &lines{f: step, last: make(chan string, 1)}
	go l.read(errR)
	go func() {
		// Its stderr ends when it does (or closes it): then it is reaped.
		s := <-l.last
		errR.Close()
		werr := cmd.Wait()
		if werr != nil && s == "" {
			s = fmt.Sprintf("%s %s: %v", exe, op, werr)
		}
		c.stderr = s
		close(c.exited)
	}()
	if _, err := inW.Write(req); err != nil {
		c.Close()
		return nil, fmt.Errorf("%s %s: %w", exe, op, err)
	}
	return c, nil
}

func (c *conn) Read(b []byte) (int, error)  { return c.r.Read(b) }
func (c *conn) Write(b []byte) (int, error) { return c.w.Write(b) }

// Close ends the engine's side: chorus-kube sees its stdin end, lets the
// host have the last words and ends. One that does not within a minute is
// killed.
func (c *conn) Close() error {
	c.once.Do(func() {
		c.w.Close()
		c.r.Close()
		go func() {
			t := time.NewTimer(time.Minute)
			defer t.Stop()
			select {
			case <-c.exited:
			case <-t.C:
				_ = c.cmd.Process.Kill()
			}
		}()
	})
	return nil
}

// giveUp tells chorus-kube to give up a start or connect still under way
// (a start deletes its Job) and ends the wait for the host's hello.
func (c *conn) giveUp() {
	_ = c.cmd.Process.Signal(syscall.SIGTERM)
	c.Close()
}

// why is what chorus-kube said before it ended, waiting a little for it
// to end.
func (c *conn) why() string {
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-c.exited:
		return strings.TrimSpace(c.stderr)
	case <-t.C:
		return ""
	}
}

type addr string

func (a addr) Network() string { return "chorus-kube" }
func (a addr) String() string  { return string(a) }

func (c *conn) LocalAddr() net.Addr              { return addr("engine") }
func (c *conn) RemoteAddr() net.Addr             { return addr("host") }
func (c *conn) SetDeadline(time.Time) error      { return nil }
func (c *conn) SetReadDeadline(time.Time) error  { return nil }
func (c *conn) SetWriteDeadline(time.Time) error { return nil }
