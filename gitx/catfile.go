package gitx

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// catFile is one running `git cat-file --batch`.
type catFile struct {
	cmd    *exec.Cmd
	in     *bufio.Writer
	stdin  io.Closer
	out    *bufio.Reader
	stderr *tailBuffer
	waited chan struct{}
	werr   error
}

func startCatFile(dir string) (*catFile, error) {
	pp, err := startGitPipe(dir, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	cf := &catFile{cmd: pp.cmd, stdin: pp.stdin, in: bufio.NewWriter(pp.stdin), out: bufio.NewReaderSize(pp.stdout, 64<<10),
		stderr: pp.stderr, waited: make(chan struct{})}
	go func() {
		cf.werr = pp.cmd.Wait()
		close(cf.waited)
	}()
	return cf, nil
}

// kill ends the process group at once; a pending read then fails. Not
// after it was reaped: its id may belong to someone else by then.
func (c *catFile) kill() {
	select {
	case <-c.waited:
	default:
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

func (c *catFile) close() error {
	_ = c.stdin.Close()
	select {
	case <-c.waited:
	case <-time.After(5 * time.Second):
		c.kill()
		<-c.waited
	}
	return nil
}

// pid is the batch process's id, 0 when none runs (for tests and
// diagnostics).
func (o *ObjectStore) pid() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.cf == nil {
		return 0
	}
	return o.cf.cmd.Process.Pid
}

// object is one answer of the batch process.
type object struct {
	typ  string
	data []byte
	err  error // missing, too large
}

// maxBatch bounds the ids written before their answers are read: the
// requests must fit in the pipe, or git and this process could block on
// each other's full pipes.
const maxBatch = 64

// readObject returns the type and contents of id. A missing object is an
// error wrapping ErrMissing.
func (o *ObjectStore) readObject(ctx context.Context, id string) (string, []byte, error) {
	objs, err := o.readObjects(ctx, []string{id})
	if err != nil {
		return "", nil, err
	}
	return objs[0].typ, objs[0].data, objs[0].err
}

// readObjects asks for several objects in one round trip.
func (o *ObjectStore) readObjects(ctx context.Context, ids []string) ([]object, error) {
	return o.readObjectsWithin(ctx, ids, nil)
}

// readObjectsWithin is readObjects holding at most *budget bytes of
// contents in all, less what it read: an object that does not fit is
// skipped, its answer an error (errOverBudget).
func (o *ObjectStore) readObjectsWithin(ctx context.Context, ids []string, budget *int64) ([]object, error) {
	if len(ids) > maxBatch {
		first, err := o.readObjectsWithin(ctx, ids[:maxBatch], budget)
		if err != nil {
			return nil, err
		}
		rest, err := o.readObjectsWithin(ctx, ids[maxBatch:], budget)
		return append(first, rest...), err
	}
	for _, id := range ids {
		if err := checkID(id); err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.closed {
		return nil, errors.New("object store is closed")
	}
	for attempt := 0; ; attempt++ {
		fresh := false
		if o.cf == nil {
			cf, err := startCatFile(o.repo)
			if err != nil {
				return nil, err
			}
			o.cf, fresh = cf, true
		}
		objs, broken, err := o.request(ctx, ids, budget)
		if !broken {
			return objs, err
		}
		// The process is no use any more (dead, stuck, out of step):
		// end it; the next read starts another.
		cf := o.cf
		o.cf = nil
		cf.kill()
		<-cf.waited
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		// One retry on a process that had been working: it may have been
		// killed between requests. A fresh one failing is reported.
		if fresh || attempt > 0 || errors.Is(err, errReadTimeout) {
			if msg := cf.stderr.String(); msg != "" {
				err = fmt.Errorf("%w (git: %s)", err, msg)
			}
			return nil, err
		}
	}
}

// errOverBudget: an object larger than what a read may hold.
var errOverBudget = errors.New("over the read's budget")

var errReadTimeout = errors.New("git cat-file --batch did not answer in time; it was stopped and will be restarted")

// request sends ids and reads their answers; broken reports that the
// process must not be used again.
func (o *ObjectStore) request(ctx context.Context, ids []string, budget *int64) (objs []object, broken bool, err error) {
	cf := o.cf
	var timedOut, cancelled bool
	var flagMu sync.Mutex
	timer := time.AfterFunc(o.timeout, func() {
		flagMu.Lock()
		timedOut = true
		flagMu.Unlock()
		cf.kill()
	})
	stop := context.AfterFunc(ctx, func() {
		flagMu.Lock()
		cancelled = true
		flagMu.Unlock()
		cf.kill()
	})
	defer func() {
		timer.Stop()
		stop()
		flagMu.Lock()
		defer flagMu.Unlock()
		if timedOut && err != nil {
			err, broken = errReadTimeout, true
		} else if cancelled && err != nil {
			err, broken = ctx.Err(), true
		}
	}()
	for _, id := range ids {
		cf.in.WriteString(id)
		cf.in.WriteByte('\n')
	}
	if err := cf.in.Flush(); err != nil {
		return nil, true, fmt.Errorf("git cat-file --batch: write: %w", err)
	}
	objs = make([]object, len(ids))
	for i, id := range ids {
		limit := int64(maxObjectRead)
		if budget != nil {
			limit = min(limit, *budget)
		}
		if objs[i], err = readAnswer(cf.out, id, limit); err != nil {
			return nil, true, err
		}
		if budget != nil {
			*budget -= int64(len(objs[i].data))
		}
	}
	return objs, false, nil
}

// readAnswer parses one answer strictly: "<id> <type> <size>\n<data>\n"
// or "<id> missing\n". An error means the stream is out of step.
func readAnswer(r *bufio.Reader, id string, limit int64) (object, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return object{}, fmt.Errorf("git cat-file --batch: read: %w", err)
	}
	line = strings.TrimSuffix(line, "\n")
	f := strings.Split(line, " ")
	if len(f) == 2 && f[0] == id && f[1] == "missing" {
		return object{err: fmt.Errorf("%s: %w", id, ErrMissing)}, nil
	}
	if len(f) != 3 || f[0] != id {
		return object{}, fmt.Errorf("git cat-file --batch: unexpected answer %q for %s", line, id)
	}
	size, perr := strconv.ParseInt(f[2], 10, 64)
	if perr != nil || size < 0 {
		return object{}, fmt.Errorf("git cat-file --batch: bad size in %q", line)
	}
	typ := f[1]
	if size > limit {
		if _, err := io.CopyN(io.Discard, r, size+1); err != nil {
			return object{}, fmt.Errorf("git cat-file --batch: read: %w", err)
		}
		return object{typ: typ, err: fmt.Errorf("%s is a %s of %d bytes, too large to read here: %w", id, typ, size, errOverBudget)}, nil
	}
	buf := make([]byte, size+1)
	if _, err := io.ReadFull(r, buf); err != nil {
		return object{}, fmt.Errorf("git cat-file --batch: read: %w", err)
	}
	if buf[size] != '\n' {
		return object{}, fmt.Errorf("git cat-file --batch: object %s not followed by a newline", id)
	}
	return object{typ: typ, data: buf[:size]}, nil
}
