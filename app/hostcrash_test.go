package app

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// jsonRun is one `chorus --autopilot --headless --json` whose events
// are read as they come.
type jsonRun struct {
	cmd    *exec.Cmd
	events chan jsonEvent
	cancel context.CancelFunc
}

func startHeadless(t *testing.T, dir string) *jsonRun {
	t.Helper()
	return startHeadlessWith(t, chorusBinary(t), dir)
}

func startHeadlessWith(t *testing.T, bin, dir string) *jsonRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, bin, "-C", dir, "--autopilot", "--headless", "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = io.Discard
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	h := &jsonRun{cmd: cmd, events: make(chan jsonEvent, 1024), cancel: cancel}
	go func() {
		defer close(h.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev jsonEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				h.events <- ev
			}
		}
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return h
}

// waitEvent returns the first event (from now on) that pred takes.
func (h *jsonRun) waitEvent(t *testing.T, what string, pred func(jsonEvent) bool, toEnd ...bool) jsonEvent {
	t.Helper()
	deadline := time.After(2 * time.Minute)
	for {
		select {
		case ev, ok := <-h.events:
			if !ok {
				if len(toEnd) > 0 && toEnd[0] {
					return jsonEvent{}
				}
				t.Fatalf("the engine ended before %s", what)
			}
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s within 2 minutes", what)
		}
	}
}

