package signal

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

const failSafe = 30 * time.Second

func recv(t *testing.T, ch <-chan Envelope) Envelope {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("watch channel closed")
		}
		return e
	case <-time.After(failSafe):
		t.Fatal("no envelope delivered")
	}
	return Envelope{}
}

func TestSendWatchDeliversWaitingThenNew(t *testing.T) {
	dir := t.TempDir()
	// Sent while no Chorus is watching: waits.
	if err := Send(Sender{Dir: dir, AgentID: "claude-1", TaskID: "ch-1"}, Signal{Type: Progress, Payload: "10"}); err != nil {
		t.Fatal(err)
	}
	if err := Send(Sender{Dir: dir, AgentID: "claude-1", TaskID: "ch-1"}, Signal{Type: Progress, Payload: "20"}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := Watch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	e1, e2 := recv(t, ch), recv(t, ch)
	if e1.Signal.Payload != "10" || e2.Signal.Payload != "20" {
		t.Fatalf("waiting signals out of order: %+v %+v", e1, e2)
	}
	if e1.AgentID != "claude-1" || e1.TaskID != "ch-1" || e1.ID == "" || e1.PID != os.Getpid() || e1.Err != nil {
		t.Errorf("envelope fields: %+v", e1)
	}
	if err := Send(Sender{Dir: dir, AgentID: "codex-2", TaskID: "ch-9"}, Signal{Type: Blocked, Payload: "no key"}); err != nil {
		t.Fatal(err)
	}
	e3 := recv(t, ch)
	if e3.Signal != (Signal{Blocked, "no key"}) || e3.AgentID != "codex-2" {
		t.Errorf("new signal: %+v", e3)
	}
	for _, e := range []Envelope{e1, e2, e3} {
		if err := e.Ack(); err != nil {
			t.Fatal(err)
		}
	}
	left, _ := os.ReadDir(filepath.Join(dir, SignalsDir))
	if len(left) != 0 {
		t.Errorf("files left after Ack: %v", left)
	}
	cancel()
	for range ch {
	}
}

func TestWatchRedeliversUnacked(t *testing.T) {
	dir := t.TempDir()
	if err := Send(Sender{Dir: dir, AgentID: "a", TaskID: "t"}, Signal{Type: Complete}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ch, _ := Watch(ctx, dir)
	first := recv(t, ch)
	cancel() // engine dies before recording the signal
	for range ch {
	}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	ch2, _ := Watch(ctx2, dir)
	again := recv(t, ch2)
	if again.ID != first.ID {
		t.Errorf("redelivered %s, want %s", again.ID, first.ID)
	}
}

func TestConcurrentSendersNothingLostOrDuplicated(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := Watch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
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
	seen := map[string]bool{}
	perAgent := map[string]int{}
	for len(seen) < senders*each {
		e := recv(t, ch)
		if e.Err != nil {
			t.Fatal(e.Err)
		}
		if seen[e.ID] {
			t.Fatalf("duplicate delivery of %s", e.ID)
		}
		seen[e.ID] = true
		perAgent[e.AgentID]++
		e.Ack()
	}
	wg.Wait()
	for a, n := range perAgent {
		if n != each {
			t.Errorf("%s: %d signals, want %d", a, n, each)
		}
	}
	// Nothing else arrives: everything sent was delivered exactly once.
	if err := Send(Sender{Dir: dir, AgentID: "last", TaskID: "t"}, Signal{Type: Complete}); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.AgentID != "last" {
		t.Errorf("extra delivery %+v", e)
	}
}

func TestWatchBadFileAndSendErrors(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, SignalsDir), 0o755)
	os.WriteFile(filepath.Join(dir, SignalsDir, "0-bad.json"), []byte("{not json"), 0o644)
	os.WriteFile(filepath.Join(dir, SignalsDir, ".tmp-partial"), []byte("{"), 0o644)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, _ := Watch(ctx, dir)
	e := recv(t, ch)
	if e.Err == nil {
		t.Fatalf("bad file delivered without error: %+v", e)
	}
	if err := e.Ack(); err != nil {
		t.Fatal(err)
	}
	if err := Send(Sender{Dir: filepath.Join(dir, "missing"), AgentID: "a", TaskID: "t"}, Signal{Type: Complete}); err == nil {
		t.Error("Send to a missing Chorus dir should fail")
	}
}

// Only regular files are read from the signals folder, and only so much:
// a FIFO, a link to /dev/zero, a directory or a huge file are refused
// (each delivered once with Err, for the engine to report), and signals
// sent before and after them still arrive.
func TestWatchRefusesWhatIsNotASignalFile(t *testing.T) {
	dir := t.TempDir()
	sd := filepath.Join(dir, SignalsDir)
	if err := os.MkdirAll(sd, 0o700); err != nil {
		t.Fatal(err)
	}
	bad := func(prefix string) map[string]string {
		if err := syscall.Mkfifo(filepath.Join(sd, prefix+"-fifo.json"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink("/dev/zero", filepath.Join(sd, prefix+"-zero.json")); err != nil {
			t.Fatal(err)
		}
		if err := os.Mkdir(filepath.Join(sd, prefix+"-dir.json"), 0o700); err != nil {
			t.Fatal(err)
		}
		// Written aside and renamed in, as Send does, so the watcher sees
		// it whole.
		if err := os.WriteFile(filepath.Join(sd, ".tmp-big"), bytes.Repeat([]byte(" "), maxEnvelope+1), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(filepath.Join(sd, ".tmp-big"), filepath.Join(sd, prefix+"-big.json")); err != nil {
			t.Fatal(err)
		}
		return map[string]string{prefix + "-fifo.json": "not a regular file", prefix + "-zero.json": "symbolic link",
			prefix + "-dir.json": "not a regular file", prefix + "-big.json": "more than a signal's"}
	}
	from := Sender{Dir: dir, AgentID: "claude-1", TaskID: "ch-1"}
	want := bad("1")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ch, err := Watch(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	refused := func(want map[string]string) {
		t.Helper()
		for len(want) > 0 {
			e := recv(t, ch)
			name := filepath.Base(e.path)
			why, ok := want[name]
			if !ok || e.Err == nil || !strings.Contains(e.Err.Error(), why) {
				t.Fatalf("%s: %v (want an error saying %q)", name, e.Err, why)
			}
			delete(want, name)
			_ = e.Ack()
		}
	}
	refused(want)
	if err := Send(from, Signal{Type: Progress, Payload: "10"}); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.Err != nil || e.Signal.Payload != "10" {
		t.Fatalf("signal after the refused files: %+v", e)
	}
	// The same again while watching: found through inotify.
	refused(bad("2"))
	if err := Send(from, Signal{Type: Complete}); err != nil {
		t.Fatal(err)
	}
	if e := recv(t, ch); e.Err != nil || e.Signal.Type != Complete {
		t.Fatalf("signal after the refused files: %+v", e)
	}
}
