package ptyproc

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The terminal's master side: non-blocking, outside the netpoller on
// Linux (poll(2) with a wake pipe), reads and writes that wait only when
// the terminal has nothing.

// pollable returns the terminal's master side in non-blocking mode, so
// reads wait in Go's netpoller instead of each holding a thread in read(2):
// with several busy agents the blocking reads cost more CPU in thread
// hand-offs than the terminals themselves. On any failure the original
// (blocking, still correct) file is kept.
func pollable(master *os.File) *os.File {
	fd, err := dupCloexec(master)
	if err != nil {
		return master
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return master
	}
	f := os.NewFile(uintptr(fd), master.Name())
	master.Close()
	return f
}

// dupCloexec duplicates f's descriptor close-on-exec in one step, so an
// agent started meanwhile cannot inherit another agent's terminal.
func dupCloexec(f *os.File) (int, error) {
	return unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0)
}

// unwatched returns the terminal's master side in non-blocking mode on a
// descriptor Go's netpoller does not watch, and the pipe that wakes its
// reader. Watched, every write of the child woke the process (the
// netpoller's epoll reports each one, wanted or not), even while the
// reader gathers a busy agent's output for a frame: with eight busy
// agents that was more CPU than reading and parsing their output. The
// reader waits only when it has nothing to read, in the netpoller on a
// duplicate registered for that wait (waitReadable).
func unwatched(master *os.File) (f *os.File, wakeR, wakeW int, err error) {
	// Fd puts the descriptor in blocking mode, so its duplicate makes a
	// file os.NewFile does not register; closing master unregisters it.
	fd, err := dupCloexec(master)
	if err != nil {
		return nil, 0, 0, err
	}
	f = os.NewFile(uintptr(fd), master.Name())
	master.Close()
	var pfd [2]int
	// Under ForkLock, as os.Pipe does where pipe2 is missing: an agent
	// started in between would inherit the pipe otherwise.
	syscall.ForkLock.RLock()
	if err = unix.Pipe(pfd[:]); err == nil {
		unix.CloseOnExec(pfd[0])
		unix.CloseOnExec(pfd[1])
	}
	syscall.ForkLock.RUnlock()
	if err == nil {
		err = unix.SetNonblock(pfd[1], true)
	}
	if err == nil {
		err = unix.SetNonblock(fd, true)
	}
	if err != nil {
		f.Close()
		return nil, 0, 0, err
	}
	return f, pfd[0], pfd[1], nil
}

// read reads what the terminal has, waiting in the netpoller when it has
// nothing (waitReadable; in poll(2) if the netpoller refuses it); after
// closePTY it returns os.ErrClosed.
func (p *Proc) read(buf []byte) (n int, err error) {
	if !p.raw {
		n, err = p.pty.Read(buf)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			// Pause cut the wait short (handoff.go).
			_ = p.pty.SetReadDeadline(time.Time{})
			return n, errPaused
		}
		return n, err
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Read(func(fd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}, {Fd: int32(p.wakeR), Events: unix.POLLIN}}
		for {
			n, err = rawRead(fd, buf)
			switch err {
			case unix.EINTR:
				continue
			case unix.EAGAIN:
			default:
				if n < 0 {
					n = 0
				}
				if n == 0 && err == nil {
					err = io.EOF // the other side is gone (EIO on Linux)
				}
				return true
			}
			switch werr := p.waitReadable(fd); werr {
			case nil:
				continue
			case os.ErrClosed, errPaused:
				n, err = 0, werr
				return true
			}
			// The netpoller would not take it: wait in poll(2), looking
			// for a pause now and then.
			if _, perr := unix.Poll(fds, 100); perr != nil && perr != unix.EINTR {
				n, err = 0, perr
				return true
			}
			if fds[1].Revents != 0 {
				n, err = 0, os.ErrClosed
				return true
			}
			if p.pause.req.Load() {
				n, err = 0, errPaused
				return true
			}
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// readNow reads what the terminal has without waiting: 0 bytes and no
// error when it has nothing. Only on a terminal read outside the
// netpoller (raw).
func (p *Proc) readNow(buf []byte) (n int, err error) {
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return 0, err
	}
	cerr := rc.Read(func(fd uintptr) bool {
		for {
			n, err = rawRead(fd, buf)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				n, err = 0, nil
			case n < 0:
				n = 0
			case n == 0 && err == nil:
				err = io.EOF // the other side is gone (EIO on Linux)
			}
			return true
		}
	})
	if cerr != nil {
		return 0, cerr
	}
	return n, err
}

