// Package notify delivers short messages to a person away from the
// screen: a webhook (a JSON POST) and an ntfy-style topic URL (the text as
// the body, title, priority and tags as headers). Delivery runs on a
// goroutine of its own per target, with retries and backoff; Send never
// blocks its caller (the engine's event stream), and a full queue drops
// the oldest message rather than wait.
package notify

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Message is one notification.
type Message struct {
	// Kind says what happened: needs_human, needs_help, task_failed,
	// paused, resumed, finished (the engine's event kinds, and finished
	// for the end of a run).
	Kind  string    `json:"kind"`
	Title string    `json:"title"`
	Text  string    `json:"text"`
	Task  string    `json:"task,omitempty"`
	Repo  string    `json:"repo,omitempty"`
	Time  time.Time `json:"time"`
	// Priority is ntfy's scale: 1 (min) to 5 (urgent); 3 is the default.
	Priority int      `json:"priority"`
	Tags     []string `json:"tags,omitempty"`
}

// Options configure a Dispatcher.
type Options struct {
	Webhook string // JSON POST target, "" for none
	Ntfy    string // ntfy topic URL, "" for none
	Log     *slog.Logger
	// Client is the HTTP client (a 10 s timeout when nil).
	Client *http.Client
	// Attempts per message and target (default 6); Backoff the first wait
	// between them, doubled each time up to MaxBackoff (defaults 2 s, 1 min).
	Attempts   int
	Backoff    time.Duration
	MaxBackoff time.Duration
	// Queue is how many messages wait per target before the oldest is
	// dropped (default 64).
	Queue int
}

// Dispatcher sends messages to the configured targets.
type Dispatcher struct {
	opt     Options
	targets []*target
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
	// ctx ends with Close: a request in flight then is given up.
	ctx    context.Context
	cancel context.CancelFunc
}

// target is one destination with its own queue and worker.
type target struct {
	name  string
	build func(Message) (*http.Request, error)

	mu      sync.Mutex
	queue   []Message
	wake    chan struct{}
	pending int // queued or being sent
	idle    chan struct{}
}

// New starts a dispatcher; nil when no target is configured.
func New(o Options) *Dispatcher {
	if o.Webhook == "" && o.Ntfy == "" {
		return nil
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: 10 * time.Second}
	}
	if o.Attempts <= 0 {
		o.Attempts = 6
	}
	if o.Backoff <= 0 {
		o.Backoff = 2 * time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = time.Minute
	}
	if o.Queue <= 0 {
		o.Queue = 64
	}
	d := &Dispatcher{opt: o, stop: make(chan struct{})}
	d.ctx, d.cancel = context.WithCancel(context.Background())
	if o.Webhook != "" {
		u := o.Webhook
		d.targets = append(d.targets, &target{name: "webhook", build: func(m Message) (*http.Request, error) { return WebhookRequest(u, m) }})
	}
	if o.Ntfy != "" {
		u := o.Ntfy
		d.targets = append(d.targets, &target{name: "ntfy", build: func(m Message) (*http.Request, error) { return NtfyRequest(u, m) }})
	}
	for _, t := range d.targets {
		t.wake = make(chan struct{}, 1)
		d.wg.Add(1)
		go d.work(t)
	}
	return d
}

// Send queues m for every target and returns at once.
func (d *Dispatcher) Send(m Message) {
	if d == nil {
		return
	}
	if m.Time.IsZero() {
		m.Time = time.Now()
	}
	if m.Priority == 0 {
		m.Priority = 3
	}
	for _, t := range d.targets {
		t.mu.Lock()
		if len(t.queue) >= d.opt.Queue {
			d.opt.Log.Warn("notification dropped: queue full", "target", t.name, "kind", t.queue[0].Kind)
			t.queue = t.queue[1:]
			t.pending--
		}
		t.queue = append(t.queue, m)
		t.pending++
		t.mu.Unlock()
		select {
		case t.wake <- struct{}{}:
		default:
		}
	}
}

