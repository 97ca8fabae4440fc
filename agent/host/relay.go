package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
)

// A host with a Git work tree takes its agent's `chorus signal` (and
// `chorus note`, `chorus ask`) on a signal socket of its own and hands
// each envelope to the engine over its stream (fSignal), which answers
// (fSignalAns): the agent never needs the hub's files. The host vouches
// for the sender, as the engine does locally: a process in its agent's
// tree or session. An envelope waits for an engine that is not
// connected, up to the sender's own time limit.

// Relay frames, sent only to an engine that gave the host a Git spec.
const (
	fSignal    byte = 'G' // host → engine: relayedSignal (JSON)
	fSignalAns byte = 'A' // engine → host: signalAnswer (JSON)
	fAnswer    byte = 'W' // engine → host: an answer to a question (Answer, JSON)
)

type relayedSignal struct {
	N   uint64          `json:"n"`
	Env json.RawMessage `json:"env"`
}

type signalAnswer struct {
	N       uint64 `json:"n"`
	Refused string `json:"refused,omitempty"`
}

// Answer is a person's answer to an agent's `chorus ask`, carried to the
// host whose agent asked: the file the asking command waits for.
type Answer struct {
	ID     string        `json:"id"`
	Answer signal.Answer `json:"answer"`
}

// relayWait bounds how long an envelope waits for an engine: below the
// sender's own limit, so it hears why.
const relayWait = 25 * time.Second

type relay struct {
	mu      sync.Mutex
	next    uint64
	pending map[uint64]*pendingSignal
}

type pendingSignal struct {
	frame []byte
	done  chan string
}

// listenSignals serves the agent's signal socket in w's stand-in for the
// hub's .chorus until ctx ends.
func (s *server) listenSignals(ctx context.Context, w *gitWork) error {
	ln, err := signal.Listen(signal.SocketPath(w.chorus))
	if err != nil {
		return fmt.Errorf("the agent's signal socket: %w", err)
	}
	go signal.Serve(ctx, ln, s.relaySignal)
	return nil
}

// relaySignal vouches for the sender, pushes the work before a COMPLETE
// goes on, and waits for the engine's verdict.
func (s *server) relaySignal(ctx context.Context, env signal.Envelope, peer signal.Peer) error {
	s.mu.Lock()
	pid, w := s.info.Pid, s.git
	s.mu.Unlock()
	chain := ptyproc.Ancestry(peer.PID)
	if sid, err := ptyproc.SessionOf(peer.PID); err == nil && sid > 0 {
		chain = append(chain, sid)
	}
	if pid <= 0 || !slices.Contains(chain, pid) {
		return fmt.Errorf("process %d is not one of this agent's processes", peer.PID)
	}
	if w != nil && env.Signal.Type != signal.Note {
		// The branch goes back with every signal: a pod lost later
		// costs no commit made before it. COMPLETE's work must be
		// there before the hub hears it.
		t0 := time.Now()
		err := w.push(false)
		if err == nil {
			logf("pushed %s at %s in %.3fs", w.g.Branch, env.Signal.Type, time.Since(t0).Seconds())
		} else if env.Signal.Type == signal.Complete {
			return fmt.Errorf("the work could not go back to the remote, so COMPLETE was not sent: %w; fix that and signal again", err)
		} else {
			logf("%v", err)
		}
	}
	raw, err := json.Marshal(env)
	if err != nil {
		return err
	}
	s.relay.mu.Lock()
	if s.relay.pending == nil {
		s.relay.pending = map[uint64]*pendingSignal{}
	}
	s.relay.next++
	n := s.relay.next
	p := &pendingSignal{frame: mustJSON(relayedSignal{N: n, Env: raw}), done: make(chan string, 1)}
	s.relay.pending[n] = p
	s.relay.mu.Unlock()
	defer func() {
		s.relay.mu.Lock()
		delete(s.relay.pending, n)
		s.relay.mu.Unlock()
	}()
	s.mu.Lock()
	if s.cur != nil {
		s.cur.out.put(fSignal, p.frame)
	}
	s.mu.Unlock()
	t := time.NewTimer(relayWait)
	defer t.Stop()
	select {
	case why := <-p.done:
		if why != "" {
			return errors.New(why)
		}
		return nil
	case <-t.C:
		return errors.New("no engine took the signal in time (the hub is away); send it again")
	case <-ctx.Done():
		return ctx.Err()
	}
}

// resendSignals hands a newly connected engine the envelopes still
// waiting. Caller holds s.mu.
func (s *server) resendSignals(sess *session) {
	s.relay.mu.Lock()
	defer s.relay.mu.Unlock()
	for _, p := range s.relay.pending {
		sess.out.put(fSignal, p.frame)
	}
}

func (s *server) signalAnswered(b []byte) {
	var a signalAnswer
	if json.Unmarshal(b, &a) != nil {
		return
	}
	s.relay.mu.Lock()
	p := s.relay.pending[a.N]
	s.relay.mu.Unlock()
	if p != nil {
		select {
		case p.done <- a.Refused:
		default:
		}
	}
}

// answered writes an answer where the asking `chorus ask` waits for it.
func (s *server) answered(b []byte) {
	var a Answer
	s.mu.Lock()
	w := s.git
	s.mu.Unlock()
	if w == nil || json.Unmarshal(b, &a) != nil {
		return
	}
	_ = signal.WriteAnswer(w.chorus, a.ID, a.Answer)
}

// OnSignal sets what the engine does with an envelope the host relays;
// it answers with the refusal or nil. Envelopes that came before it was
// set (a host re-adopted) are handed to it now.
func (cl *Client) OnSignal(f func(signal.Envelope) error) {
	cl.smu.Lock()
	cl.onSignal = f
	parked := cl.parked
	cl.parked = nil
	cl.smu.Unlock()
	for _, rs := range parked {
		cl.answer(rs, f)
	}
}

func (cl *Client) relayed(b []byte) {
	var rs relayedSignal
	if json.Unmarshal(b, &rs) != nil {
		return
	}
	cl.smu.Lock()
	f := cl.onSignal
	if f == nil {
		cl.parked = append(cl.parked, rs)
	}
	cl.smu.Unlock()
	if f != nil {
		cl.answer(rs, f)
	}
}

func (cl *Client) answer(rs relayedSignal, f func(signal.Envelope) error) {
	go func() {
		ans := signalAnswer{N: rs.N}
		var env signal.Envelope
		if err := json.Unmarshal(rs.Env, &env); err != nil {
			ans.Refused = "not a signal envelope"
		} else if err := f(env); err != nil {
			ans.Refused = err.Error()
		}
		_ = cl.send(fSignalAns, mustJSON(ans))
	}()
}

// SendAnswer hands the host the answer file of its agent's question.
func (cl *Client) SendAnswer(id string, a signal.Answer) error {
	return cl.send(fAnswer, mustJSON(Answer{ID: id, Answer: a}))
}