// write writes all of b, waiting in poll(2) while the terminal's input
// is full (the child is not reading). Under writeMu.
func (p *Proc) write(b []byte) (int, error) {
	if !p.raw {
		return p.pty.Write(b)
	}
	rc, err := p.pty.SyscallConn()
	if err != nil {
		return 0, err
	}
	done := 0
	var werr error
	cerr := rc.Write(func(fd uintptr) bool {
		for done < len(b) {
			n, err := unix.Write(int(fd), b[done:])
			if n > 0 {
				done += n
			}
			switch err {
			case nil, unix.EINTR:
				continue
			case unix.EAGAIN:
				fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}, {Fd: int32(p.wakeR), Events: unix.POLLIN}}
				if _, perr := unix.Poll(fds, -1); perr != nil && perr != unix.EINTR {
					werr = perr
					return true
				}
				if fds[1].Revents != 0 {
					werr = os.ErrClosed
					return true
				}
				if fds[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0 && fds[0].Revents&unix.POLLOUT == 0 {
					// Nobody holds the terminal's other side any more:
					// its input will never drain.
					werr = unix.EIO
					return true
				}
			default:
				werr = err
				return true
			}
		}
		return true
	})
	if cerr != nil {
		return done, cerr
	}
	return done, werr
}

// waitReadable waits until the terminal has something to read (or its
// other side is gone) in Go's netpoller, on a duplicate of fd registered
// for this wait only: the terminal is watched while the reader has
// nothing, never while it gathers a busy agent's output. A wait in
// poll(2) held a thread in a system call for each quiet agent, and the
// runtime paid for every such thread in hand-offs and its monitor's
// wake-ups: with 8 agents writing 10 times a second, more than the reading.
// After closePTY it returns os.ErrClosed.
func (p *Proc) waitReadable(fd uintptr) error {
	p.waitMu.Lock()
	if p.waitClosed {
		p.waitMu.Unlock()
		return os.ErrClosed
	}
	if p.pause.req.Load() {
		// Checked under waitMu, where Pause looks for a wait to end.
		p.waitMu.Unlock()
		return errPaused
	}
	nfd, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		p.waitMu.Unlock()
		return err
	}
	// fd is non-blocking, and so is its duplicate: NewFile registers it.
	f := os.NewFile(uintptr(nfd), "pty-wait")
	p.waitFile = f
	p.waitMu.Unlock()
	defer func() {
		p.waitMu.Lock()
		p.waitFile = nil
		p.waitMu.Unlock()
		f.Close()
	}()
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	err = rc.Read(func(wfd uintptr) bool {
		fds := []unix.PollFd{{Fd: int32(wfd), Events: unix.POLLIN}}
		n, perr := unix.Poll(fds, 0)
		return perr == nil && n > 0 || perr != nil && perr != unix.EINTR
	})
	p.waitMu.Lock()
	closed := p.waitClosed
	p.waitMu.Unlock()
	if closed {
		return os.ErrClosed
	}
	if p.pause.req.Load() {
		return errPaused
	}
	return err
}

// stopWaiting ends a waitReadable in progress, and those after it.
func (p *Proc) stopWaiting() {
	p.waitMu.Lock()
	defer p.waitMu.Unlock()
	p.waitClosed = true
	if p.waitFile != nil {
		p.waitFile.Close()
	}
}
