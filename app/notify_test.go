package app

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/notify"
	"github.com/chorus-dev/chorus/orchestrator"
)

// With tui.notify, a question, a stuck agent and autopilot running out of
// work each reach notify-send once; retries and other events do not.
func TestNotifierDesktop(t *testing.T) {
	bin := t.TempDir()
	got := filepath.Join(bin, "got")
	script := "#!/bin/sh\nfor a in \"$@\"; do printf '%s|' \"$a\" >> " + got + "; done\necho >> " + got + "\n"
	if err := os.WriteFile(filepath.Join(bin, "notify-send"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	n := newNotifier(slog.New(slog.NewTextHandler(io.Discard, nil)))
	ask := orchestrator.Event{Kind: orchestrator.EvNeedsHelp, Task: "t-1", Text: "which database?\x1b[31m"}
	n.event(ask)
	n.event(ask) // the same question again: once is enough
	n.event(orchestrator.Event{Kind: orchestrator.EvNeedsHuman, Task: "t-2", Text: "API errors", Fields: map[string]any{"retrying": true}})
	n.event(orchestrator.Event{Kind: orchestrator.EvNeedsHuman, Task: "t-2", Text: "login prompt"})
	n.event(orchestrator.Event{Kind: orchestrator.EvCompleted, Task: "t-3"})
	n.event(orchestrator.Event{Kind: orchestrator.EvIdle, Fields: map[string]any{"stats": orchestrator.Stats{TasksCompleted: 3}}})
	n.close(time.Minute)
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	want := []string{
		"--app-name=chorus|Chorus|t-1 needs you: which database?|",
		"--app-name=chorus|Chorus|t-2 is stuck without a person: login prompt|",
		"--app-name=chorus|Chorus|autopilot finished: 3 closed, 0 failed, 0 blocked, 0 merged|",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("notifications:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}

// hit is one request a notification server received.
type hit struct {
	path, contentType, title, priority, tags string
	body                                     []byte
}

// TestNotificationsReachWebhookAndNtfy runs the real binary, autopilot with
// the scripted agent, against a local HTTP server standing in for a
// webhook and an ntfy topic: a task that asks for a person, one whose
// agent keeps crashing (FAILED) and one that lands. The webhook's first
// answer is a 503: the notification is sent again after the backoff.
func TestNotificationsReachWebhookAndNtfy(t *testing.T) {
	hits := make(chan hit, 64)
	var webhookCalls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.URL.Path == "/hook" && webhookCalls.Add(1) == 1 {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		hits <- hit{path: r.URL.Path, contentType: r.Header.Get("Content-Type"), title: r.Header.Get("Title"),
			priority: r.Header.Get("Priority"), tags: r.Header.Get("Tags"), body: b}
	}))
	defer srv.Close()
	dir := scriptedProject(t, `
@ prompt~asks-a-person
signal NEEDS_HELP "which database should I use?"
hang
@ prompt~always-crashes
exit 3
@ *
write done.txt "done"
commit "feat: done"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["notify"] = map[string]any{"webhook": srv.URL + "/hook", "ntfy": srv.URL + "/night-topic"}
		cfg["completion"].(map[string]any)["maxConsecutiveErrors"] = 2
		cfg["completion"].(map[string]any)["maxIterations"] = 2
	})
	ids := map[string]string{}
	for _, title := range []string{"lands", "asks-a-person", "always-crashes"} {
		r := chorus(t, dir, "task", "create", title)
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		ids[title] = strings.TrimSpace(r.stdout)
	}
	code, out := runBinary(t, dir, "--autopilot", "--headless", "--max-agents", "3")
	if code != ExitUnfinished {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitUnfinished, out)
	}
	// Every notification was delivered before the run ended.
	close(hits)
	var webhook []notify.Message
	var ntfy []hit
	for h := range hits {
		switch h.path {
		case "/hook":
			var m notify.Message
			if err := json.Unmarshal(h.body, &m); err != nil || h.contentType != "application/json" {
				t.Fatalf("webhook body %q (%s): %v", h.body, h.contentType, err)
			}
			webhook = append(webhook, m)
		case "/night-topic":
			ntfy = append(ntfy, h)
		default:
			t.Errorf("request to %s", h.path)
		}
	}
	for _, m := range webhook {
		t.Logf("webhook: %s %q %q", m.Kind, m.Title, m.Text)
	}
	kinds := map[string]notify.Message{}
	for _, m := range webhook {
		kinds[m.Kind] = m
	}
	for kind, task := range map[string]string{"needs_help": ids["asks-a-person"], "task_failed": ids["always-crashes"], "finished": ""} {
		m, ok := kinds[kind]
		if !ok {
			t.Errorf("the webhook got no %s; got %+v\n%s", kind, webhook, out)
			continue
		}
		if m.Task != task || m.Text == "" || !strings.HasPrefix(m.Title, "Chorus (") || m.Time.IsZero() {
			t.Errorf("%s: %+v", kind, m)
		}
	}
	if m := kinds["needs_help"]; !strings.Contains(m.Text, "which database should I use?") || m.Priority != 4 {
		t.Errorf("needs_help: %+v", m)
	}
	if m := kinds["finished"]; !strings.Contains(m.Text, "autopilot finished: 1 closed") {
		t.Errorf("finished: %+v", m)
	}
	if webhookCalls.Load() != int32(len(webhook))+1 {
		t.Errorf("the webhook was called %d times for %d notifications: the 503 was not retried once", webhookCalls.Load(), len(webhook))
	}
	if len(ntfy) != len(webhook) {
		t.Errorf("ntfy got %d notifications, the webhook %d", len(ntfy), len(webhook))
	}
	var sawFailed bool
	for _, h := range ntfy {
		if !strings.HasPrefix(h.contentType, "text/plain") || h.title == "" || h.priority == "" || h.tags == "" || len(h.body) == 0 {
			t.Errorf("ntfy request: %+v", h)
		}
		if strings.Contains(h.title, ids["always-crashes"]+" failed") {
			sawFailed = true
			if h.priority != "4" || h.tags != "x" || !strings.HasPrefix(string(h.body), ids["always-crashes"]+" failed: ") {
				t.Errorf("ntfy failure: %+v %q", h, h.body)
			}
		}
	}
	if !sawFailed {
		t.Errorf("ntfy got no failure: %+v", ntfy)
	}
}

// Each event a person must hear of maps to one message; the rest to none.
func TestNotifyMessage(t *testing.T) {
	for _, c := range []struct {
		ev       orchestrator.Event
		ok       bool
		text     string
		priority int
	}{
		{orchestrator.Event{Kind: orchestrator.EvNeedsHelp, Task: "t-1", Text: "which?"}, true, "t-1 needs you: which?", 4},
		{orchestrator.Event{Kind: orchestrator.EvNeedsHuman, Task: "t-1", Text: "login", Fields: map[string]any{"retrying": true}}, false, "", 0},
		{orchestrator.Event{Kind: orchestrator.EvNeedsHuman, Task: "t-1", Text: "login prompt"}, true, "t-1 is stuck without a person: login prompt", 4},
		{orchestrator.Event{Kind: orchestrator.EvFailed, Task: "t-2", Text: "exit code 3, 2 times\x1b[2J"}, true, "t-2 failed: exit code 3, 2 times", 4},
		{orchestrator.Event{Kind: orchestrator.EvPaused, Text: "the agent CLI is missing"}, true, "autopilot paused: the agent CLI is missing", 4},
		{orchestrator.Event{Kind: orchestrator.EvResumed, Text: "the CLI is back"}, true, "autopilot resumed: the CLI is back", 3},
		{orchestrator.Event{Kind: orchestrator.EvPaused, Text: "autopilot paused: 3 agents in a row could not start"}, true, "autopilot paused: 3 agents in a row could not start", 4},
		{orchestrator.Event{Kind: orchestrator.EvHeld, Text: "autopilot holds: usage limit until 04:00"}, true, "autopilot holds: usage limit until 04:00", 4},
		{orchestrator.Event{Kind: orchestrator.EvResumed, Text: "autopilot resumes: a turn passed (held since 03:00: usage limit)"}, true, "autopilot resumes: a turn passed (held since 03:00: usage limit)", 3},
		{orchestrator.Event{Kind: orchestrator.EvProbe, Text: "trying one agent"}, false, "", 0},
		{orchestrator.Event{Kind: "merge_waiting_human", Task: "t-4", Text: "the resolver gave up on a.go"}, true, "merge of t-4 waits for you: the resolver gave up on a.go", 4},
		{orchestrator.Event{Kind: "merge_paused", Text: "main moved outside Chorus"}, true, "merge queue paused: main moved outside Chorus", 4},
		{orchestrator.Event{Kind: "merge_resumed", Text: "main accepted at abc"}, true, "merge queue resumed: main accepted at abc", 3},
		{orchestrator.Event{Kind: "merge_landed", Task: "t-4"}, false, "", 0},
		{orchestrator.Event{Kind: orchestrator.EvCompleted, Task: "t-3"}, false, "", 0},
	} {
		m, ok := notifyMessage(c.ev)
		if ok != c.ok || ok && (m.Text != c.text || m.Priority != c.priority || m.Kind != string(c.ev.Kind)) {
			t.Errorf("%s: %v %+v, want %v %q priority %d", c.ev.Kind, ok, m, c.ok, c.text, c.priority)
		}
	}
}

// TestBackgroundEngineNotifies: the engine a TUI attaches to (chorus
// engine) sends the same notifications: its autopilot running out of work
// reaches the webhook.
func TestBackgroundEngineNotifies(t *testing.T) {
	hits := make(chan notify.Message, 16)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m notify.Message
		if err := json.NewDecoder(r.Body).Decode(&m); err == nil {
			hits <- m
		}
	}))
	defer srv.Close()
	dir := scriptedProject(t, `
write done.txt "done"
commit "feat: done"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["notify"] = map[string]any{"webhook": srv.URL}
	})
	if r := chorus(t, dir, "task", "create", "lands"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	eng := exec.Command(chorusBinary(t), "-C", dir, "engine", "--mode", "autopilot", "--ready-fd", "3")
	eng.ExtraFiles = []*os.File{pw}
	var engOut strings.Builder
	eng.Stdout, eng.Stderr = &engOut, &engOut
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer eng.Process.Kill()
	if b, _ := io.ReadAll(pr); strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("engine: %q\n%s", b, engOut.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	select {
	case m := <-hits:
		if m.Kind != "finished" || !strings.Contains(m.Text, "autopilot finished: 1 closed") {
			t.Errorf("the webhook got %+v", m)
		}
	case <-ctx.Done():
		t.Fatalf("no notification from the background engine:\n%s", engOut.String())
	}
	if r := chorus(t, dir, "stop", "--wait"); r.code != 0 {
		t.Fatalf("stop: %d %s", r.code, r.stderr)
	}
	_ = eng.Wait()
}
