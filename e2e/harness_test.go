// Package e2e runs the engine with the real agent CLIs (Claude Code and
// Codex, pinned npm packages) under real PTYs against a scripted model
// server on 127.0.0.1, in throwaway git repositories.
package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/clitest"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

var (
	chorusBin string
	tools     clitest.Tools
	skipWhy   string
)

func TestMain(m *testing.M) {
	var err error
	chorusBin, err = testkit.Build()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tools, err = clitest.Install()
	if err != nil {
		skipWhy = "the agent CLIs could not be installed from npm: " + err.Error()
	}
	code := m.Run()
	testkit.Cleanup()
	os.Exit(code)
}

// wait bounds every wait on the real CLIs: long enough for a loaded
// machine, short enough that a hang fails with the events seen.
var wait = 3 * time.Minute

type harness struct {
	t      *testing.T
	root   string
	home   string
	dir    chorusdir.Dir
	store  beads.Store
	cfg    config.Config
	srv    *modelserver.Server
	eng    *orchestrator.Engine
	events *testkit.Events[orchestrator.Event]
	cancel context.CancelFunc
	done   chan error
	log    []orchestrator.Event

	// runner, when set, runs the agents' hosts (on a cluster, say).
	runner host.Runner

	// untrusted: tasks' worktrees are not marked trusted for interactive
	// Claude Code ahead of time (they are by default, exactly each path),
	// nor the repository for Codex.
	untrusted, codexTrusted bool
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return testkit.Git(t, dir, args...)
}

// committed is file as task id's branch holds it: on the branch while it
// is there; once the task has landed its branch is gone (its tip kept
// under refs/chorus/), so on main after the landing.
func (h *harness) committed(t *testing.T, id, branch, file string) string {
	t.Helper()
	if out, err := exec.Command("git", "-C", h.root, "show", branch+":"+file).Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	h.waitFor(kind("merge_landed", id))
	return git(t, h.root, "show", "main:"+file)
}

