// Package ptyproc runs one agent process under a pseudo-terminal, in its own
// session and process group, with its raw output logged and delivered to one
// consumer.
//
// Back-pressure: output chunks go to a bounded channel (Output). While the
// consumer keeps up nothing is lost. When the channel is full the reader
// waits, which in turn blocks the child's writes to the terminal; but it
// waits at most StallTimeout for one chunk. If that passes, the chunk is
// dropped (counted by Dropped, still written to the log) and, until the
// consumer takes something again, further chunks are dropped without
// waiting. So a stuck consumer costs one stall, never a hung agent.
package ptyproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"
)

// DefaultLogCap is the log size limit when Spec.LogCap is 0.
const DefaultLogCap = 50 << 20

// Spec describes the process to start.
type Spec struct {
	Argv []string
	Dir  string
	// Env is added to the parent's environment (later entries win).
	Env []string
	// Unset names variables removed from the inherited environment, e.g.
	// CLAUDECODE, whose presence makes Claude Code refuse to nest.
	Unset      []string
	Cols, Rows uint16 // initial terminal size (default 80x24)
	// LogPath receives every raw output byte (appended) until LogCap bytes;
	// empty means no log.
	LogPath string
	LogCap  int64 // 0 = DefaultLogCap; negative = no limit
	// OutputBuffer is the capacity of the Output channel in chunks
	// (default 256).
	OutputBuffer int
	// StallTimeout is how long the reader waits for a full Output channel
	// before dropping a chunk (default 5s).
	StallTimeout time.Duration
	// Coalesce is the shortest time between two reads of busy output
	// (default DefaultCoalesce; negative reads as soon as bytes arrive).
	// Output after a quiet spell is read at once, so typing echoes without
	// delay; a stream of small writes is read in one chunk per window,
	// which saves a wakeup, two reads and a delivery per write.
	Coalesce time.Duration
}

// DefaultCoalesce is one frame of the grid: the screen cannot show bytes
// sooner than that anyway.
const DefaultCoalesce = 33 * time.Millisecond

// Proc is a running (or finished) process under a PTY.
type Proc struct {
	cmd       *exec.Cmd
	pty       *os.File
	pid       int
	startTime uint64
	started   time.Time
	tag       string  // EnvTag's value, shared by all its descendants
	created   pidMark // process creation counters from just before the start

	out      chan []byte
	stall    time.Duration
	coalesce time.Duration
	dropped  int64 // bytes; reader-owned until readerDone, then read under mu

	log      *os.File
	logSize  int64
	logCap   int64
	logNoted bool
	logErr   error
	logMu    sync.Mutex // guards logBuf, logTimer, logErr until done, and writes to log
	logBuf   []byte     // output not yet in the log (see writeLog)
	logTimer *time.Timer

	mu     sync.Mutex // guards dropped and the exit fields
	recent Recent     // recent output, for Type's confirmation

	readerDone chan struct{}
	exited     chan struct{} // closed once the child is reaped: the reader stops pacing
	typed      chan struct{} // input was written: the reader looks for its echo at once
	done       chan struct{}
	exitCode   int
	waitErr    error
	writeMu    sync.Mutex // guards pty writes, resizes and closing
	ptyClosed  bool       // under writeMu
	// The reader waits for bytes in the netpoller (waitFile; closing the
	// terminal closes it) or, failing that, in poll(2) on the terminal and
	// wakeR (closing the terminal writes to wakeW); writes wait on wakeR too.
	wakeR, wakeW int
	waitMu       sync.Mutex // guards waitFile and waitClosed
	waitFile     *os.File   // the reader's netpoller wait (waitReadable), if one is on
	waitClosed   bool
	raw          bool // read and written with poll(2), not through the netpoller

	readOnce  sync.Once
	delivered atomic.Int64 // output bytes put on Output
	pause     pauseState   // the reader stopped while another process reads (handoff.go)
	adopted   *adoption    // a terminal whose process another process owns (Adopt)
	logSync   bool         // every read reaches the log before it goes on (Adopt)
}

// Start runs spec.Argv under a new PTY. The child is a session leader, so
// its process group id equals its pid and Stop reaches its descendants.
func Start(spec Spec) (*Proc, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("ptyproc: empty argv")
	}
	cols, rows := spec.Cols, spec.Rows
	if cols == 0 {
		cols = 80
	}
	if rows == 0 {
		rows = 24
	}
	cmd := exec.Command(spec.Argv[0], spec.Argv[1:]...)
	cmd.Dir = spec.Dir
	env := spec.Env
	if spec.Dir != "" {
		// A shell would set PWD; started directly, the child inherits
		// ours, and some CLIs (opencode) take their project from PWD
		// rather than the real working directory.
		env = append([]string{"PWD=" + spec.Dir}, env...)
	}
	tag := newTag()
	cmd.Env = buildEnv(os.Environ(), append(env, EnvTag+"="+tag), spec.Unset)

	p, err := newProc(spec)
	if err != nil {
		return nil, err
	}
	p.cmd, p.tag = cmd, tag
	p.created = readPidMark()
	master, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: cols, Rows: rows})
	if err != nil {
		if p.log != nil {
			p.log.Close()
		}
		return nil, fmt.Errorf("ptyproc: start %s: %w", spec.Argv[0], err)
	}
	if err = p.setMaster(master); err != nil {
		master.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if p.log != nil {
			p.log.Close()
		}
		return nil, fmt.Errorf("ptyproc: start %s: %w", spec.Argv[0], err)
	}
	p.pid = cmd.Process.Pid
	p.started = time.Now()
	// The child cannot be reaped before our Wait, so its start time is
	// there to read.
	p.startTime, _ = StartTimeOf(p.pid)
	p.beginReading()
	go p.waitLoop()
	return p, nil
}

