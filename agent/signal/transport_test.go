package signal

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// got is an envelope the engine side was handed, with its sender.
type got struct {
	env  Envelope
	peer Peer
}

// serve listens on dir's signal socket and hands what arrives to judge
// (nil takes everything); envelopes taken go to the returned channel.
func serve(t *testing.T, dir string, judge func(Envelope) error) <-chan got {
	t.Helper()
	ln, err := Listen(SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan got, 1024)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		Serve(ctx, ln, func(_ context.Context, e Envelope, p Peer) error {
			if judge != nil {
				if err := judge(e); err != nil {
					return err
				}
			}
			ch <- got{e, p}
			return nil
		})
	}()
	t.Cleanup(func() { cancel(); <-done })
	return ch
}

func TestSendServe(t *testing.T) {
	dir := t.TempDir()
	key, _ := NewKey()
	ch := serve(t, dir, func(e Envelope) error {
		if e.AgentID == "intruder" {
			return errors.New("not from a process of agent intruder")
		}
		return nil
	})
	from := Sender{Dir: dir, AgentID: "claude-1", TaskID: "ch-1", Key: key}
	if err := Send(from, Signal{Type: Progress, Payload: "10"}); err != nil {
		t.Fatal(err)
	}
	g := <-ch // Send returned: the engine had it
	e := g.env
	if e.Signal != (Signal{Progress, "10"}) || e.AgentID != "claude-1" || e.TaskID != "ch-1" || e.ID == "" || e.PID != os.Getpid() || !e.Verify(key) {
		t.Errorf("envelope: %+v", e)
	}
	// The kernel names the sender, whatever the envelope says.
	if g.peer.PID != os.Getpid() {
		t.Errorf("peer pid %d, want %d", g.peer.PID, os.Getpid())
	}
	err := Send(Sender{Dir: dir, AgentID: "intruder", TaskID: "ch-1"}, Signal{Type: Complete})
	if !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not from a process of agent intruder") {
		t.Fatalf("refusal: %v", err)
	}
	// The socket is private.
	st, err := os.Stat(SocketPath(dir))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket: %v %v", st, err)
	}
	if st, _ := os.Stat(filepath.Dir(SocketPath(dir))); st.Mode().Perm() != 0o700 {
		t.Fatalf("socket folder mode %v", st.Mode())
	}
}

func TestSendWithoutEngine(t *testing.T) {
	dir := t.TempDir()
	err := Send(Sender{Dir: dir, AgentID: "a", TaskID: "t"}, Signal{Type: Complete})
	if err == nil || !strings.Contains(err.Error(), "is Chorus running?") {
		t.Fatalf("no engine: %v", err)
	}
	if err := Send(Sender{Dir: filepath.Join(dir, "missing"), AgentID: "a", TaskID: "t"}, Signal{Type: Complete}); err == nil {
		t.Error("Send to a missing Chorus dir should fail")
	}
}

// A socket left by an engine that died is replaced; one another engine
// serves is not; one this process served is taken once it is closed.
func TestListenStaleAndLive(t *testing.T) {
	dir := t.TempDir()
	path := SocketPath(dir)
	os.MkdirAll(filepath.Dir(path), 0o700)
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "an engine that takes signals already listens on") {
		t.Fatalf("while another engine listens: %v", err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the file stays, nobody answers
	first, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	second := make(chan error, 1)
	go func() {
		l, err := Listen(path)
		if err == nil {
			defer l.Close()
			_, err = os.Stat(path)
		}
		second <- err
	}()
	first.Close() // the planning engine ends, the implementation's starts
	if err := <-second; err != nil {
		t.Fatalf("after the first listener closed: %v", err)
	}
}

func TestConcurrentSendersNothingLostOrDuplicated(t *testing.T) {
	dir := t.TempDir()
	ch := serve(t, dir, nil)
	const senders, each = 8, 25
	var wg sync.WaitGroup
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func(s int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := Send(Sender{Dir: dir, AgentID: fmt.Sprintf("agent-%d", s), TaskID: "t"}, Signal{Type: Progress, Payload: fmt.Sprint(i)}); err != nil {
					t.Error(err)
				}
			}
		}(s)
	}
	wg.Wait() // every Send returned once the engine had its envelope
	seen := map[string]bool{}
	perAgent := map[string]int{}
	for len(seen) < senders*each {
		e := (<-ch).env
		if seen[e.ID] {
			t.Fatalf("duplicate delivery of %s", e.ID)
		}
		seen[e.ID] = true
		perAgent[e.AgentID]++
	}
	for a, n := range perAgent {
		if n != each {
			t.Errorf("%s: %d signals, want %d", a, n, each)
		}
	}
	if len(ch) != 0 {
		t.Fatalf("%d envelopes more than were sent", len(ch))
	}
}

