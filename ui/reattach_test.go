package ui

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
)

// The TUI outlives its engine: chorus runs in a terminal with an agent
// at work (in its agent host); the engine is killed with -9. The same TUI
// process, with nothing typed, starts a new engine, which takes the agent
// back, and shows the agent's tile as it was; the agent's live output
// then reaches it and the task lands after its first iteration.
func TestTUIReattachesAfterEngineKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary in tmux")
	}
	x := newTmux(t, "chorus-reattach")
	s := newSession(t, `
run "for i in $(seq 1 30); do echo history of $CHORUS_TASK_ID line $i; done"
run "`+x.bin+` -L `+x.sock+` wait-for go-$CHORUS_TASK_ID"
run "echo live output of $CHORUS_TASK_ID"
run "echo done > work-$CHORUS_TASK_ID.txt"
commit "work of the task"
signal COMPLETE "done"
hang
`, nil)
	s.task("t-a", "alpha", 1)
	bin := testkit.Chorus(t)
	dir := chorusdir.At(s.root)
	t.Cleanup(func() {
		exec.Command(bin, "-C", s.root, "stop", "--wait").Run()
		exec.Command(x.bin, "-L", x.sock, "kill-server").Run()
	})
	env := "PATH=" + os.Getenv("PATH")
	x.cmd("new-session", "-d", "-x", "160", "-y", "40", "-e", env, bin+" -C "+s.root+" --autopilot; sleep 600")
	before := tileLines(x.waitScreen("history of t-a line 30"), "history of t-a")
	shell := strings.TrimSpace(x.cmd("display", "-p", "#{pane_pid}"))
	tui := childOf(t, shell)

	lock, err := dir.InspectLock()
	if err != nil || !lock.Held {
		t.Fatalf("no engine holds the repository: %+v %v", lock, err)
	}
	old := lock.Holder.PID
	killed := time.Now()
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !testkit.WaitExit(t, old, waitLimit) {
		t.Fatal("the engine survived kill -9")
	}

	// Nothing typed: the same TUI comes back on a new engine with the
	// agent's screen as it was, and the task list shows the agent's
	// iteration again (it is blank while the list reloads).
	after := tileLines(x.waitScreenAll("took its agents back", "history of t-a line 30", "iter 1"), "history of t-a")
	back := time.Since(killed)
	if strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("the agent's tile changed across the engine's death:\nbefore:\n%s\nafter:\n%s", strings.Join(before, "\n"), strings.Join(after, "\n"))
	}
	if now := childOf(t, shell); now != tui {
		t.Fatalf("the TUI (pid %s) was replaced by pid %s", tui, now)
	}
	lock, err = dir.InspectLock()
	if err != nil || !lock.Held || lock.Holder.PID == old {
		t.Fatalf("no new engine holds the repository: %+v %v", lock, err)
	}
	c, err := remote.Dial(context.Background(), remote.SocketPath(dir), remote.RoleEvents)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	events := &testkit.Events[orchestrator.Event]{TB: t, C: c.Subscribe(), Limit: waitLimit}

	// Live output of the re-adopted agent reaches the tile; the task
	// lands without a second iteration.
	signalled := time.Now()
	x.cmd("wait-for", "-S", "go-t-a")
	x.waitScreen("live output of t-a")
	t.Logf("kill -9 to the same TUI showing the re-adopted agent's tile: %v; its next output on the tile after %v", back.Round(time.Millisecond), time.Since(signalled).Round(time.Millisecond))
	events.Wait(func(ev orchestrator.Event) bool {
		if ev.Task == "t-a" && (ev.Kind == orchestrator.EvStarted || ev.Kind == orchestrator.EvIteration) {
			t.Errorf("the new engine started the agent again: %+v", ev)
		}
		return ev.Task == "t-a" && ev.Kind == orchestrator.EventKind("merge_"+string(merge.EventLanded))
	})
	if st := s.get("t-a").Status; st != beads.StatusClosed {
		t.Fatalf("t-a: %s", st)
	}
	if n := iterationsOf(t, dir, "t-a"); n != 1 {
		t.Fatalf("%d iterations started, want 1", n)
	}
}

// tileLines are the lines of the tile that shows text, in order: each
// screen line cut to the box around the text, so the panels beside the
// tile do not count.
func tileLines(screen, text string) []string {
	var out []string
	for _, l := range strings.Split(screen, "\n") {
		i := strings.Index(l, text)
		if i < 0 {
			continue
		}
		start := 0
		if b := strings.LastIndexAny(l[:i], "│║"); b >= 0 {
			_, n := utf8.DecodeRuneInString(l[b:])
			start = b + n
		}
		end := len(l)
		if j := strings.IndexAny(l[i:], "│║"); j >= 0 {
			end = i + j
		}
		out = append(out, l[start:end])
	}
	return out
}

// childOf is the pid of the one child of a shell.
func childOf(t *testing.T, shell string) string {
	t.Helper()
	out, err := exec.Command("pgrep", "-P", shell).Output()
	if err != nil {
		t.Fatalf("the child of %s: %v", shell, err)
	}
	return strings.TrimSpace(string(out))
}

// iterationsOf counts the task's iterations in the session log (every
// engine's), checking each was the first.
func iterationsOf(t *testing.T, dir chorusdir.Dir, id string) int {
	t.Helper()
	log, err := os.ReadFile(dir.SessionLog())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, l := range strings.Split(string(log), "\n") {
		var e chorusdir.Entry
		if json.Unmarshal([]byte(l), &e) == nil && e.Details["taskId"] == id && e.Event == "iteration_started" {
			n++
			if it, _ := e.Details["iteration"].(float64); it != 1 {
				t.Errorf("%s: iteration %v started", id, e.Details["iteration"])
			}
		}
	}
	return n
}
