package app

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/config"
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
	snap := orchestrator.Snapshot{Idle: false}
	snap.Mode = config.ModeAutopilot
	n.changed(snap)
	snap.Idle = true
	snap.Stats.TasksCompleted = 3
	n.changed(snap)
	n.changed(snap) // still idle: no second notice
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
