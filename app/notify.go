package app

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/proc"
)

// notifier tells a person who is not watching (detached, another window)
// that an agent needs them or autopilot has finished (tui.notify): through
// notify-send where it is installed, otherwise OSC 777 and OSC 9 on the
// controlling terminal when there is one (a headless run in a terminal).
type notifier struct {
	log  *slog.Logger
	send func(title, body string) error

	mu       sync.Mutex
	wasIdle  bool
	notified map[string]bool // per task and kind: once until it changes
}

func newNotifier(log *slog.Logger) *notifier {
	return &notifier{log: log, send: desktopNotify, notified: map[string]bool{}, wasIdle: true}
}

// notifyText is what an event says to a person, if anything.
func notifyText(ev orchestrator.Event) (string, bool) {
	switch {
	case ev.Kind == orchestrator.EvNeedsHelp:
		return fmt.Sprintf("%s needs you: %s", ev.Task, ev.Text), true
	case ev.Kind == orchestrator.EvNeedsHuman && ev.Fields["retrying"] != true:
		return fmt.Sprintf("%s is stuck without a person: %s", ev.Task, ev.Text), true
	}
	return "", false
}

// event notifies for one engine event.
func (n *notifier) event(ev orchestrator.Event) {
	body, ok := notifyText(ev)
	if !ok {
		return
	}
	key := string(ev.Kind) + "\x00" + ev.Task + "\x00" + ev.Text
	n.mu.Lock()
	seen := n.notified[key]
	n.notified[key] = true
	n.mu.Unlock()
	if !seen {
		n.deliver(line(body))
	}
}

// changed notifies once each time autopilot runs out of work.
func (n *notifier) changed(s orchestrator.Snapshot) {
	done := s.Idle && s.Mode == config.ModeAutopilot && !s.Paused
	n.mu.Lock()
	fire := done && !n.wasIdle
	n.wasIdle = s.Idle
	n.mu.Unlock()
	if fire {
		st := s.Stats
		n.deliver(fmt.Sprintf("autopilot finished: %d closed, %d failed, %d blocked, %d merged", st.TasksCompleted, st.TasksFailed, st.TasksBlocked, st.MergesAuto+st.MergesManual))
	}
}

// finished is the end of a headless run: autopilot's verdict, if it ran
// out of work.
func (n *notifier) finished(s orchestrator.Snapshot) {
	n.mu.Lock()
	n.wasIdle = false
	n.mu.Unlock()
	n.changed(s)
}

func (n *notifier) deliver(body string) {
	if err := n.send("Chorus", body); err != nil {
		n.log.Warn("desktop notification not sent", "err", err)
	}
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
