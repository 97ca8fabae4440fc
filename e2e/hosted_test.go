package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/modelserver"
)

type binEvent struct {
	Kind   string         `json:"kind"`
	Task   string         `json:"task"`
	Text   string         `json:"text"`
	Fields map[string]any `json:"fields"`
}

// binEngine is `chorus --autopilot --headless --json` in its own process.
type binEngine struct {
	cmd    *exec.Cmd
	events chan binEvent
}

func startBinEngine(t *testing.T, dir string) *binEngine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	cmd := exec.CommandContext(ctx, chorusBin, "-C", dir, "--autopilot", "--headless", "--json")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &binEngine{cmd: cmd, events: make(chan binEvent, 4096)}
	go func() {
		defer close(e.events)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var ev binEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				e.events <- ev
			}
		}
	}()
	t.Cleanup(func() { cancel(); _ = cmd.Wait() })
	return e
}

func (e *binEngine) waitFor(t *testing.T, what string, pred func(binEvent) bool) binEvent {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case ev, ok := <-e.events:
			if !ok {
				t.Fatalf("the engine ended before %s", what)
			}
			if pred(ev) {
				return ev
			}
		case <-deadline:
			t.Fatalf("no %s", what)
		}
	}
}

// Interactive Claude Code in an agent host: the engine is killed with
// SIGKILL while the model's reply to the agent is delayed; a new engine
// re-adopts the same Claude process, which gets its reply, finishes the
// same turn and signals; the task closes with iteration 1 and no model
// request made twice.
func TestClaudeHostedOutlivesEngineKill(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		c.Agents.Host = true
		c.Mode = config.ModeAutopilot
	})
	id := h.task("say hello", beads.CreateOptions{})
	held, arrived := make(chan struct{}), make(chan struct{})
	var once sync.Once
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Gen: func(modelserver.Request) modelserver.Turn {
			once.Do(func() { close(arrived) })
			return modelserver.Turn{Hold: held, Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")}}
		}},
		{Text: "Committed hello.txt and signalled completion."},
	}})
	git(t, h.root, "add", "-A")
	git(t, h.root, "commit", "-q", "-m", "chorus setup")

	first := startBinEngine(t, h.root)
	ev := first.waitFor(t, "the agent's start", func(e binEvent) bool { return e.Kind == "agent_started" && e.Task == id })
	pid := int(ev.Fields["pid"].(float64))
	pstart, err := ptyproc.StartTimeOf(pid)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-arrived: // Claude waits for the model's reply
	case <-time.After(wait):
		t.Fatalf("no model request\n%v", h.srv.Requests())
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	_ = first.cmd.Wait()
	if !ptyproc.Alive(pid, pstart) {
		t.Fatal("Claude died with its engine")
	}

	started := time.Now()
	second := startBinEngine(t, h.root)
	ev = second.waitFor(t, "re-adoption", func(e binEvent) bool {
		return e.Task == id && e.Kind == "recovered" && strings.Contains(e.Text, "re-adopted")
	})
	t.Logf("engine start to re-adopted agent: %v", time.Since(started))
	if got := int(ev.Fields["pid"].(float64)); got != pid {
		t.Fatalf("re-adopted pid %d, want %d", got, pid)
	}
	close(held)
	second.waitFor(t, "the merge", func(e binEvent) bool {
		if e.Task == id && (e.Kind == "agent_started" || e.Kind == "iteration_started") {
			t.Errorf("the second engine began a new iteration: %+v", e)
		}
		return e.Task == id && e.Kind == "merge_landed"
	})
	if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	log, err := os.ReadFile(filepath.Join(h.root, ".chorus", "session-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	iterations := 0
	for _, l := range strings.Split(string(log), "\n") {
		var e chorusdir.Entry
		if json.Unmarshal([]byte(l), &e) == nil && e.Details["taskId"] == id && e.Event == "iteration_started" {
			iterations++
		}
	}
	if iterations != 1 {
		t.Fatalf("%d iterations started, want 1", iterations)
	}
	turns := map[int]int{}
	var seen []string
	for _, r := range h.srv.Requests() {
		if r.Script == 0 {
			turns[r.Index]++
			seen = append(seen, fmt.Sprintf("%s/%d/%d", r.Kind, r.Index, r.Status))
		}
	}
	// The held turn was asked once (the engine stops the agent at
	// COMPLETE, maybe before it asks for its closing words).
	if turns[0] != 1 || turns[1] > 1 {
		t.Fatalf("model requests for the task by turn %v (%v); want each turn once at most, the held one once", turns, seen)
	}
}
