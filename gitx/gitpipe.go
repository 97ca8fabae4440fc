package gitx

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
)

// gitPipe is a long-lived git process spoken to through its stdin and
// stdout (cat-file --batch, update-ref --stdin), in a process group of its
// own so that a stuck one can be ended whole, with the tail of its stderr
// kept for error messages.
type gitPipe struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.Reader
	stderr *tailBuffer
}

func startGitPipe(dir string, args ...string) (*gitPipe, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p := &gitPipe{cmd: cmd, stdin: in, stdout: out, stderr: &tailBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		if _, serr := os.Stat(dir); serr != nil {
			return nil, fmt.Errorf("cannot run git %s in %s: that directory no longer exists: %w", strings.Join(args, " "), dir, serr)
		}
		return nil, fmt.Errorf("start git %s: %w", strings.Join(args, " "), err)
	}
	return p, nil
}

// tailBuffer keeps the last few KiB of stderr for error messages.
type tailBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 4096 {
		t.b = t.b[len(t.b)-4096:]
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.b))
}