// Flush waits until every queued message was delivered or given up on, or
// ctx ends (then what is left is dropped at Close).
func (d *Dispatcher) Flush(ctx context.Context) error {
	if d == nil {
		return nil
	}
	for _, t := range d.targets {
		for {
			t.mu.Lock()
			n := t.pending
			if n > 0 && t.idle == nil {
				t.idle = make(chan struct{})
			}
			ch := t.idle
			t.mu.Unlock()
			if n == 0 {
				break
			}
			select {
			case <-ch:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return nil
}

// Close stops the workers; messages not yet delivered are dropped.
func (d *Dispatcher) Close() {
	if d == nil {
		return
	}
	d.once.Do(func() {
		close(d.stop)
		d.cancel()
	})
	d.wg.Wait()
}

func (d *Dispatcher) work(t *target) {
	defer d.wg.Done()
	for {
		t.mu.Lock()
		var m Message
		have := len(t.queue) > 0
		if have {
			m, t.queue = t.queue[0], t.queue[1:]
		}
		t.mu.Unlock()
		if !have {
			select {
			case <-t.wake:
				continue
			case <-d.stop:
				return
			}
		}
		d.deliver(t, m)
		t.mu.Lock()
		t.pending--
		if t.pending == 0 && t.idle != nil {
			close(t.idle)
			t.idle = nil
		}
		t.mu.Unlock()
	}
}

// deliver sends m to t, retrying what may pass later (no answer, 408, 429,
// 5xx) with doubling waits; a 4xx that is not 408 or 429 is given up at once.
func (d *Dispatcher) deliver(t *target, m Message) {
	wait := d.opt.Backoff
	for attempt := 1; ; attempt++ {
		retry, err := d.post(t, m)
		if err == nil {
			return
		}
		if !retry || attempt >= d.opt.Attempts {
			d.opt.Log.Warn("notification not delivered", "target", t.name, "kind", m.Kind, "attempts", attempt, "err", err)
			return
		}
		d.opt.Log.Info("notification failed, retrying", "target", t.name, "kind", m.Kind, "attempt", attempt, "in", wait, "err", err)
		timer := time.NewTimer(wait)
		select {
		case <-timer.C:
		case <-d.stop:
			timer.Stop()
			return
		}
		wait = min(wait*2, d.opt.MaxBackoff)
	}
}

func (d *Dispatcher) post(t *target, m Message) (retry bool, err error) {
	req, err := t.build(m)
	if err != nil {
		return false, err
	}
	resp, err := d.opt.Client.Do(req.WithContext(d.ctx))
	if err != nil {
		return true, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode/100 == 2 {
		return false, nil
	}
	err = fmt.Errorf("%s answered %s: %s", redact(req.URL), resp.Status, strings.TrimSpace(string(body)))
	return resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusRequestTimeout, err
}

// WebhookRequest is m as a JSON POST to u.
func WebhookRequest(u string, m Message) (*http.Request, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodPost, u, bytes.NewReader(b))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "chorus")
	return req, nil
}

// NtfyRequest is m as ntfy publishes it: the text as a plain-text body,
// Title, Priority and Tags as headers. Credentials in the URL
// (https://user:token@host/topic) go as basic authentication.
func NtfyRequest(u string, m Message) (*http.Request, error) {
	req, err := http.NewRequest(http.MethodPost, u, strings.NewReader(m.Text))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "text/plain; charset=utf-8")
	req.Header.Set("User-Agent", "chorus")
	// Header values must be one line of printable text.
	req.Header.Set("Title", headerSafe(m.Title))
	req.Header.Set("Priority", strconv.Itoa(m.Priority))
	if len(m.Tags) > 0 {
		req.Header.Set("Tags", headerSafe(strings.Join(m.Tags, ",")))
	}
	return req, nil
}

func headerSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
}

// redact drops credentials from a URL for messages and logs.
func redact(u *url.URL) string {
	c := *u
	c.User = nil
	return c.String()
}
