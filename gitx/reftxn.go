package gitx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// RefUpdater applies ref transactions through one long-lived `git
// update-ref --stdin` (its start / prepare / commit protocol), so a busy
// merge queue does not start a git process for every handful of refs.
// Each Apply is one transaction: all of its lines or none. A failed
// transaction ends that process (git reports the failure by exiting); the
// next Apply starts a fresh one. Safe for concurrent use; transactions run
// one at a time.
//
// Reflog messages are per process, so transactions whose reflog a person
// reads (moving a branch) are better run as their own `git update-ref -m`.
type RefUpdater struct {
	repo   string
	config []string // -c options, e.g. for fsync

	mu     sync.Mutex
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *tailBuffer
}

// NewRefUpdater returns an updater for the repository at repo; config are
// `-c name=value` pairs for the process. Nothing starts before the first
// Apply.
func NewRefUpdater(repo string, config ...string) *RefUpdater {
	return &RefUpdater{repo: repo, config: config}
}

// refTxnTimeout bounds one transaction: git takes its ref locks with a
// short retry of its own, so anything longer is a stuck process.
const refTxnTimeout = 30 * time.Second

// Apply runs lines (update-ref --stdin commands: "update REF NEW [OLD]",
// "create REF NEW", "delete REF [OLD]", "verify REF [OLD]") as one
// transaction. An error means none of them took effect.
func (u *RefUpdater) Apply(ctx context.Context, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	for _, l := range lines {
		if strings.ContainsAny(l, "\n\x00") || strings.TrimSpace(l) == "" {
			return fmt.Errorf("update-ref: bad transaction line %q", l)
		}
		switch strings.SplitN(l, " ", 2)[0] {
		case "update", "create", "delete", "verify":
		default:
			return fmt.Errorf("update-ref: %q is not an update, create, delete or verify", l)
		}
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if err := u.start(); err != nil {
		return err
	}
	// A stuck git is ended (SIGTERM first: git removes its lock files on
	// the way out), never waited on for ever.
	pid := u.cmd.Process.Pid
	terminate := func() { _ = syscall.Kill(-pid, syscall.SIGTERM) }
	stop := context.AfterFunc(ctx, terminate)
	timer := time.AfterFunc(refTxnTimeout, terminate)
	defer func() {
		stop()
		timer.Stop()
	}()
	var req strings.Builder
	req.WriteString("start\n")
	for _, l := range lines {
		req.WriteString(l + "\n")
	}
	req.WriteString("prepare\ncommit\n")
	if _, err := io.WriteString(u.in, req.String()); err != nil {
		return u.fail(ctx, err)
	}
	for _, want := range []string{"start: ok", "prepare: ok", "commit: ok"} {
		got, err := u.out.ReadString('\n')
		if err != nil {
			return u.fail(ctx, err)
		}
		if strings.TrimSpace(got) != want {
			return u.fail(ctx, fmt.Errorf("unexpected answer %q", strings.TrimSpace(got)))
		}
	}
	return nil
}

func (u *RefUpdater) start() error {
	if u.cmd != nil {
		return nil
	}
	pp, err := startGitPipe(u.repo, append(append([]string{}, u.config...), "update-ref", "--stdin")...)
	if err != nil {
		return err
	}
	u.cmd, u.in, u.out, u.stderr = pp.cmd, pp.stdin, bufio.NewReader(pp.stdout), pp.stderr
	return nil
}

// fail ends the process after a failed transaction and returns git's
// reason (it prints "fatal: …" and exits, which aborts the transaction).
func (u *RefUpdater) fail(ctx context.Context, err error) error {
	cmd := u.cmd
	_ = u.in.Close()
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
	msg := strings.TrimSpace(u.stderr.String())
	u.cmd, u.in, u.out = nil, nil, nil
	if ctx.Err() != nil {
		return fmt.Errorf("git update-ref --stdin: %w", ctx.Err())
	}
	if msg != "" {
		return &RefTxnError{Msg: msg}
	}
	return fmt.Errorf("git update-ref --stdin: %w", err)
}

// Close ends the process (git sees the end of its input and exits).
func (u *RefUpdater) Close() error {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cmd == nil {
		return nil
	}
	_ = u.in.Close()
	err := u.cmd.Wait()
	u.cmd, u.in, u.out = nil, nil, nil
	return err
}

// RefTxnError is a transaction git refused (a ref moved, a lock held), with
// git's own words.
type RefTxnError struct{ Msg string }

func (e *RefTxnError) Error() string { return "git update-ref: " + e.Msg }

// IsRefTxnError reports whether err is a refused transaction (as opposed to
// git not running at all).
func IsRefTxnError(err error) bool {
	var e *RefTxnError
	return errors.As(err, &e)
}