// newHarness makes a repository with one commit, a built-in task store, a
// model server, and the built-in agent profiles pointed at the installed
// CLIs, with throwaway homes.
func newHarness(t *testing.T, tweak func(*config.Config)) *harness {
	t.Helper()
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	root := t.TempDir()
	git(t, root, "init", "-q", "-b", "main")
	git(t, root, "config", "user.email", "t@example.com")
	git(t, root, "config", "user.name", "T")
	os.WriteFile(filepath.Join(root, "README"), []byte("hi\n"), 0o644)
	git(t, root, "add", ".")
	git(t, root, "commit", "-q", "-m", "init")
	home := t.TempDir()
	cenv, err := clitest.ClaudeHome(home, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	xenv, err := clitest.CodexHome(home, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	oenv, err := clitest.OpenCodeHome(home, srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	for name, p := range cfg.Agents.Available {
		switch p.Command {
		case "claude":
			p.Command, p.Env = tools.Claude, cenv
		case "codex":
			p.Command, p.Env = tools.Codex, xenv
		case "opencode":
			p.Command, p.Env = tools.OpenCode, oenv
		default:
			continue
		}
		cfg.Agents.Available[name] = p
	}
	cfg.Agents.Default = "claude"
	cfg.Completion.StopGraceSeconds = 3
	if tweak != nil {
		tweak(&cfg)
	}
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	return &harness{t: t, root: root, home: home, dir: chorusdir.At(root), store: st, cfg: cfg, srv: srv}
}

func (h *harness) task(title string, opt beads.CreateOptions) string {
	h.t.Helper()
	tk, err := h.store.Create(context.Background(), title, opt)
	if err != nil {
		h.t.Fatal(err)
	}
	if !h.untrusted {
		// Autopilot picks tasks without assign: trust the default Claude
		// profile's worktree for each task up front.
		h.trustClaude(h.worktree("claude", tk.ID))
		if !h.codexTrusted {
			// Codex asks about the repository's root for a worktree in it.
			if err := clitest.TrustCodexDirs(h.home, h.root); err != nil {
				h.t.Fatal(err)
			}
			h.codexTrusted = true
		}
	}
	return tk.ID
}

func (h *harness) start() {
	h.t.Helper()
	eng, err := orchestrator.New(orchestrator.Options{Dir: h.dir, Config: h.cfg, Store: h.store, Target: "main",
		ChorusExe: chorusBin, Cols: 120, Rows: 40, Runner: h.runner})
	if err != nil {
		h.t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.eng = eng
	h.events = &testkit.Events[orchestrator.Event]{TB: h.t, C: eng.Subscribe(), Limit: wait, Report: h.report}
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
		h.noLeftovers()
	}
}

// trustClaude answers Claude Code's folder-trust question for dir (and its
// path with symlinks resolved) in the test home.
func (h *harness) trustClaude(dir string) {
	h.t.Helper()
	dirs := []string{dir}
	if real, err := filepath.EvalSymlinks(filepath.Dir(dir)); err == nil {
		dirs = append(dirs, filepath.Join(real, filepath.Base(dir)))
	}
	if err := clitest.TrustDirs(h.home, dirs...); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) assign(id, profile string) {
	h.t.Helper()
	if p := h.cfg.Agents.Available[profile]; p.TranscriptKind() == config.TranscriptClaude && !h.untrusted {
		// Claude Code asks whether to trust each new working directory,
		// a trusted parent or not; an exact entry answers it.
		h.trustClaude(h.worktree(profile, id))
	}
	if err := h.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdAssign, TaskID: id, Agent: profile}); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor returns the first event, seen or coming, that matches; the
// deadline turns a hang into a failure that shows what happened.
func (h *harness) waitFor(pred func(orchestrator.Event) bool) orchestrator.Event {
	h.t.Helper()
	ev := h.events.Wait(pred)
	h.log = h.events.Log
	return ev
}

// report is what a failing test shows: events, model requests, screens.
func (h *harness) report() string {
	var b strings.Builder
	b.WriteString("events:\n")
	for _, ev := range h.log {
		fmt.Fprintf(&b, "  %s %s %s %s %v\n", ev.Kind, ev.Agent, ev.Task, ev.Text, ev.Fields)
	}
	b.WriteString("model requests:\n")
	for _, r := range h.srv.Requests() {
		fmt.Fprintf(&b, "  %s %s kind=%s script=%d index=%d status=%d last=%.120q\n", r.API, r.Path, r.Kind, r.Script, r.Index, r.Status, r.LastUser)
	}
	snap := h.eng.Snapshot()
	fmt.Fprintf(&b, "session usage: %+v\n", snap.Usage)
	for id, tr := range snap.Tasks {
		fmt.Fprintf(&b, "task %s: iterations %d, usage %+v\n", id, tr.Iterations, tr.Usage)
	}
	for id := range snap.Agents {
		if s := h.eng.Screen(id); s != nil {
			fmt.Fprintf(&b, "screen of %s:\n%s\n", id, s.Text())
		}
	}
	return b.String()
}

func kind(k orchestrator.EventKind, task string) func(orchestrator.Event) bool {
	return func(e orchestrator.Event) bool { return e.Kind == k && (task == "" || e.Task == task) }
}

func (h *harness) get(id string) beads.Task {
	h.t.Helper()
	tk, err := h.store.Get(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return tk
}

func (h *harness) count(k orchestrator.EventKind) int {
	n := 0
	for _, ev := range h.log {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

// waitIdle waits until the engine says nothing more will happen.
func (h *harness) waitIdle() {
	h.t.Helper()
	deadline := time.After(wait)
	for {
		if h.eng.Snapshot().Idle {
			return
		}
		select {
		case ev := <-h.events.C:
			h.events.Log = append(h.events.Log, ev)
			h.log = h.events.Log
		case <-h.eng.Changed():
		case <-deadline:
			h.t.Fatalf("engine never idle\n%s", h.report())
		}
	}
}

// worktree is where the engine puts a profile's agent for a task.
func (h *harness) worktree(profile, id string) string {
	return filepath.Join(h.root, ".worktrees", profile+"-"+id)
}

// commit is a shell line that commits everything with the task's trailer.
func commit(msg, id string) string {
	return fmt.Sprintf("git add -A && git commit -q -m '%s [%s]'", msg, id)
}

// until polls cond: for state that announces no change (a terminal
// screen), checked every 50ms up to the deadline.
func (h *harness) until(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(wait)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not seen\n%s", what, h.report())
		}
		select {
		case ev := <-h.events.C:
			h.events.Log = append(h.events.Log, ev)
			h.log = h.events.Log
		case <-tick.C:
		}
	}
}

// screen is the text of an agent's terminal, scrollback included.
func (h *harness) screen(agent string) string {
	if s := h.eng.Screen(agent); s != nil {
		return s.AllText()
	}
	return ""
}

// completedUsage is what a task cost, as its completion event reports it.
func (h *harness) completedUsage(id string) orchestrator.Usage {
	h.t.Helper()
	for _, ev := range h.log {
		if ev.Kind == orchestrator.EvCompleted && ev.Task == id {
			u, ok := ev.Fields["usage"].(orchestrator.Usage)
			if !ok {
				h.t.Fatalf("completion of %s reports no usage: %+v", id, ev.Fields)
			}
			return u
		}
	}
	h.t.Fatalf("%s not completed\n%s", id, h.report())
	return orchestrator.Usage{}
}

// served is how many conversation turns of script i the server answered
// with index idx.
func (h *harness) served(script, idx int) bool {
	for _, r := range h.srv.Requests() {
		if r.Kind == "turn" && r.Script == script && r.Index == idx && r.Status == 200 {
			return true
		}
	}
	return false
}

func runSh(dir, script string) (string, error) {
	cmd := exec.Command("sh", "-c", script)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitSnap waits until a published snapshot satisfies ok: snapshots are
// published after each batch of engine messages, so an event can arrive
// before the snapshot showing its state.
func (h *harness) waitSnap(what string, ok func(orchestrator.Snapshot) bool) orchestrator.Snapshot {
	h.t.Helper()
	deadline := time.After(wait)
	for {
		if s := h.eng.Snapshot(); ok(s) {
			return s
		}
		select {
		case ev := <-h.events.C:
			h.events.Log = append(h.events.Log, ev)
			h.log = h.events.Log
		case <-h.eng.Changed():
		case <-deadline:
			h.t.Fatalf("%s: not seen\n%s", what, h.report())
		}
	}
}
