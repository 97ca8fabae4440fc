package host

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/unixsock"
	"github.com/chorus-dev/chorus/worktree"
)

// Options configure a host process.
type Options struct {
	Meta     Meta          // written to MetaPath once the socket listens
	MetaPath string        // "" writes none
	Orphan   time.Duration // how long the host waits for an engine before it stops its agent (0: 10 minutes)
	Binary   string        // the chorus version, reported to engines
	// Ready, when set, is called once the socket listens.
	Ready func()
	// WorkRoot is where a Spec.Git clone and its signal socket go ("":
	// the working directory, a pod's own).
	WorkRoot string
	// CheckpointPath is where the host keeps the history of its engine's
	// last checkpoint ("": in memory). The host reads it back only when
	// an engine connects after a loss, so on disk it costs the host no
	// memory between checkpoints: it is most of what a host would hold.
	CheckpointPath string

	// tailCap is the mirror's (0: defaultTailCap), smaller in tests.
	tailCap int64
}

// DefaultOrphan is how long a host waits without an engine by default.
const DefaultOrphan = 10 * time.Minute

// StopGrace is the grace of a stop the host decides itself (a pod told
// to go included): a pod's own grace must cover it and the push after.
const StopGrace = 10 * time.Second

// server is one host: at most one agent, at most one engine connected.
type server struct {
	opt Options

	mu      sync.Mutex
	cond    *sync.Cond // on mu: the pump took more output
	hmu     sync.Mutex // one hand-over at a time
	pumped  int64      // output bytes the pump took from the agent
	proc    *ptyproc.Proc
	mir     *mirror
	info    Info
	cur     *session // the engine connected now
	conns   int      // engines connected, adopted or not yet
	exit    *Exit    // once the agent ended and its output was read
	byed    bool     // an engine took the exit
	orphan  *time.Timer
	ended   chan struct{} // closed when the host should end
	endOnce sync.Once
	git     *gitWork // the clone, when the agent works far from the hub (Spec.Git)
	relay   relay
	ctx     context.Context
}

type session struct {
	c     net.Conn
	out   *outbox
	relay bool   // the engine cannot take the terminal: the host reads it
	fd    bool   // the engine holds the terminal and reads it (mirror.remote)
	n     uint64 // the order it connected in: a later one replaces it
}

