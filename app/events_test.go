package app

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
)

// jsonEvent is the documented shape of one line of --json output
// (docs/events.md).
type jsonEvent struct {
	Time   string         `json:"time"`
	Kind   string         `json:"kind"`
	Agent  string         `json:"agent"`
	Task   string         `json:"task"`
	Text   string         `json:"text"`
	Fields map[string]any `json:"fields"`
}

// --headless --json prints one JSON object per event on stdout and
// nothing else there; the human lines stay on stderr.
func TestHeadlessJSONEvents(t *testing.T) {
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
signal COMPLETE
`, nil)
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "one").stdout)
	cmd := exec.Command(chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	kinds := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		var ev jsonEvent
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Kind == "" || ev.Time == "" {
			t.Fatalf("not an event object: %q (%v)", line, err)
		}
		if ev.Task == id {
			kinds[ev.Kind] = true
		}
	}
	for _, k := range []string{"agent_started", "task_completed", "merge_landed"} {
		if !kinds[k] {
			t.Errorf("no %s event for %s in:\n%s", k, id, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), "summary: 1 closed") {
		t.Errorf("stderr lacks the summary:\n%s", stderr.String())
	}
	if r := chorus(t, dir, "--json"); r.code != ExitUsage || !strings.Contains(r.stderr, "--headless") {
		t.Errorf("--json without --headless: %d %s", r.code, r.stderr)
	}
}

// A background engine: chorus events --json follows it, chorus stop
// --wait ends it (the lock goes with it), and without one attach, stop and
// events say there is none.
func TestBackgroundEngineEventsAndStop(t *testing.T) {
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
signal COMPLETE
`, nil)
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "one").stdout)
	for _, args := range [][]string{{"stop"}, {"events"}} {
		if r := chorus(t, dir, args...); r.code != ExitFailure || !strings.Contains(r.stderr, "no Chorus engine is running") {
			t.Errorf("%v without an engine: %d %s", args, r.code, r.stderr)
		}
	}
	// The engine as chorus starts it, told to say when it listens.
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	eng := exec.Command(chorusBinary(t), "-C", dir, "engine", "--mode", "semi-auto", "--ready-fd", "3")
	eng.ExtraFiles = []*os.File{pw}
	var engOut bytes.Buffer
	eng.Stdout, eng.Stderr = &engOut, &engOut
	if err := eng.Start(); err != nil {
		t.Fatal(err)
	}
	pw.Close()
	defer eng.Process.Kill()
	if b, _ := io.ReadAll(pr); strings.TrimSpace(string(b)) != "ok" {
		t.Fatalf("engine: %q\n%s", b, engOut.String())
	}
	// One Chorus per repository: the engine holds the lock.
	if r := chorus(t, dir, "--autopilot", "--headless"); r.code != ExitLocked {
		t.Fatalf("a second Chorus beside the engine: %d %s", r.code, r.stderr)
	}
	ev := exec.Command(chorusBinary(t), "-C", dir, "events", "--json")
	out, err := ev.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ev.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(out)
	if !sc.Scan() || !strings.Contains(sc.Text(), `"kind":"engine_attached"`) {
		t.Fatalf("events' first line: %q", sc.Text())
	}
	// Work for it, given through the socket as a TUI gives it.
	c, err := remote.Dial(context.Background(), remote.SocketPath(chorusdir.At(dir)), remote.RoleTUI)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id}); err != nil {
		t.Fatal(err)
	}
	landed := false
	for !landed && sc.Scan() {
		var e jsonEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("events --json printed %q: %v", sc.Text(), err)
		}
		landed = e.Kind == "merge_landed" && e.Task == id
	}
	if !landed {
		t.Fatalf("events ended before %s landed", id)
	}
	if r := chorus(t, dir, "stop", "--wait"); r.code != 0 || !strings.Contains(r.stderr, "stopped") {
		t.Fatalf("stop --wait: %d %s", r.code, r.stderr)
	}
	io.Copy(io.Discard, out)
	if err := ev.Wait(); err != nil {
		t.Errorf("events after the engine stopped: %v", err)
	}
	if err := eng.Wait(); err != nil {
		t.Errorf("engine exit: %v\n%s", err, engOut.String())
	}
	if st, err := chorusdir.At(dir).InspectLock(); err != nil || st.Held {
		t.Errorf("lock after stop: %+v %v", st, err)
	}

	// kill -9 of the engine leaves its socket and lock behind; the next
	// engine clears both and starts (recovery runs as after any crash).
	start := func() *exec.Cmd {
		t.Helper()
		pr, pw, _ := os.Pipe()
		e := exec.Command(chorusBinary(t), "-C", dir, "engine", "--ready-fd", "3")
		e.ExtraFiles = []*os.File{pw}
		e.Stdout, e.Stderr = &engOut, &engOut
		if err := e.Start(); err != nil {
			t.Fatal(err)
		}
		pw.Close()
		if b, _ := io.ReadAll(pr); strings.TrimSpace(string(b)) != "ok" {
			t.Fatalf("engine: %q\n%s", b, engOut.String())
		}
		return e
	}
	killed := start()
	killed.Process.Kill()
	killed.Wait()
	if _, err := os.Stat(remote.SocketPath(chorusdir.At(dir))); err != nil {
		t.Fatalf("the killed engine's socket: %v", err)
	}
	next := start()
	defer next.Process.Kill()
	if r := chorus(t, dir, "stop", "--wait"); r.code != 0 {
		t.Fatalf("stop after a crash: %d %s", r.code, r.stderr)
	}
	next.Wait()
}
