package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

type recorder struct {
	mu    sync.Mutex
	reqs  []*http.Request
	body  [][]byte
	codes []int // answers in order; 200 once they run out
	// arrived is told of each request, before it waits for gate.
	arrived chan struct{}
	gate    chan struct{}
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if r.arrived != nil {
		r.arrived <- struct{}{}
	}
	if r.gate != nil {
		<-r.gate
	}
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, req)
	r.body = append(r.body, b)
	code := 200
	if len(r.codes) > 0 {
		code, r.codes = r.codes[0], r.codes[1:]
	}
	r.mu.Unlock()
	w.WriteHeader(code)
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.reqs)
}

func flush(t *testing.T, d *Dispatcher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := d.Flush(ctx); err != nil {
		t.Fatal(err)
	}
}

// A webhook gets the message as JSON; ntfy the text with its headers.
func TestFormats(t *testing.T) {
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	d := New(Options{Webhook: srv.URL + "/hook", Ntfy: srv.URL + "/topic"})
	defer d.Close()
	at := time.Date(2026, 11, 28, 3, 0, 0, 0, time.UTC)
	d.Send(Message{Kind: "task_failed", Title: "t-1 failed", Text: "t-1 failed: exit 3", Task: "t-1", Time: at, Priority: 4, Tags: []string{"x", "night"}})
	flush(t, d)
	if rec.count() != 2 {
		t.Fatalf("%d requests", rec.count())
	}
	for i, req := range rec.reqs {
		switch req.URL.Path {
		case "/hook":
			var m Message
			if err := json.Unmarshal(rec.body[i], &m); err != nil || req.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("%q: %v", rec.body[i], err)
			}
			if m.Kind != "task_failed" || m.Task != "t-1" || m.Text != "t-1 failed: exit 3" || !m.Time.Equal(at) || m.Priority != 4 {
				t.Errorf("webhook got %+v", m)
			}
		case "/topic":
			if string(rec.body[i]) != "t-1 failed: exit 3" || req.Header.Get("Title") != "t-1 failed" ||
				req.Header.Get("Priority") != "4" || req.Header.Get("Tags") != "x,night" {
				t.Errorf("ntfy got %q %v", rec.body[i], req.Header)
			}
		}
	}
}

// 5xx and 429 are tried again after a doubling wait; a 4xx is given up at
// once; attempts are bounded.
func TestRetries(t *testing.T) {
	for _, c := range []struct {
		name  string
		codes []int
		want  int
	}{
		{"ok", nil, 1},
		{"503 then ok", []int{503, 502}, 3},
		{"429 then ok", []int{429}, 2},
		{"404 is final", []int{404}, 1},
		{"bounded", []int{500, 500, 500, 500, 500}, 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &recorder{codes: c.codes}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			d := New(Options{Webhook: srv.URL, Attempts: 3, Backoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond})
			defer d.Close()
			d.Send(Message{Kind: "paused", Text: "autopilot paused"})
			flush(t, d)
			if rec.count() != c.want {
				t.Errorf("%d requests, want %d", rec.count(), c.want)
			}
		})
	}
}

// Send returns at once while the server does not answer; past the queue's
// size the oldest message waiting is dropped.
func TestSendNeverBlocks(t *testing.T) {
	rec := &recorder{gate: make(chan struct{}), arrived: make(chan struct{}, 64)}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	d := New(Options{Webhook: srv.URL, Queue: 2})
	defer d.Close()
	d.Send(Message{Kind: "needs_help", Text: "first"})
	<-rec.arrived // in flight, held by the server
	for i := 0; i < 50; i++ {
		d.Send(Message{Kind: "needs_help", Text: string(rune('a' + i%26))})
	}
	close(rec.gate)
	flush(t, d)
	// The first was in flight when the others came; of those, the last two.
	if n := rec.count(); n != 3 || string(rec.body[1]) == "" {
		t.Errorf("%d delivered, want 3", n)
	}
	var last Message
	_ = json.Unmarshal(rec.body[2], &last)
	if last.Text != string(rune('a'+49%26)) {
		t.Errorf("the last delivered is %q, want the last sent", last.Text)
	}
}

func TestNothingConfigured(t *testing.T) {
	d := New(Options{})
	if d != nil {
		t.Fatal("a dispatcher without targets")
	}
	d.Send(Message{Text: "x"}) // nil-safe
	d.Close()
}

// Close gives up a request the server does not answer, at once.
func TestCloseEndsInFlight(t *testing.T) {
	rec := &recorder{gate: make(chan struct{}), arrived: make(chan struct{}, 4)}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	defer close(rec.gate)
	d := New(Options{Webhook: srv.URL, Client: &http.Client{}}) // no timeout of its own
	d.Send(Message{Kind: "finished", Text: "done"})
	<-rec.arrived
	done := make(chan struct{})
	go func() { d.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Close waited for a server that never answers")
	}
}
