package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
)

// chorusBin is the real chorus binary, built once: agents run its
// `scripted-agent` and `signal` commands.
var chorusBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chorus-bin")
	if err != nil {
		panic(err)
	}
	chorusBin = filepath.Join(dir, "chorus")
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Dir(filepath.Dir(file))
	cmd := exec.Command("go", "build", "-o", chorusBin, "./cmd/chorus")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building chorus: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type harness struct {
	t      *testing.T
	root   string
	dir    chorusdir.Dir
	store  beads.Store
	cfg    config.Config
	eng    *Engine
	events <-chan Event
	cancel context.CancelFunc
	done   chan error
	log    []Event
	used   map[int]bool // log entries a waitFor already returned
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// newHarness makes a repository with one commit, a built-in task store and
// a config whose default agent is the scripted agent running script.
func newHarness(t *testing.T, script string, tweak func(*config.Config)) *harness {
	t.Helper()
	root := t.TempDir()
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "config", "user.email", "t@example.com")
	git(t, root, "config", "user.name", "T")
	os.WriteFile(filepath.Join(root, "README"), []byte("hi\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-q", "-m", "init")
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Completion.StopGraceSeconds = 2
	if tweak != nil {
		tweak(&cfg)
	}
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(script), 0o644)
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, root: root, dir: chorusdir.At(root), store: st, cfg: cfg}
}

func (h *harness) task(title string, opt beads.CreateOptions) string {
	h.t.Helper()
	tk, err := h.store.Create(context.Background(), title, opt)
	if err != nil {
		h.t.Fatal(err)
	}
	return tk.ID
}

func (h *harness) start() {
	h.t.Helper()
	eng, err := New(Options{Dir: h.dir, Config: h.cfg, Store: h.store, Target: "main", ChorusExe: chorusBin, Cols: 100, Rows: 30})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
	h.events = eng.Subscribe()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- eng.Run(ctx) }()
	go routeSignalsForTest(ctx, h)
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// waitFor reads events until one matches; a generous deadline turns a hang
// into a failure with the events seen so far.
func (h *harness) waitFor(pred func(Event) bool) Event {
	h.t.Helper()
	if h.used == nil {
		h.used = map[int]bool{}
	}
	// Events already received count too (order between agents is not
	// fixed); each event satisfies one wait.
	for i, ev := range h.log {
		if !h.used[i] && pred(ev) {
			h.used[i] = true
			return ev
		}
	}
	deadline := time.After(90 * time.Second)
	for {
		select {
		case ev := <-h.events:
			h.log = append(h.log, ev)
			if pred(ev) {
				h.used[len(h.log)-1] = true
				return ev
			}
		case <-deadline:
			var b strings.Builder
			for _, ev := range h.log {
				fmt.Fprintf(&b, "  %s %s %s %s\n", ev.Kind, ev.Agent, ev.Task, ev.Text)
			}
			h.t.Fatalf("event not seen; events so far:\n%s", b.String())
		}
	}
}

func kind(k, task string) func(Event) bool {
	return func(e Event) bool { return e.Kind == k && (task == "" || e.Task == task) }
}

func (h *harness) get(id string) beads.Task {
	h.t.Helper()
	tk, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return tk
}

func (h *harness) count(k string) int {
	n := 0
	for _, ev := range h.log {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// sync waits until every message sent to the loop so far has been applied
// and published.
func (h *harness) sync() {
	h.t.Helper()
	if err := h.eng.Sync(context.Background()); err != nil {
		h.t.Fatal(err)
	}
}

// waitIdle waits until the engine says nothing more will happen.
func (h *harness) waitIdle() {
	h.t.Helper()
	deadline := time.After(90 * time.Second)
	for {
		h.sync()
		if h.eng.Snapshot().Idle {
			return
		}
		select {
		case ev := <-h.events:
			h.log = append(h.log, ev)
		case <-h.eng.Changed():
		case <-deadline:
			h.t.Fatalf("engine never idle: %+v", h.eng.Snapshot())
		}
	}
}
