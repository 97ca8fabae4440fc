package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testkit.Cleanup()
	if fakeBdPath != "" {
		os.RemoveAll(filepath.Dir(fakeBdPath))
	}
	os.Exit(code)
}

type harness struct {
	t      *testing.T
	root   string
	dir    chorusdir.Dir
	store  beads.Store
	cfg    config.Config
	eng    *Engine
	events *testkit.Events[Event]
	cancel context.CancelFunc
	done   chan error
	log    []Event // what the events seen so far were, for assertions
	// holdBackoff, if set, is the engine's first wait before a probe.
	holdBackoff time.Duration
	// exe, if set, is the chorus executable the engine names (testkit's
	// otherwise).
	exe string
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testkit.Git(t, dir, args...)
}

// newHarness makes a repository with one commit, a built-in task store and
// a config whose default agent is the scripted agent running script.
func newHarness(t *testing.T, script string, tweak func(*config.Config)) *harness {
	t.Helper()
	root := testkit.Repo(t)
	chorusBin := testkit.Chorus(t)
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Completion.StopGraceSeconds = 2
	// Agents run in agent hosts, the default; CHORUS_TEST_AGENT_HOST=0
	// runs every harness's agents as the engine's own children.
	if os.Getenv("CHORUS_TEST_AGENT_HOST") == "0" {
		cfg.Agents.Host = false
	}
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
	h := &harness{t: t, root: root, dir: chorusdir.At(root), store: st, cfg: cfg}
	// Agents outlive the engine: whatever hosts the test's engines left
	// are stopped at its end, before its directories go.
	t.Cleanup(h.stopHosts)
	return h
}

// stopHosts stops every agent host of the harness's repository and waits
// for it to exit.
func (h *harness) stopHosts() {
	metas, _ := filepath.Glob(filepath.Join(h.dir.Path, "hosts", "*.json"))
	for _, p := range metas {
		b, err := os.ReadFile(p)
		var m host.Meta
		if err != nil || json.Unmarshal(b, &m) != nil || m.HostPID <= 0 {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err = host.StopHost(ctx, m.Socket)
		cancel()
		if err == nil && !testkit.WaitExit(h.t, m.HostPID, time.Minute) {
			h.t.Errorf("agent host %d did not exit after a stop", m.HostPID)
		}
	}
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
	exe := h.exe
	if exe == "" {
		exe = testkit.Chorus(h.t)
	}
	eng, err := New(Options{Dir: h.dir, Config: h.cfg, Store: h.store, Target: "main", ChorusExe: exe, Cols: 100, Rows: 30, HoldBackoff: h.holdBackoff})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
	h.events = &testkit.Events[Event]{TB: h.t, C: eng.Subscribe(), Report: h.report}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.done = make(chan error, 1)
	go func() { h.done <- eng.Run(ctx) }()
	if err := eng.RouteSignals(ctx); err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(h.stop)
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

// waitFor returns the first event, seen already or coming, that matches.
func (h *harness) waitFor(pred func(Event) bool) Event {
	h.t.Helper()
	ev := h.events.Wait(pred)
	h.log = h.events.Log
	return ev
}

// waitScreen waits until agent id's screen shows want: its output is read
// in frame-long batches, so a signal from `chorus signal` can arrive before
// the text the agent printed beside it.
func (h *harness) waitScreen(id, want string) {
	h.t.Helper()
	emu := h.eng.Screen(id)
	if emu == nil {
		h.t.Fatalf("no screen for %s", id)
	}
	wake := make(chan struct{}, 1)
	emu.OnDirty(func() {
		select {
		case wake <- struct{}{}:
		default:
		}
	})
	defer emu.OnDirty(nil)
	limit := time.After(2 * time.Minute) // only a broken test waits this long
	for {
		emu.TakeDirty() // the next change wakes us again
		if strings.Contains(emu.Text(), want) {
			return
		}
		select {
		case <-wake:
		case <-limit:
			h.t.Fatalf("%s's screen never showed %q\n%s", id, want, h.report())
		}
	}
}

func (h *harness) report() string {
	var b strings.Builder
	b.WriteString("events so far:\n")
	for _, ev := range h.events.Log {
		fmt.Fprintf(&b, "  %s %s %s %s\n", ev.Kind, ev.Agent, ev.Task, ev.Text)
	}
	// What the agents' screens showed, for a test that waited in vain.
	for id := range h.eng.Snapshot().Agents {
		if sc := h.eng.Screen(id); sc != nil {
			fmt.Fprintf(&b, "screen of %s:\n%s\n", id, strings.TrimRight(sc.Text(), " \n"))
		}
	}
	return b.String()
}

func kind(k EventKind, task string) func(Event) bool {
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

func (h *harness) count(k EventKind) int {
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
		case ev := <-h.events.C:
			h.events.Log = append(h.events.Log, ev)
			h.log = h.events.Log
		case <-h.eng.Changed():
		case <-deadline:
			h.t.Fatalf("engine never idle: %+v", h.eng.Snapshot())
		}
	}
}

// Screen answers from the runs last published, without a turn of the
// loop: a TUI attaching asks for every agent's, and each turn was a batch
// of its own. Here the loop is held while Screen is asked.
func TestScreenNeedsNoTurnOfTheLoop(t *testing.T) {
	h := newHarness(t, "hang\n", nil)
	id := h.task("screen", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	agent := h.waitFor(kind(EvStarted, id)).Agent
	held, release := make(chan struct{}), make(chan struct{})
	go h.eng.do(context.Background(), func() { close(held); <-release })
	<-held
	defer close(release)
	got := make(chan *term.Emulator, 1)
	go func() { got <- h.eng.Screen(agent) }()
	select {
	case s := <-got:
		if s == nil {
			t.Fatalf("no screen for %s", agent)
		}
	case <-time.After(2 * time.Minute): // only a broken engine waits this long
		t.Fatal("Screen waited for the loop")
	}
}