// An agent in an agent host outlives a kill -9 of its engine: the next
// engine re-adopts the same process, which finishes the same iteration,
// and the task closes with iteration 1.
func TestHostedAgentOutlivesEngineKill(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate")
	dir := scriptedProject(t, `
print "agent at work"
run "while [ ! -f `+gate+` ]; do sleep 0.05; done"
print "agent goes on"
run "echo $CHORUS_TASK_ID > f-$CHORUS_TASK_ID.txt"
commit "feat: hosted work"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["agents"].(map[string]any)["host"] = true
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": "true", "required": true, "order": 1}}
	})
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "hosted task").stdout)

	first := startHeadless(t, dir)
	ev := first.waitEvent(t, "agent_started", func(e jsonEvent) bool { return e.Kind == "agent_started" && e.Task == id })
	pid := int(ev.Fields["pid"].(float64))
	st, err := ptyproc.StartTimeOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	_ = first.cmd.Wait()
	if !ptyproc.Alive(pid, st) {
		t.Fatal("the agent died with its engine")
	}

	started := time.Now()
	second := startHeadless(t, dir)
	ev = second.waitEvent(t, "re-adoption", func(e jsonEvent) bool {
		return e.Task == id && e.Kind == "recovered" && strings.Contains(e.Text, "re-adopted")
	})
	t.Logf("engine start to re-adopted agent: %v", time.Since(started))
	if got := int(ev.Fields["pid"].(float64)); got != pid {
		t.Fatalf("re-adopted pid %d, want %d", got, pid)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second.waitEvent(t, "merge_landed", func(e jsonEvent) bool {
		if e.Task == id && (e.Kind == "agent_started" || e.Kind == "iteration_started") {
			t.Errorf("the second engine began a new iteration: %+v", e)
		}
		return e.Task == id && e.Kind == "merge_landed"
	})
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second engine: %v", err)
	}
	if r := chorus(t, dir, "task", "show", id, "--json"); !strings.Contains(r.stdout, `"status": "closed"`) {
		t.Fatalf("task not closed: %s", r.stdout)
	}
	if n := iterationsStarted(t, dir, id); n != 1 {
		t.Fatalf("%d iterations started, want 1", n)
	}
	if !testkit.WaitExit(t, pid, 30*time.Second) {
		t.Fatal("the agent still runs after its task closed")
	}
}

// The same, 20 times in a row, the engine killed at a random moment of
// the agent's work each time: every task closes after one iteration, and
// an agent alive at the kill is re-adopted, never started again.
func TestHostedAgentsOutliveRandomKills(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	dir := scriptedProject(t, `
print "agent at work"
run "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do echo step $i; sleep 0.03; done"
run "echo $CHORUS_TASK_ID > f-$CHORUS_TASK_ID.txt"
run "git add -A && git commit -q -m 'feat: hosted work' || true"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["agents"].(map[string]any)["host"] = true
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": "true", "required": true, "order": 1}}
	})
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	adopted := 0
	for round := 0; round < 20; round++ {
		id := strings.TrimSpace(chorus(t, dir, "task", "create", fmt.Sprintf("hosted task %d", round)).stdout)
		first := startHeadless(t, dir)
		ev := first.waitEvent(t, "agent_started", func(e jsonEvent) bool { return e.Kind == "agent_started" && e.Task == id })
		pid := int(ev.Fields["pid"].(float64))
		st, _ := ptyproc.StartTimeOf(pid)
		// A random moment of the agent's work (which lasts over 600 ms):
		// a chaos choice, not a wait for anything.
		kill := time.NewTimer(time.Duration(rng.Intn(600)) * time.Millisecond)
		select {
		case <-kill.C:
		case <-first.events: // drained so the engine never blocks on its stdout
		}
		kill.Stop()
		_ = first.cmd.Process.Signal(syscall.SIGKILL)
		_ = first.cmd.Wait()
		alive := ptyproc.Alive(pid, st)

		second := startHeadless(t, dir)
		readopted := false
		second.waitEvent(t, "the engine's end", func(e jsonEvent) bool {
			if e.Task == id && e.Kind == "recovered" && strings.Contains(e.Text, "re-adopted") {
				readopted = true
				if got := int(e.Fields["pid"].(float64)); got != pid {
					t.Errorf("round %d: re-adopted pid %d, want %d", round, got, pid)
				}
			}
			if e.Task == id && (e.Kind == "agent_started" || e.Kind == "iteration_started") {
				t.Errorf("round %d: the second engine began a new iteration: %+v", round, e)
			}
			return false
		}, true)
		if err := second.cmd.Wait(); err != nil {
			t.Fatalf("round %d: second engine: %v", round, err)
		}
		if alive && !readopted {
			t.Errorf("round %d: agent %d was alive at the kill and not re-adopted", round, pid)
		}
		if readopted {
			adopted++
		}
		if r := chorus(t, dir, "task", "show", id, "--json"); !strings.Contains(r.stdout, `"status": "closed"`) {
			t.Fatalf("round %d: task not closed: %s", round, r.stdout)
		}
		if n := iterationsStarted(t, dir, id); alive && n != 1 {
			t.Fatalf("round %d: %d iterations started, want 1", round, n)
		}
	}
	t.Logf("%d of 20 agents re-adopted alive", adopted)
}

// iterationsStarted counts the task's iterations in the session log,
// which has the events of every engine, checking each was the first.
func iterationsStarted(t *testing.T, dir, id string) int {
	t.Helper()
	log, err := os.ReadFile(filepath.Join(dir, ".chorus", "session-log.jsonl"))
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

// A newer build of chorus (same protocol) re-adopts the agent an older
// one started.
func TestNewerBinaryReadoptsHostedAgent(t *testing.T) {
	newer := filepath.Join(t.TempDir(), "chorus-newer")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=99.0.0-newer", "-o", newer, "./cmd/chorus")
	build.Dir = testkit.Root()
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building a newer chorus: %v\n%s", err, out)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	dir := scriptedProject(t, `
print "agent at work"
run "while [ ! -f `+gate+` ]; do sleep 0.05; done"
run "echo $CHORUS_TASK_ID > f-$CHORUS_TASK_ID.txt"
commit "feat: hosted work"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["agents"].(map[string]any)["host"] = true
	})
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "upgraded task").stdout)
	first := startHeadless(t, dir)
	ev := first.waitEvent(t, "agent_started", func(e jsonEvent) bool { return e.Kind == "agent_started" && e.Task == id })
	pid := int(ev.Fields["pid"].(float64))
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	_ = first.cmd.Wait()

	second := startHeadlessWith(t, newer, dir)
	ev = second.waitEvent(t, "re-adoption by the newer binary", func(e jsonEvent) bool {
		return e.Task == id && e.Kind == "recovered" && strings.Contains(e.Text, "re-adopted")
	})
	if got := int(ev.Fields["pid"].(float64)); got != pid {
		t.Fatalf("re-adopted pid %d, want %d", got, pid)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	second.waitEvent(t, "merge_landed", func(e jsonEvent) bool { return e.Task == id && e.Kind == "merge_landed" })
	if n := iterationsStarted(t, dir, id); n != 1 {
		t.Fatalf("%d iterations started, want 1", n)
	}
}

