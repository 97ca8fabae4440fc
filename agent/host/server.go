package host

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/unixsock"
)

// Options configure a host process.
type Options struct {
	Meta     Meta          // written to MetaPath once the socket listens
	MetaPath string        // "" writes none
	Orphan   time.Duration // how long the host waits for an engine before it stops its agent (0: 10 minutes)
	Binary   string        // the chorus version, reported to engines
	// Ready, when set, is called once the socket listens.
	Ready func()
}

// DefaultOrphan is how long a host waits without an engine by default.
const DefaultOrphan = 10 * time.Minute

// stopGrace is the grace of a stop the host decides itself.
const stopGrace = 10 * time.Second

// server is one host: at most one agent, at most one engine connected.
type server struct {
	opt Options

	mu      sync.Mutex
	proc    *ptyproc.Proc
	emu     *term.Emulator
	info    Info
	cur     *session // the engine connected now
	exit    *Exit    // once the agent ended and its output was read
	byed    bool     // an engine took the exit
	orphan  *time.Timer
	ended   chan struct{} // closed when the host should end
	endOnce sync.Once
}

type session struct {
	c      net.Conn
	out    *outbox
	detach func()
}

// Serve runs a host on the Unix socket at path until its agent has ended
// and an engine took the exit, or no engine came within the orphan time
// (then a running agent is stopped first). ctx ending stops it the same
// way.
func Serve(ctx context.Context, path string, opt Options) error {
	if opt.Orphan <= 0 {
		opt.Orphan = DefaultOrphan
	}
	ln, err := listen(path)
	if err != nil {
		return err
	}
	defer ln.Close()
	s := &server{opt: opt, ended: make(chan struct{})}
	opt.Meta.Socket, opt.Meta.HostPID, opt.Meta.Version = path, os.Getpid(), Version
	s.opt.Meta = opt.Meta
	if opt.MetaPath != "" {
		if err := writeMeta(opt.MetaPath, opt.Meta); err != nil {
			return err
		}
		defer os.Remove(opt.MetaPath)
	}
	s.mu.Lock()
	s.armOrphan()
	s.mu.Unlock()
	if opt.Ready != nil {
		opt.Ready()
	}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serveConn(c.(*net.UnixConn))
		}
	}()
	select {
	case <-s.ended:
	case <-ctx.Done():
		s.stopAgent()
	}
	ln.Close()
	s.mu.Lock()
	if s.cur != nil {
		s.cur.out.close()
	}
	s.mu.Unlock()
	return nil
}

func (s *server) end() { s.endOnce.Do(func() { close(s.ended) }) }

// armOrphan starts the wait for an engine. Caller holds s.mu.
func (s *server) armOrphan() {
	if s.orphan != nil {
		s.orphan.Stop()
	}
	s.orphan = time.AfterFunc(s.opt.Orphan, func() {
		s.mu.Lock()
		alone := s.cur == nil
		s.mu.Unlock()
		if alone {
			// No engine came back: the agent stops as a stop would end
			// it; its worktree is left as it is for the next run.
			s.stopAgent()
			s.end()
		}
	})
}

// stopAgent ends a running agent and waits for its exit to be read.
func (s *server) stopAgent() {
	s.mu.Lock()
	p := s.proc
	s.mu.Unlock()
	if p != nil {
		p.Stop(stopGrace)
		s.waitExit()
	}
}

func (s *server) waitExit() {
	for {
		s.mu.Lock()
		done := s.exit != nil
		s.mu.Unlock()
		if done {
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-s.ended:
			return
		}
	}
}