// What is not an envelope is refused with a reason, and a sender that
// says nothing holds up no other.
func TestServeRefusesJunkAndWaitsForNobody(t *testing.T) {
	dir := t.TempDir()
	ch := serve(t, dir, nil)
	silent, err := net.Dial("unix", SocketPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	raw := func(b []byte) string {
		t.Helper()
		c, err := net.Dial("unix", SocketPath(dir))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		go func() { c.Write(b); c.(*net.UnixConn).CloseWrite() }()
		ans, _ := io.ReadAll(c)
		return string(ans)
	}
	for _, tc := range []struct {
		in   []byte
		want string
	}{
		{[]byte("{not json\n"), "refused: not a signal envelope"},
		{[]byte(`{"id":"x","signal":{}}` + "\n"), "refused: no signal type"},
		{append(bytes.Repeat([]byte(" "), maxEnvelope+1), '\n'), "refused: more than the"},
	} {
		if ans := raw(tc.in); !strings.HasPrefix(ans, tc.want) {
			t.Errorf("%.20q: answer %q, want %q", tc.in, ans, tc.want)
		}
	}
	if err := Send(Sender{Dir: dir, AgentID: "a", TaskID: "t"}, Signal{Type: Complete}); err != nil {
		t.Fatal(err)
	}
	if e := (<-ch).env; e.Signal.Type != Complete {
		t.Fatalf("after the junk: %+v", e)
	}
}

// Files agents can reach (answers) are read only when they are regular
// files of a bounded size: a FIFO, a link to /dev/zero, a directory or a
// huge file are refused at once, and a real answer is read afterwards.
func TestReadRegularRefusesWhatIsNotAFile(t *testing.T) {
	dir := t.TempDir()
	ad := filepath.Join(dir, AnswersDir)
	os.MkdirAll(ad, 0o700)
	ids := map[string]string{}
	for _, what := range []string{"fifo", "zero", "dir", "big"} {
		id, _ := NewQuestionID()
		ids[what] = id
		p := AnswerPath(dir, id)
		var err error
		switch what {
		case "fifo":
			err = syscall.Mkfifo(p, 0o600)
		case "zero":
			err = os.Symlink("/dev/zero", p)
		case "dir":
			err = os.Mkdir(p, 0o700)
		case "big":
			err = os.WriteFile(p, bytes.Repeat([]byte(" "), maxEnvelope+1), 0o600)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	for what, why := range map[string]string{"fifo": "not a regular file", "zero": "symbolic link", "dir": "not a regular file", "big": "more than the"} {
		if _, ok, err := ReadAnswer(dir, ids[what]); ok || err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%s: ok=%v err=%v, want %q", what, ok, err, why)
		}
	}
	id, _ := NewQuestionID()
	if err := WriteAnswer(dir, id, Answer{Text: "yes"}); err != nil {
		t.Fatal(err)
	}
	if a, ok, err := ReadAnswer(dir, id); !ok || err != nil || a.Text != "yes" {
		t.Fatalf("a real answer: %+v %v %v", a, ok, err)
	}
}