// Serve runs a host on the Unix socket at path until its agent has ended
// and an engine took the exit, or no engine came within the orphan time
// (then a running agent is stopped first). ctx ending stops it the same
// way.
func Serve(ctx context.Context, path string, opt Options) error {
	if opt.Orphan <= 0 {
		opt.Orphan = DefaultOrphan
	}
	if opt.tailCap <= 0 {
		opt.tailCap = defaultTailCap
	}
	ln, err := listen(path)
	if err != nil {
		return err
	}
	defer ln.Close()
	s := &server{opt: opt, ended: make(chan struct{}), ctx: ctx}
	s.cond = sync.NewCond(&s.mu)
	opt.Meta.Socket, opt.Meta.HostPID, opt.Meta.Version = path, os.Getpid(), Version
	s.opt.Meta = opt.Meta
	if opt.MetaPath != "" {
		if err := writeMeta(opt.MetaPath, opt.Meta); err != nil {
			return err
		}
		defer os.Remove(opt.MetaPath)
	}
	if opt.CheckpointPath != "" {
		defer os.Remove(opt.CheckpointPath)
	}
	s.mu.Lock()
	s.armOrphan()
	s.mu.Unlock()
	if opt.Ready != nil {
		opt.Ready()
	}
	go func() {
		for n := uint64(1); ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go s.serveConn(c.(*net.UnixConn), n)
		}
	}()
	select {
	case <-s.ended:
	case <-ctx.Done():
		s.pushTold()
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
		alone := s.cur == nil && s.conns == 0
		s.mu.Unlock()
		if alone {
			// No engine came back: the agent stops as a stop would end
			// it; its uncommitted work is kept under refs/chorus/kept/
			// and its worktree left as it is for the next run.
			s.stopAgent()
			s.keepWork()
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
		p.Stop(StopGrace)
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

func (s *server) serveConn(c *net.UnixConn, n uint64) {
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
	// An engine came: the orphan wait ends, also before it starts an
	// agent (a host ended meanwhile would start one nobody stops).
	s.mu.Lock()
	s.conns++
	if s.orphan != nil {
		s.orphan.Stop()
	}
	s.mu.Unlock()
	sess := &session{c: c, out: newOutbox(), relay: h.Relay, n: n}
	go sess.out.run(c)
	defer sess.out.close()
	s.handOver(sess)
	defer s.leave(sess)
	s.resendSignals(sess)
	var buf []byte
	for {
		typ, n, err := readHeader(c)
		if err != nil {
			return
		}
		if typ == fCheckpoint && s.opt.CheckpointPath != "" {
			if s.checkpointToFile(c, n, sess) != nil {
				return
			}
			continue
		}
		b, err := readBody(c, n, buf)
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
				p := s.proc
				if p != nil && s.cur == sess {
					s.mir.resize(int(z.Cols), int(z.Rows), z.At, z.Seq)
				}
				s.mu.Unlock()
				if p != nil && !z.Applied {
					_ = p.Resize(z.Cols, z.Rows)
				}
			}
		case fStop:
			var r stopReq
			_ = json.Unmarshal(b, &r)
			if p := s.agent(); p != nil {
				go p.Stop(time.Duration(r.GraceMs) * time.Millisecond)
			} else {
				// Given up before its start (Client.Stop): no agent to
				// wait for an engine for.
				s.end()
			}
		case fSnap:
			s.mu.Lock()
			if s.mir != nil {
				w, h, st := s.mir.state()
				sess.out.put(fState, stateFrame(w, h, s.mir.off(), st))
			}
			s.mu.Unlock()
		case fPosition:
			if len(b) == 16 {
				s.mu.Lock()
				if s.mir != nil && s.cur == sess {
					s.mir.position(int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint64(b[8:]))
				}
				s.mu.Unlock()
			}
		case fCheckpoint:
			// The mirror keeps b: the next frame is read into a
			// buffer of its own.
			buf = nil
			at, seq, p, hist, ok := parseCheckpoint(b)
			s.mu.Lock()
			if ok && s.mir != nil && s.cur == sess {
				s.mir.checkpoint(at, seq, p, hist)
			}
			s.mu.Unlock()
		case fSignalAns:
			s.signalAnswered(b)
		case fAnswer:
			s.answered(b)
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

// handOver makes sess the engine's connection (adopt), once an agent
// runs. The screen goes to the engine between two sequences, so what
// follows means to its copy what it meant here: a running agent's next
// output ends the one begun (waited for a second at most). An engine
// that can take the terminal (not relay, and the agent has a log for the
// host to read after it) gets its descriptor: the host's reader is
// paused first, and what it read is in the mirror.
func (s *server) handOver(sess *session) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	s.mu.Lock()
	if s.proc == nil {
		s.mu.Unlock()
		return
	}
	if old := s.cur; old != nil && old.n > sess.n {
		// An engine that connected later was adopted first (this
		// connection's goroutine ran late, its engine maybe killed
		// meanwhile): the later one wins, this one is stale.
		s.mu.Unlock()
		sess.out.close()
		sess.c.Close()
		return
	}
	if old := s.cur; old != nil && old != sess {
		// A newer engine wins: the old connection is dead or stale.
		old.out.close()
		old.c.Close()
		s.giveBack(old)
	}
	p, fd := s.proc, !sess.relay && s.info.Spec.LogPath != ""
	s.mu.Unlock()
	for i := 0; ; i++ {
		var pz ptyproc.Paused
		if fd {
			var err error
			if pz, err = p.Pause(); err != nil {
				fd = false
			}
		}
		s.mu.Lock()
		for fd && s.pumped < pz.Delivered {
			s.cond.Wait()
		}
		if i >= 200 || s.exit != nil || s.mir.atRest() {
			s.adopt(sess, fd, pz.LogSize)
			s.mu.Unlock()
			return
		}
		s.mu.Unlock()
		if fd {
			p.Resume()
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// adopt makes sess the engine's connection: the agent's info, the
// terminal's descriptor when fd (its reader paused), its screen as it is
// (and the stream offset it is at), then its output from there on, which
// the host no longer parses: sent by the host, or read by the engine.
// Caller holds s.mu.
func (s *server) adopt(sess *session, fd bool, logSize int64) {
	if old := s.cur; old != nil && old != sess {
		old.out.close()
		old.c.Close()
		s.giveBack(old)
	}
	s.cur = sess
	if s.orphan != nil {
		s.orphan.Stop()
	}
	b, _ := json.Marshal(s.info)
	sess.out.put(fInfo, b)
	w, h, st := s.mir.state()
	s.mir.setLive(false)
	if fd {
		mfd, err := -1, errors.New("the agent has exited")
		if s.exit == nil {
			mfd, err = s.proc.MasterFD()
		}
		if err == nil && sess.out.putFD(fMaster, nil, mfd) {
			s.mir.handOff(s.info.Spec.LogPath, logSize)
			sess.fd = true
		} else {
			s.proc.Resume()
		}
	}
	sess.out.put(fState, stateFrame(w, h, s.mir.off(), st))
	if s.exit != nil {
		b, _ := json.Marshal(s.exit)
		sess.out.put(fExit, b)
	}
}

func (s *server) leave(sess *session) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns--
	if s.cur == sess {
		s.giveBack(sess)
		if s.exit != nil && s.byed {
			s.end()
			return
		}
	}
	if s.cur == nil && s.conns == 0 {
		s.armOrphan()
	}
}

// giveBack ends sess's part. The connection is closed (sess's process
// ended, or a newer engine replaced it): one that held the terminal
// reads it no more, so the host takes in what it logged and reads the
// terminal again. Caller holds s.mu.
func (s *server) giveBack(sess *session) {
	s.cur = nil
	if sess.fd {
		s.mir.takeBack()
	}
	if s.mir != nil && s.exit == nil {
		// No engine parses now: the host does, and answers the agent.
		// (An ended agent's screen is parsed if an engine comes.)
		s.mir.setLive(true)
		s.proc.Resume()
	}
}

func (s *server) start(sp Spec, sess *session) error {
	if sp.Git != nil {
		if err := s.prepareGit(&sp); err != nil {
			return err
		}
	}
	p, err := s.startAgent(sp)
	if err != nil {
		return err
	}
	go s.pump(p)
	s.handOver(sess)
	return nil
}

func (s *server) startAgent(sp Spec) (*ptyproc.Proc, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		return nil, errors.New("this agent host already runs an agent")
	}
	select {
	case <-s.ended:
		return nil, errors.New("this agent host is ending: start the agent in a new one")
	default:
	}
	if sp.Scrollback <= 0 {
		sp.Scrollback = 5000
	}
	cols, rows := int(sp.Cols), int(sp.Rows)
	if cols < 2 || rows < 2 {
		cols, rows = 80, 24
	}
	rep := newReplies()
	mir := newMirror(cols, rows, sp.Scrollback, rep, s.opt.tailCap)
	p, err := ptyproc.Start(ptyproc.Spec{Argv: sp.Argv, Dir: sp.Dir, Env: sp.Env, Unset: sp.Unset,
		Cols: uint16(cols), Rows: uint16(rows), LogPath: sp.LogPath})
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", sp.Argv[0], err)
	}
	go rep.run(p)
	s.proc, s.mir = p, mir
	s.info = Info{Meta: s.opt.Meta, Spec: sp, Pid: p.Pid(), StartTime: p.StartTime(), Started: p.Started(), Binary: s.opt.Binary}
	return p, nil
}

// pump hands the agent's output to the engine and the mirror, then
// records the exit. Output the engine's outbox could not take is left out
// of the mirror too, so the two copies stay at the same offsets.
func (s *server) pump(p *ptyproc.Proc) {
	for chunk := range p.Output() {
		s.mu.Lock()
		if s.pumped == 0 && s.git != nil {
			logf("the agent's first output")
		}
		s.pumped += int64(len(chunk))
		// (An engine holding the terminal gets none: the reader is
		// paused before it does.)
		if s.cur == nil || s.cur.fd || s.cur.out.put(fOutput, chunk) {
			s.mir.write(chunk)
		}
		s.cond.Broadcast()
		s.mu.Unlock()
	}
	code, _ := p.Wait()
	s.pushEnd()
	ex := &Exit{Code: code, Dropped: p.Dropped(), HostCPU: selfCPU()}
	s.mu.Lock()
	s.exit = ex
	s.cond.Broadcast()
	if s.cur != nil {
		b, _ := json.Marshal(ex)
		s.cur.out.put(fExit, b)
	}
	s.mu.Unlock()
}

// stateFrame is a screen's size, the stream offset it is at, and the
// bytes that rebuild it.
func stateFrame(w, h int, off int64, state []byte) []byte {
	b := make([]byte, 16, 16+len(state))
	binary.BigEndian.PutUint32(b, uint32(w))
	binary.BigEndian.PutUint32(b[4:], uint32(h))
	binary.BigEndian.PutUint64(b[8:], uint64(off))
	return append(b, state...)
}

func parseState(b []byte) (w, h int, off int64, state []byte, ok bool) {
	if len(b) < 16 {
		return 0, 0, 0, nil, false
	}
	return int(binary.BigEndian.Uint32(b)), int(binary.BigEndian.Uint32(b[4:])), int64(binary.BigEndian.Uint64(b[8:])), b[16:], true
}

// checkpointFrame is the engine's emulator state at stream offset at,
// holding its resizes up to seq: its Parts and its packed history.
func checkpointFrame(at int64, seq uint64, p term.Parts, hist []byte) []byte {
	b := make([]byte, 40, 40+len(p.Screen)+len(hist))
	binary.BigEndian.PutUint64(b, uint64(at))
	binary.BigEndian.PutUint64(b[8:], seq)
	binary.BigEndian.PutUint32(b[16:], uint32(p.W))
	binary.BigEndian.PutUint32(b[20:], uint32(p.H))
	binary.BigEndian.PutUint32(b[24:], uint32(p.Scrollback))
	binary.BigEndian.PutUint64(b[28:], p.Pushed)
	binary.BigEndian.PutUint32(b[36:], uint32(len(p.Screen)))
	return append(append(b, p.Screen...), hist...)
}

// checkpointToFile reads a checkpoint frame of n bytes, its history
// straight into Options.CheckpointPath: the host never holds it. A
// checkpoint the file cannot take is dropped, as one the mirror refuses:
// the host keeps the output since the last one it took. Its error is the
// connection's.
func (s *server) checkpointToFile(r io.Reader, n int64, sess *session) error {
	head, err := readBody(r, min(n, 40), nil)
	if err != nil || n < 40 {
		return err
	}
	sn := int64(binary.BigEndian.Uint32(head[36:]))
	if sn > n-40 {
		_, err := io.CopyN(io.Discard, r, n-40)
		return noEOF(err)
	}
	screen, err := readBody(r, sn, nil)
	if err != nil {
		return err
	}
	at, seq, p, _, _ := parseCheckpoint(append(head, screen...))
	// One file per connection: an engine being replaced may still send.
	tmp := fmt.Sprintf("%s.%d", s.opt.CheckpointPath, sess.n)
	k := &sink{}
	k.f, k.err = os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	// A small buffer: the history may be megabytes, the host stays small.
	var cb [8 << 10]byte
	_, err = io.CopyBuffer(k, io.LimitReader(r, n-40-sn), cb[:])
	if k.f != nil {
		if cerr := k.f.Close(); k.err == nil {
			k.err = cerr
		}
	}
	if err != nil || k.err != nil {
		_ = os.Remove(tmp)
		return noEOF(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.mir != nil && s.cur == sess && s.mir.accepts(at, p) && os.Rename(tmp, s.opt.CheckpointPath) == nil {
		s.mir.checkpointFile(at, seq, p, s.opt.CheckpointPath)
		return nil
	}
	_ = os.Remove(tmp)
	return nil
}

// sink writes to f until a write fails, then discards: the frame must
// still be read off the connection whole.
type sink struct {
	f   *os.File
	err error
}

func (k *sink) Write(p []byte) (int, error) {
	if k.err == nil {
		_, k.err = k.f.Write(p)
	}
	return len(p), nil
}

func parseCheckpoint(b []byte) (at int64, seq uint64, p term.Parts, hist []byte, ok bool) {
	if len(b) < 40 {
		return 0, 0, p, nil, false
	}
	at, seq = int64(binary.BigEndian.Uint64(b)), binary.BigEndian.Uint64(b[8:])
	p = term.Parts{W: int(binary.BigEndian.Uint32(b[16:])), H: int(binary.BigEndian.Uint32(b[20:])),
		Scrollback: int(binary.BigEndian.Uint32(b[24:])), Pushed: binary.BigEndian.Uint64(b[28:])}
	n := int(binary.BigEndian.Uint32(b[36:]))
	if n > len(b)-40 {
		return 0, 0, p, nil, false
	}
	p.Screen = b[40 : 40+n]
	return at, seq, p, b[40+n:], true
}

func selfCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// keepWork keeps the stopped agent's uncommitted work as a commit under
// refs/chorus/kept/<task>/, as a stop by the engine does: if nobody runs
// the task again, nothing is lost. Failures are only logged: the files
// stay in the worktree either way.
func (s *server) keepWork() {
	s.mu.Lock()
	dir, task := s.info.Spec.Dir, s.opt.Meta.TaskID
	s.mu.Unlock()
	if dir == "" || task == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	wip, err := worktree.SnapshotWIP(ctx, dir, "chorus: uncommitted work of an agent stopped without its engine")
	if err == nil && wip != "" {
		var k worktree.Kept
		if k, err = worktree.KeepCommit(ctx, dir, task, worktree.KeptWIP, wip); err == nil {
			logf("no engine came back; the agent's uncommitted work is kept at %s", k.Ref)
		}
	}
	if err != nil {
		logf("keeping the agent's uncommitted work in %s: %v", dir, err)
	}
}