// newProc is a Proc for spec without its process and terminal: its
// output channel, its limits and its log opened.
func newProc(spec Spec) (*Proc, error) {
	p := &Proc{
		stall:      spec.StallTimeout,
		coalesce:   spec.Coalesce,
		logCap:     spec.LogCap,
		readerDone: make(chan struct{}),
		exited:     make(chan struct{}),
		done:       make(chan struct{}),
		typed:      make(chan struct{}, 1),
	}
	p.pause.poke = make(chan struct{}, 1)
	if p.stall <= 0 {
		p.stall = 5 * time.Second
	}
	if p.coalesce == 0 {
		p.coalesce = DefaultCoalesce
	}
	if p.logCap == 0 {
		p.logCap = DefaultLogCap
	}
	n := spec.OutputBuffer
	if n <= 0 {
		n = 256
	}
	p.out = make(chan []byte, n)
	if spec.LogPath != "" {
		f, err := os.OpenFile(spec.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600) // what the agent printed: the user's only
		if err != nil {
			return nil, fmt.Errorf("ptyproc: open log: %w", err)
		}
		if st, err := f.Stat(); err == nil {
			p.logSize = st.Size()
		}
		p.log = f
	}
	return p, nil
}

// setMaster makes master the terminal's side this Proc reads and writes.
func (p *Proc) setMaster(master *os.File) error {
	if runtime.GOOS == "linux" {
		f, r, w, err := unwatched(master)
		if err != nil {
			return err
		}
		p.pty, p.wakeR, p.wakeW, p.raw = f, r, w, true
		return nil
	}
	// Elsewhere poll(2) may not take terminals (macOS): the netpoller
	// reads them.
	p.pty = pollable(master)
	return nil
}

// beginReading starts the reader once.
func (p *Proc) beginReading() { p.readOnce.Do(func() { go p.readLoop() }) }

func (p *Proc) readLoop() {
	defer close(p.readerDone)
	defer close(p.out)
	buf := make([]byte, 32<<10)
	stalled := false
	pace := pacer{window: p.coalesce}
	var next time.Time // when to read again; zero: at once
	quiet := 0         // points of the grid in a row that found nothing
	for {
		if p.pause.req.Load() {
			// Another process reads the terminal now (handoff.go).
			if !p.park() {
				return
			}
			next = time.Time{}
		}
		// Busy: let the child's next writes gather in the terminal's
		// buffer rather than wake for each (a full buffer only makes the
		// child wait, as a slow reader would).
		typed := false
		if d := time.Until(next); !next.IsZero() && d > 0 {
			// Once the child is gone nothing more gathers: what is left is
			// read at once, so its exit is not a window late.
			// Typing is answered at once, not at the grid's next point;
			// its echo comes when the terminal has handled the input, so
			// the reader waits for it.
			t := time.NewTimer(d)
			select {
			case <-t.C:
			case <-p.exited:
			case <-p.typed:
				typed = true
			case <-p.pause.poke:
			}
			t.Stop()
		}
		var n int
		var err error
		if !next.IsZero() && p.raw && !typed {
			n, err = p.readNow(buf)
		} else {
			n, err = p.read(buf)
		}
		if err == errPaused {
			continue
		}
		next = time.Time{}
		switch {
		case pace.window <= 0 || err != nil:
		case n > 0:
			quiet = 0
			next = pace.after(n, time.Now())
		case quiet < quietPoints:
			quiet++
			next = pace.next(time.Now())
		}
		if n > 0 {
			// Logged first: an adopted terminal's owner finds in the log
			// all this process read (Adopt).
			p.writeLog(buf[:n])
			chunk := append([]byte(nil), buf[:n]...)
			p.recent.Add(chunk)
			if stalled = p.deliver(chunk, stalled); !stalled {
				p.delivered.Add(int64(n))
			}
		}
		if err != nil {
			// EIO once the last holder of the terminal's slave side is gone;
			// "file already closed" after waitLoop gave up on a straggler.
			return
		}
	}
}

// deliver applies the back-pressure policy described in the package doc.
func (p *Proc) deliver(chunk []byte, stalled bool) bool {
	select {
	case p.out <- chunk:
		return false
	default:
	}
	if stalled {
		p.mu.Lock()
		p.dropped += int64(len(chunk))
		p.mu.Unlock()
		return true
	}
	t := time.NewTimer(p.stall)
	defer t.Stop()
	var released <-chan struct{} // a terminal given back: nothing waits for its consumer
	if p.adopted != nil {
		released = p.adopted.released
	}
	select {
	case p.out <- chunk:
		return false
	case <-released:
		p.mu.Lock()
		p.dropped += int64(len(chunk))
		p.mu.Unlock()
		return true
	case <-t.C:
		p.mu.Lock()
		p.dropped += int64(len(chunk))
		p.mu.Unlock()
		return true
	}
}

