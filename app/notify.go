package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/notify"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/proc"
)

// notifier tells a person who is not watching (detached, another window,
// asleep) that a task needs them or failed, autopilot paused or resumed,
// or a run finished: on the desktop with tui.notify (notify-send where it
// is installed, otherwise OSC 777 and OSC 9 on the controlling terminal),
// and through notify.webhook and notify.ntfy, delivered in the background
// with retries (package notify).
type notifier struct {
	log    *slog.Logger
	send   func(title, body string) error // the desktop; nil without tui.notify
	remote *notify.Dispatcher             // nil without notify URLs
	repo   string

	deskOnce sync.Once
	deskQ    chan string // desktop notifications waiting, in order
	deskDone chan struct{}

	mu       sync.Mutex
	closed   bool
	notified map[string]bool // per task and kind: once until it changes
}

// newNotifier notifies on the desktop only.
func newNotifier(log *slog.Logger) *notifier {
	return &notifier{log: log, send: desktopNotify, notified: map[string]bool{}}
}

// notifierFor is the project's notifier, nil when nothing is configured.
func notifierFor(cfg config.Config, log *slog.Logger) *notifier {
	remote := notify.New(notify.Options{Webhook: cfg.Notify.Webhook, Ntfy: cfg.Notify.Ntfy, Log: log})
	if !cfg.TUI.Notify && remote == nil {
		return nil
	}
	n := newNotifier(log)
	if !cfg.TUI.Notify {
		n.send = nil
	}
	n.remote, n.repo = remote, cfg.Project.Name
	return n
}

// notifyMessage is what an event says to a person, if anything.
func notifyMessage(ev orchestrator.Event) (notify.Message, bool) {
	m := notify.Message{Kind: string(ev.Kind), Task: ev.Task, Priority: 4}
	switch {
	case ev.Kind == orchestrator.EvNeedsHelp:
		m.Title, m.Text, m.Tags = ev.Task+" needs you", fmt.Sprintf("%s needs you: %s", ev.Task, ev.Text), []string{"raising_hand"}
	case ev.Kind == orchestrator.EvNeedsHuman && ev.Fields["retrying"] != true:
		m.Title, m.Text, m.Tags = ev.Task+" is stuck", fmt.Sprintf("%s is stuck without a person: %s", ev.Task, ev.Text), []string{"warning"}
	case ev.Kind == orchestrator.EvFailed:
		m.Title, m.Text, m.Tags = ev.Task+" failed", fmt.Sprintf("%s failed: %s", ev.Task, orDash(ev.Text)), []string{"x"}
	case ev.Kind == orchestrator.EvPaused:
		m.Title, m.Text, m.Tags = "autopilot paused", prefixed("autopilot paused: ", ev.Text), []string{"pause_button"}
	case ev.Kind == orchestrator.EvHeld:
		// An outage several tasks share, or the account's usage window:
		// nothing starts until it clears (by itself).
		m.Title, m.Text, m.Tags = "autopilot holds", prefixed("autopilot holds: ", ev.Text), []string{"pause_button"}
	case ev.Kind == orchestrator.EvResumed:
		m.Title, m.Text, m.Tags, m.Priority = "autopilot resumed", prefixed("autopilot resumed: ", ev.Text), []string{"arrow_forward"}, 3
	case ev.Kind == orchestrator.EvIdle:
		st, _ := ev.Fields["stats"].(orchestrator.Stats)
		m.Kind, m.Title, m.Priority, m.Tags = "finished", "autopilot finished", 3, []string{"white_check_mark"}
		m.Text = fmt.Sprintf("autopilot finished: %d closed, %d failed, %d blocked, %d merged", st.TasksCompleted, st.TasksFailed, st.TasksBlocked, st.MergesAuto+st.MergesManual)
		if st.TasksFailed+st.TasksBlocked > 0 {
			m.Priority, m.Tags = 4, []string{"warning"}
		}
	case ev.Kind == mergeEvent(merge.EventWaitingHuman):
		m.Title, m.Text, m.Tags = "merge of "+ev.Task+" waits for you", fmt.Sprintf("merge of %s waits for you: %s", ev.Task, orDash(ev.Text)), []string{"warning"}
	case ev.Kind == mergeEvent(merge.EventPaused):
		m.Title, m.Text, m.Tags = "merge queue paused", "merge queue paused: "+orDash(ev.Text), []string{"pause_button"}
	case ev.Kind == mergeEvent(merge.EventResumed):
		m.Title, m.Text, m.Tags, m.Priority = "merge queue resumed", "merge queue resumed: "+orDash(ev.Text), []string{"arrow_forward"}, 3
	default:
		return m, false
	}
	m.Title, m.Text = line(m.Title), line(m.Text)
	return m, true
}