func (s *server) serveConn(c *net.UnixConn) {
	defer c.Close()
	if uid, err := unixsock.PeerUID(c); err != nil || uid != os.Getuid() {
		return // another user's process: nothing to say to it
	}
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	typ, b, err := readFrame(c, nil)
	if err != nil || typ != fHello {
		return
	}
	var h hello
	if json.Unmarshal(b, &h) != nil {
		return
	}
	_ = writeJSON(c, fHello, hello{Version: Version, Role: "host", Binary: s.opt.Binary})
	if h.Role == "stop" {
		// Any version may ask this: the hello's layout never changes.
		s.stopAgent()
		s.end()
		return
	}
	if h.Version != Version {
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	sess := &session{c: c, out: newOutbox()}
	go sess.out.run(c)
	defer sess.out.close()
	s.mu.Lock()
	if s.proc != nil {
		s.adopt(sess)
	}
	s.mu.Unlock()
	defer s.leave(sess)
	var buf []byte
	for {
		typ, b, err := readFrame(c, buf)
		if err != nil {
			return
		}
		if cap(b) > cap(buf) {
			buf = b
		}
		switch typ {
		case fStart:
			var sp Spec
			if err := json.Unmarshal(b, &sp); err != nil {
				sess.out.put(fError, []byte("start: "+err.Error()))
				continue
			}
			if err := s.start(sp, sess); err != nil {
				// A host whose agent could not start has nothing to keep.
				sess.out.put(fError, []byte(err.Error()))
				s.mu.Lock()
				idle := s.proc == nil
				s.mu.Unlock()
				if idle {
					s.end()
				}
			}
		case fInput:
			if p := s.agent(); p != nil {
				_, _ = p.Write(append([]byte(nil), b...))
			}
		case fResize:
			var z size
			if json.Unmarshal(b, &z) == nil && z.Cols >= 2 && z.Rows >= 2 {
				s.mu.Lock()
				p, emu := s.proc, s.emu
				s.mu.Unlock()
				if p != nil {
					emu.Resize(int(z.Cols), int(z.Rows))
					_ = p.Resize(z.Cols, z.Rows)
				}
			}
		case fStop:
			var r stopReq
			_ = json.Unmarshal(b, &r)
			if p := s.agent(); p != nil {
				go p.Stop(time.Duration(r.GraceMs) * time.Millisecond)
			}
		case fSnap:
			s.mu.Lock()
			emu := s.emu
			s.mu.Unlock()
			if emu != nil {
				w, h, st := emu.State()
				sess.out.put(fState, stateFrame(w, h, st))
			}
		case fBye:
			s.mu.Lock()
			s.byed = true
			done := s.exit != nil
			s.mu.Unlock()
			if done {
				s.end()
			}
		}
	}
}

func (s *server) agent() *ptyproc.Proc {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// adopt makes sess the engine's connection: the agent's info, its screen
// as it is, then its output from there on. Caller holds s.mu.
func (s *server) adopt(sess *session) {
	if old := s.cur; old != nil {
		// A newer engine wins: the old connection is dead or stale.
		old.detach()
		old.out.close()
		old.c.Close()
	}
	s.cur = sess
	if s.orphan != nil {
		s.orphan.Stop()
	}
	b, _ := json.Marshal(s.info)
	sess.out.put(fInfo, b)
	sess.detach = s.emu.Attach(&term.Tap{
		Output: func(p []byte) { sess.out.put(fOutput, p) },
		Resize: func(int, int) {},
	}, func(w, h int, state []byte) {
		sess.out.put(fState, stateFrame(w, h, state))
	})
	if s.exit != nil {
		b, _ := json.Marshal(s.exit)
		sess.out.put(fExit, b)
	}
}

func (s *server) leave(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cur != sess {
		return
	}
	if sess.detach != nil {
		sess.detach()
	}
	s.cur = nil
	if s.exit != nil && s.byed {
		s.end()
		return
	}
	s.armOrphan()
}

func (s *server) start(sp Spec, sess *session) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return errors.New("this agent host already runs an agent")
	}
	if sp.Scrollback <= 0 {
		sp.Scrollback = 5000
	}
	cols, rows := int(sp.Cols), int(sp.Rows)
	if cols < 2 || rows < 2 {
		cols, rows = 80, 24
	}
	rep := replies{ch: make(chan []byte, 64)}
	// The emulator answers the agent's terminal queries (DA1, CPR…): it is
	// the one copy that sees every byte from the start.
	emu := term.New(cols, rows, term.WithScrollback(sp.Scrollback), term.WithReplies(rep))
	p, err := ptyproc.Start(ptyproc.Spec{Argv: sp.Argv, Dir: sp.Dir, Env: sp.Env, Unset: sp.Unset,
		Cols: uint16(cols), Rows: uint16(rows), LogPath: sp.LogPath})
	if err != nil {
		return fmt.Errorf("starting %s: %w", sp.Argv[0], err)
	}
	go rep.run(p)
	s.proc, s.emu = p, emu
	s.info = Info{Meta: s.opt.Meta, Spec: sp, Pid: p.Pid(), StartTime: p.StartTime(), Started: p.Started(), Binary: s.opt.Binary}
	if s.cur == sess {
		s.cur = nil
	}
	if s.cur == nil {
		s.adopt(sess) // before the pump: every byte reaches the engine as output
	}
	go s.pump(p, emu)
	return nil
}

// replies hands the emulator's answers to a goroutine that writes them to
// the agent: an agent that does not read its input must not stall its
// output (the emulator writes replies under its lock). Past 64 waiting
// answers, more are dropped.
type replies struct{ ch chan []byte }

func (r replies) Write(b []byte) (int, error) {
	select {
	case r.ch <- append([]byte(nil), b...):
	default:
	}
	return len(b), nil
}

func (r replies) run(p *ptyproc.Proc) {
	for {
		select {
		case b := <-r.ch:
			if _, err := p.Write(b); err != nil {
				return
			}
		case <-p.Done():
			return
		}
	}
}

// pump feeds the agent's output to the emulator (whose tap hands it to the
// engine), then records the exit.
func (s *server) pump(p *ptyproc.Proc, emu *term.Emulator) {
	for chunk := range p.Output() {
		_, _ = emu.Write(chunk)
	}
	code, _ := p.Wait()
	ex := &Exit{Code: code, Dropped: p.Dropped(), HostCPU: selfCPU()}
	s.mu.Lock()
	s.exit = ex
	if s.cur != nil {
		b, _ := json.Marshal(ex)
		s.cur.out.put(fExit, b)
	}
	s.mu.Unlock()
}

func stateFrame(w, h int, state []byte) []byte {
	b := make([]byte, 8, 8+len(state))
	binary.BigEndian.PutUint32(b, uint32(w))
	binary.BigEndian.PutUint32(b[4:], uint32(h))
	return append(b, state...)
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