func (p *Proc) waitLoop() {
	awaitExit(p.cmd.Process.Pid)
	err := p.cmd.Wait()
	close(p.exited)
	code := p.cmd.ProcessState.ExitCode()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil
	}
	// A background grandchild may still hold the terminal open; give the
	// reader a moment to drain what the child wrote, then cut it off.
	select {
	case <-p.readerDone:
	case <-time.After(2 * time.Second):
		p.closePTY()
		<-p.readerDone
	}
	p.closePTY()
	// Nothing waits on the wake pipe once the reader is done and the
	// terminal closed (Write and Resize check ptyClosed first).
	if p.raw {
		unix.Close(p.wakeR)
		unix.Close(p.wakeW)
	}
	// The agent is gone; so is everything it started (its group, and what
	// escaped it). Nothing an agent leaves behind may outlive it.
	p.killGroup()
	p.sweep()
	if p.log != nil {
		p.closeLog()
	}
	p.mu.Lock()
	p.exitCode, p.waitErr = code, err
	p.mu.Unlock()
	close(p.done)
}

// Output delivers raw output chunks; it is closed after the process exited
// and its output was read. Each chunk belongs to the receiver.
func (p *Proc) Output() <-chan []byte {
	p.beginReading() // an adopted terminal is read from its first consumer on
	return p.out
}

// Dropped is the number of output bytes not delivered on Output because the
// consumer did not keep up (they are still in the log).
func (p *Proc) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// LogErr reports a failure writing the log, after which logging stopped.
// Valid after Done.
func (p *Proc) LogErr() error {
	<-p.done
	return p.logErr
}

// closePTY closes the terminal once, under writeMu: Write and Resize use
// its descriptor, and os.File's Fd races with Close.
func (p *Proc) closePTY() {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if !p.ptyClosed {
		p.ptyClosed = true
		// The reader may be waiting in poll(2), which a close does not
		// end: wake it first. Its reference keeps the descriptor open
		// (and its number unused) until it returns.
		if p.raw {
			_, _ = unix.Write(p.wakeW, []byte{0})
			p.stopWaiting()
		}
		p.pty.Close()
	}
}

var errExited = errors.New("ptyproc: process has exited")

// Write sends input to the process as if typed.
func (p *Proc) Write(b []byte) (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.ptyClosed {
		return 0, errExited
	}
	select {
	case <-p.done:
		return 0, errExited
	default:
	}
	n, err := p.write(b)
	if n > 0 {
		select {
		case p.typed <- struct{}{}:
		default:
		}
	}
	return n, err
}

// Resize changes the terminal size; the kernel sends SIGWINCH to the
// foreground process group.
func (p *Proc) Resize(cols, rows uint16) error {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.ptyClosed {
		return errExited
	}
	// Through SyscallConn: Fd (which pty.Setsize calls) would put the
	// descriptor back into blocking mode.
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return err
	}
	var ierr error
	if err := rc.Control(func(fd uintptr) {
		ierr = unix.IoctlSetWinsize(int(fd), unix.TIOCSWINSZ, &unix.Winsize{Col: cols, Row: rows})
	}); err != nil {
		return err
	}
	return ierr
}

// Done is closed when the process has exited, been reaped, and its output
// has been read to the end.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait blocks until Done and returns the exit code (-1 when the process was
// ended by a signal). A non-zero exit is not an error.
func (p *Proc) Wait() (int, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.exitCode, p.waitErr
}

// Pid returns the process id, which is also its process group id.
func (p *Proc) Pid() int { return p.pid }

// StartTime returns the process start time (see StartTimeOf); with the pid
// it identifies the process across a restart of Chorus (see Alive).
func (p *Proc) StartTime() uint64 { return p.startTime }

// Started returns the wall-clock time Start returned.
func (p *Proc) Started() time.Time { return p.started }

// Stop ends the process group: SIGTERM, then SIGKILL once grace has passed
// (at once when grace <= 0). Whatever is left of the group after the leader
// exits is killed too, so grandchildren that ignore SIGTERM or SIGHUP do not
// outlive the agent. Stop returns once the process has been reaped.
func (p *Proc) Stop(grace time.Duration) {
	// Whatever the agent started ends with it, in its group or not.
	defer p.sweep()
	select {
	case <-p.done:
		p.killGroup()
		return
	default:
	}
	if grace > 0 {
		_ = syscall.Kill(-p.pid, syscall.SIGTERM)
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	p.killGroup()
	<-p.done
	p.killGroup()
}

// killGroup is safe after the leader is reaped: POSIX systems do not reuse
// a number while a process group of that id still has members.
func (p *Proc) killGroup() { _ = syscall.Kill(-p.pid, syscall.SIGKILL) }