// A host whose engine does not come back within agents.hostOrphanSeconds
// stops its agent, keeping its uncommitted work under refs/chorus/kept/;
// the work stays in the worktree, and the next engine starts the task
// again from there.
func TestOrphanedHostStopsAgentKeepingWork(t *testing.T) {
	gate := filepath.Join(t.TempDir(), "gate") // never made: the first agent waits until stopped
	dir := scriptedProject(t, `
run "if [ -f half.txt ]; then echo done >> half.txt; else echo half > half.txt; echo draft > draft.txt; while [ ! -f `+gate+` ]; do sleep 0.05; done; fi"
run "if grep -q done half.txt; then rm -f draft.txt; fi; git add half.txt && git commit -q -m 'feat: finished' || true"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["agents"].(map[string]any)["host"] = true
		cfg["agents"].(map[string]any)["hostOrphanSeconds"] = 1
	})
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "orphaned task").stdout)
	first := startHeadless(t, dir)
	ev := first.waitEvent(t, "agent_started", func(e jsonEvent) bool { return e.Kind == "agent_started" && e.Task == id })
	pid := int(ev.Fields["pid"].(float64))
	metas, _ := filepath.Glob(filepath.Join(dir, ".chorus", "hosts", "*.json"))
	if len(metas) != 1 {
		t.Fatalf("hosts: %v", metas)
	}
	var m host.Meta
	if b, err := os.ReadFile(metas[0]); err != nil || json.Unmarshal(b, &m) != nil || m.HostPID <= 0 {
		t.Fatalf("host metadata %s: %v", b, err)
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	_ = first.cmd.Wait()
	if !testkit.WaitExit(t, pid, time.Minute) {
		t.Fatal("the orphaned host left its agent running")
	}
	if !testkit.WaitExit(t, m.HostPID, time.Minute) {
		t.Fatal("the orphaned host did not end")
	}
	if _, err := os.Stat(metas[0]); !os.IsNotExist(err) {
		t.Fatalf("an ended host left its metadata: %v", err)
	}
	// The uncommitted work is kept as a stop keeps it, before any engine
	// comes back.
	kept := strings.Fields(testkit.Git(t, dir, "for-each-ref", "--format=%(refname)", "refs/chorus/kept/"+id+"/"))
	if len(kept) != 1 || !strings.HasSuffix(kept[0], "-wip") {
		logs, _ := filepath.Glob(filepath.Join(dir, ".chorus", "logs", host.HostsLog))
		for _, l := range logs {
			b, _ := os.ReadFile(l)
			t.Logf("%s: %s", l, b)
		}
		t.Fatalf("kept refs after the orphan stop: %v", kept)
	}
	if got := strings.TrimSpace(testkit.Git(t, dir, "show", kept[0]+":draft.txt")); got != "draft" {
		t.Fatalf("kept draft.txt = %q", got)
	}
	second := startHeadless(t, dir)
	second.waitEvent(t, "merge_landed", func(e jsonEvent) bool { return e.Task == id && e.Kind == "merge_landed" })
	if got := strings.TrimSpace(testkit.Git(t, dir, "show", "main:half.txt")); got != "half\ndone" {
		t.Fatalf("main:half.txt = %q: the orphaned iteration's work was lost", got)
	}
}