// mergeEvent is the engine's name for a merge service event.
func mergeEvent(k merge.EventKind) orchestrator.EventKind {
	return orchestrator.EventKind("merge_" + strings.ReplaceAll(string(k), "-", "_"))
}

// prefixed is text after prefix, unless the engine's text already says
// what happened ("autopilot paused: …").
func prefixed(prefix, text string) string {
	if strings.HasPrefix(text, "autopilot ") {
		return text
	}
	return prefix + orDash(text)
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// event notifies for one engine event. A question or a stuck screen is
// told once until it changes; the others each time.
func (n *notifier) event(ev orchestrator.Event) {
	if n == nil {
		return
	}
	m, ok := notifyMessage(ev)
	if !ok {
		return
	}
	if ev.Kind == orchestrator.EvNeedsHelp || ev.Kind == orchestrator.EvNeedsHuman {
		key := string(ev.Kind) + "\x00" + ev.Task + "\x00" + ev.Text
		n.mu.Lock()
		seen := n.notified[key]
		n.notified[key] = true
		n.mu.Unlock()
		if seen {
			return
		}
	}
	n.deliver(m)
}

func (n *notifier) deliver(m notify.Message) {
	if n.send != nil {
		// notify-send may take seconds: its own goroutine, in order, so the
		// events' reader never waits for it.
		n.deskOnce.Do(func() {
			n.deskQ, n.deskDone = make(chan string, 64), make(chan struct{})
			go func() {
				defer close(n.deskDone)
				for text := range n.deskQ {
					if err := n.send("Chorus", text); err != nil {
						n.log.Warn("desktop notification not sent", "err", err)
					}
				}
			}()
		})
		n.mu.Lock()
		if !n.closed {
			select {
			case n.deskQ <- m.Text:
			default:
				n.log.Warn("desktop notification dropped: too many waiting", "text", m.Text)
			}
		}
		n.mu.Unlock()
	}
	if n.remote != nil {
		m.Repo = n.repo
		if n.repo != "" {
			m.Title = "Chorus (" + n.repo + "): " + m.Title
		} else {
			m.Title = "Chorus: " + m.Title
		}
		n.remote.Send(m)
	}
}

// notifyFlush bounds how long the end of a run waits for the webhook and
// ntfy to take what is still queued (the run's last word among it).
const notifyFlush = 15 * time.Second

// close delivers what is still queued (desktop, webhook, ntfy), for at
// most limit, then stops the workers. Nothing is sent after it.
func (n *notifier) close(limit time.Duration) {
	if n == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.deskOnce.Do(func() {}) // none started from now on
	if n.deskQ != nil {
		close(n.deskQ)
		select {
		case <-n.deskDone:
		case <-ctx.Done():
		}
	}
	if n.remote == nil {
		return
	}
	if err := n.remote.Flush(ctx); err != nil {
		n.log.Warn("notifications still queued when the run ended were dropped", "err", err)
	}
	n.remote.Close()
}

// follow notifies for the engine's events until ctx ends.
func (n *notifier) follow(ctx context.Context, events <-chan orchestrator.Event) {
	for {
		select {
		case ev := <-events:
			n.event(ev)
		case <-ctx.Done():
			return
		}
	}
}

// desktopNotify shows one notification.
func desktopNotify(title, body string) error {
	if _, err := exec.LookPath("notify-send"); err == nil {
		r, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"notify-send", "--app-name=chorus", title, body}, Timeout: 10 * time.Second})
		if err != nil {
			return err
		}
		if r.ExitCode != 0 {
			return fmt.Errorf("notify-send exited %d: %s", r.ExitCode, proc.FirstLine(r.Stderr))
		}
		return nil
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("no notify-send and no terminal to notify through")
	}
	defer tty.Close()
	// OSC 777 (urxvt, foot, WezTerm…) and OSC 9 (iTerm2, Windows Terminal,
	// kitty…); terminals ignore the one they do not know.
	_, err = fmt.Fprintf(tty, "\x1b]777;notify;%s;%s\x1b\\\x1b]9;%s\x1b\\", title, body, body)
	return err
}
