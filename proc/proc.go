// Package proc runs external commands from an argv, never through a shell
// (quality commands are the exception: the user's own shell strings, run
// explicitly with Shell). Every command gets its own process group and a
// deadline; on expiry or cancellation the whole group is killed, so a
// hanging child cannot leave grandchildren behind.
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Spec describes one command.
type Spec struct {
	Argv    []string
	Dir     string
	Env     []string // appended to the parent environment when Clean is false
	Clean   bool     // use Env alone instead of inheriting
	Stdin   io.Reader
	Timeout time.Duration // 0 = no limit beyond ctx
	// Grace between SIGTERM and SIGKILL when the deadline passes.
	Grace time.Duration
	// MaxOutput caps each of stdout and stderr kept in memory (0 = 4 MiB).
	MaxOutput int
}

// Result is what a finished command produced.
type Result struct {
	Stdout   []byte
	Stderr   []byte
	ExitCode int // -1 when killed by a signal or never started
	Duration time.Duration
	TimedOut bool
}

// ErrNoDir is wrapped by Run's error when Spec.Dir does not exist.
var ErrNoDir = errors.New("working directory does not exist")

// ErrTimeout is wrapped by Run's error when the deadline killed the command.
var ErrTimeout = errors.New("timed out")

// Run executes spec and waits. A non-zero exit is not an error: callers
// decide success by Result.ExitCode. The error is for "could not run" and
// timeouts.
func Run(ctx context.Context, s Spec) (Result, error) {
	if len(s.Argv) == 0 {
		return Result{ExitCode: -1}, errors.New("proc: empty argv")
	}
	if s.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.Timeout)
		defer cancel()
	}
	max := s.MaxOutput
	if max <= 0 {
		max = 4 << 20
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	if s.Clean {
		cmd.Env = s.Env
	} else if len(s.Env) > 0 {
		cmd.Env = append(cmd.Environ(), s.Env...)
	}
	cmd.Stdin = s.Stdin
	var out, errb capped
	out.max, errb.max = max, max
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// A grandchild holding stdout open must not keep Wait blocked forever.
	cmd.WaitDelay = time.Second
	start := time.Now()
	if err := cmd.Start(); err != nil {
		// A missing working directory shows up as "fork/exec …: no such
		// file or directory", which blames the program.
		if s.Dir != "" {
			if _, serr := os.Stat(s.Dir); serr != nil {
				return Result{ExitCode: -1}, fmt.Errorf("cannot run %s in %s: that directory no longer exists (deleted or moved?): %w", s.Argv[0], s.Dir, ErrNoDir)
			}
		}
		if errors.Is(err, exec.ErrNotFound) {
			return Result{ExitCode: -1}, fmt.Errorf("%s was not found on PATH; install it or add its directory to PATH: %w", s.Argv[0], err)
		}
		return Result{ExitCode: -1}, fmt.Errorf("start %s: %w", s.Argv[0], err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var werr error
	timedOut := false
	select {
	case werr = <-done:
	case <-ctx.Done():
		timedOut = true
		werr = terminate(cmd.Process.Pid, s.Grace, done)
	}
	// Grandchildren left in the group after the leader exited would keep
	// running (and holding our pipes); the group goes with its leader.
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	res := Result{Stdout: out.Bytes(), Stderr: errb.Bytes(), Duration: time.Since(start), TimedOut: timedOut}
	res.ExitCode = cmd.ProcessState.ExitCode()
	if timedOut {
		return res, fmt.Errorf("%s: %w after %s", s.Argv[0], ErrTimeout, res.Duration.Round(time.Millisecond))
	}
	var ee *exec.ExitError
	if werr != nil && !errors.As(werr, &ee) {
		return res, werr
	}
	return res, nil
}

// Shell runs a user-supplied shell string with sh -c. Only for the user's own
// configured commands (quality commands, hooks), never for data.
func Shell(ctx context.Context, script, dir string, env []string, timeout time.Duration) (Result, error) {
	return Run(ctx, Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Env: env, Timeout: timeout, Grace: 2 * time.Second})
}

// terminate sends SIGTERM to the group, waits up to grace for the leader to
// exit, then SIGKILLs the group and waits for the exit.
func terminate(pgid int, grace time.Duration, done <-chan error) error {
	if grace <= 0 {
		grace = 100 * time.Millisecond
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return <-done
}

// FirstLine returns the first non-empty line of b, trimmed, for messages.
func FirstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// capped keeps at most max bytes. It does not embed bytes.Buffer so that
// io.Copy cannot bypass Write through ReadFrom.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Bytes() []byte { return c.buf.Bytes() }

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room < len(p) {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
		return len(p), nil
	}
	return c.buf.Write(p)
}
