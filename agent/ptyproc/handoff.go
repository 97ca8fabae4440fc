package ptyproc

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Handing the terminal to another process. The process that started the
// agent (an agent host) keeps it, its group and its exit, and passes a
// duplicate of the master side to another (its engine), which reads and
// writes it as its own (Adopt). Exactly one of the two reads at a time,
// or the output would be split between them: the owner's reader is
// paused (Pause) before the other gets the descriptor, and resumes
// (Resume) only once the other is gone.

var errPaused = errors.New("ptyproc: reader paused")

// pauseState is the reader's pause. req is read on every loop of the
// reader; the channels belong to one pause.
type pauseState struct {
	req     atomic.Bool
	poke    chan struct{} // ends the reader's wait for its window
	mu      sync.Mutex
	on      bool
	parked  chan struct{} // closed by the reader once it stopped
	resumed chan struct{} // closed by Resume
}

// Paused is where a paused reader stopped.
type Paused struct {
	// Delivered is how many output bytes went out on Output so far: the
	// owner's consumer has the stream up to there once it took that many.
	Delivered int64
	// LogSize is the log's size with all that was read in it: the next
	// byte of output, read by the other process, goes to the log there.
	// -1: no log.
	LogSize int64
}

// Pause stops the reader and returns once it has: it reads nothing more
// until Resume. A reader already ended (the process exited) is not
// waited for. Pausing a paused reader says where it stopped again.
func (p *Proc) Pause() (Paused, error) {
	ps := &p.pause
	ps.mu.Lock()
	if !ps.on {
		ps.on = true
		ps.parked, ps.resumed = make(chan struct{}), make(chan struct{})
		ps.req.Store(true)
	}
	parked := ps.parked
	ps.mu.Unlock()
	if err := p.interrupt(); err != nil {
		p.Resume()
		return Paused{}, err
	}
	select {
	case <-parked:
	case <-p.readerDone:
	}
	return Paused{Delivered: p.delivered.Load(), LogSize: p.logEnd()}, nil
}

// interrupt ends the reader's wait for output, so it sees the pause.
func (p *Proc) interrupt() error {
	select {
	case p.pause.poke <- struct{}{}:
	default:
	}
	if !p.raw {
		// In the netpoller: a deadline now ends its read.
		if err := p.pty.SetReadDeadline(time.Now()); err != nil {
			return errors.New("ptyproc: this terminal's reader cannot be paused: " + err.Error())
		}
		return nil
	}
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	if p.waitFile != nil {
		p.waitFile.Close()
	}
	return nil
}

// park holds the reader while paused; false: the process exited
// meanwhile, and what is left is for the one reading now.
func (p *Proc) park() bool {
	ps := &p.pause
	ps.mu.Lock()
	parked, resumed := ps.parked, ps.resumed
	ps.mu.Unlock()
	if parked == nil {
		return true
	}
	close(parked)
	select {
	case <-resumed:
		return true
	case <-p.exited:
		return false
	}
}

// Resume lets a paused reader read again.
func (p *Proc) Resume() {
	ps := &p.pause
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if !ps.on {
		return
	}
	ps.on = false
	ps.req.Store(false)
	close(ps.resumed)
	ps.parked, ps.resumed = nil, nil
	// The other process appended to the log meanwhile: its cap counts
	// from the file's size.
	p.logMu.Lock()
	if p.log != nil {
		if st, err := p.log.Stat(); err == nil {
			p.logSize = st.Size()
		}
	}
	p.logMu.Unlock()
}

// logEnd writes what the log holds back and returns its size (-1: none,
// or it failed).
func (p *Proc) logEnd() int64 {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	if p.log == nil || p.logErr != nil {
		return -1
	}
	p.flushLogLocked()
	st, err := p.log.Stat()
	if err != nil || p.logErr != nil {
		return -1
	}
	return st.Size()
}

// MasterFD returns a duplicate of the terminal's master side
// (close-on-exec) to hand to another process; the caller closes it.
func (p *Proc) MasterFD() (int, error) {
	p.writeMu.Lock()
	defer p.writeMu.Unlock()
	if p.ptyClosed {
		return -1, errExited
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return -1, err
	}
	nfd, derr := -1, error(nil)
	if err := rc.Control(func(fd uintptr) { nfd, derr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	return nfd, derr
}

// adoption is what an adopted terminal waits for: its owner's word that
// the process ended, or that this process must let go of it.
type adoption struct {
	once     sync.Once
	note     chan struct{} // closed by Exited or Release
	drain    bool          // Exited: read what is left first
	code     int
	released chan struct{} // closed by Release
}

// Adopt reads and writes a terminal whose master side fd another process
// handed over (an agent host, which started pid and reaps it), as Start's
// Proc does its own: the same reading and pacing, log and back-pressure;
// its reading begins with the first call of Output. Every read reaches
// the log before it goes on, so the owner, told this process is gone,
// finds all it read there. Stop and the process's exit are the owner's:
// it reports the exit with Exited.
func Adopt(fd int, spec Spec, pid int, startTime uint64, started time.Time) (*Proc, error) {
	p, err := newProc(spec)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	p.logSync = true
	p.adopted = &adoption{note: make(chan struct{}), released: make(chan struct{})}
	p.pid, p.startTime, p.started = pid, startTime, started
	if runtime.GOOS == "linux" {
		// The descriptor comes non-blocking, and os.NewFile would put it
		// (and unwatched its duplicate) into the netpoller: every write
		// of the agent would wake this process again. Its owner's reader
		// is paused: nobody reads it meanwhile.
		_ = unix.SetNonblock(fd, false)
	}
	master := os.NewFile(uintptr(fd), "pty-master")
	if master == nil {
		return nil, errors.New("ptyproc: not a descriptor")
	}
	if err := p.setMaster(master); err != nil {
		master.Close()
		if p.log != nil {
			p.log.Close()
		}
		return nil, err
	}
	go p.adoptWait()
	return p, nil
}

// Exited is the owner's word that the process ended with code: what is
// left in the terminal is read (for up to 2s, as Start's Proc does), then
// Done closes.
func (p *Proc) Exited(code int) {
	if a := p.adopted; a != nil {
		a.once.Do(func() { a.drain, a.code = true, code; close(a.note) })
	}
}

// Release stops reading and writing an adopted terminal at once (its
// owner reads it from now on); Done closes with code -1.
func (p *Proc) Release() {
	if a := p.adopted; a != nil {
		a.once.Do(func() { a.code = -1; close(a.released); close(a.note) })
	}
}

func (p *Proc) adoptWait() {
	a := p.adopted
	<-a.note
	close(p.exited)
	p.beginReading()
	if a.drain {
		select {
		case <-p.readerDone:
		case <-time.After(2 * time.Second):
		}
	}
	p.closePTY()
	<-p.readerDone
	if p.raw {
		unix.Close(p.wakeR)
		unix.Close(p.wakeW)
	}
	if p.log != nil {
		p.closeLog()
	}
	p.mu.Lock()
	p.exitCode = a.code
	p.mu.Unlock()
	close(p.done)
}
