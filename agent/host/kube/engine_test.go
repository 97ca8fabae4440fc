package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// The engine in autopilot runs six tasks with the scripted agent, each
// agent in a Job's pod on a real API server, reached only through exec;
// every task completes and lands on main, and no agent Job is left
// running. (The node shares this machine's files, so the pods work in the
// hub's worktrees.)
func TestEngineSixTasksThroughTheCluster(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	chorusBin := testkit.Chorus(t)
	root := testkit.Repo(t)
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Agents.MaxParallel = 3
	cfg.Mode = config.ModeAutopilot
	cfg.Completion.StopGraceSeconds = 2
	cfg.QualityCommands = []config.QualityCommand{{Name: "file", Command: "test -f out-$CHORUS_TASK_ID.txt", Required: true, Order: 1}}
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	script := `
print "in the pod: $CHORUS_TASK_ID"
run "echo work done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(script), 0o644)
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for i := range 6 {
		tk, err := st.Create(context.Background(), fmt.Sprintf("task %d", i), beads.CreateOptions{Priority: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}

	start := time.Now()
	var mu sync.Mutex
	timeline := map[string][]string{}
	step := func(task, what string) {
		mu.Lock()
		timeline[task] = append(timeline[task], fmt.Sprintf("%.3fs %s", time.Since(start).Seconds(), what))
		mu.Unlock()
	}
	dir := chorusdir.At(root)
	r := &kube.Runner{Config: c.Config, Namespace: "default", Instance: dir.Path,
		Image: "unused", Exe: chorusBin, Grace: 2 * time.Second, Binary: "test",
		Timeline: func(agent, what string) { step(agent, what) }}
	eng, err := orchestrator.New(orchestrator.Options{Dir: dir, Config: cfg, Store: st, Target: "main",
		ChorusExe: chorusBin, Cols: 100, Rows: 30, Runner: r})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A second subscription records each agent's timeline as it happens.
	watch := eng.Subscribe()
	go func() {
		for e := range watch {
			switch e.Kind {
			case orchestrator.EvStarted, orchestrator.EvSignal, orchestrator.EvCompleted, orchestrator.EvMergeQueued:
				step(e.Agent, string(e.Kind)+" "+e.Text)
			}
		}
	}()
	events := &testkit.Events[orchestrator.Event]{TB: t, C: eng.Subscribe(), Limit: 3 * time.Minute, Report: func() string {
		return fmt.Sprintf("node log:\n%s", tail(c.Log("kube-node"), 3000))
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	defer func() { cancel(); <-done }()
	if err := eng.RouteSignals(ctx); err != nil {
		t.Fatal(err)
	}
	closed := map[string]bool{}
	for len(closed) < len(ids) {
		ev := events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed
		})
		if ev.Kind == orchestrator.EvFailed {
			t.Fatalf("%s failed: %s", ev.Task, ev.Text)
		}
		closed[ev.Task] = true
	}
	// Landing follows completion: wait until the engine is idle.
	limit := time.After(3 * time.Minute)
	for {
		if err := eng.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if eng.Snapshot().Idle {
			break
		}
		select {
		case <-eng.Changed():
		case ev := <-events.C:
			events.Log = append(events.Log, ev)
		case <-limit:
			t.Fatal("the engine never became idle")
		}
	}
	landed := time.Since(start)
	log := testkit.Git(t, root, "log", "--format=%B", "main")
	for _, id := range ids {
		if !strings.Contains(log, "Chorus-Task: "+id) {
			t.Errorf("%s did not land on main", id)
		}
		if got := testkit.Git(t, root, "show", "main:out-"+id+".txt"); got != "work done" {
			t.Errorf("main:out-%s.txt = %q", id, got)
		}
	}
	mu.Lock()
	for agent, steps := range timeline {
		t.Logf("%s: %s", agent, strings.Join(steps, " | "))
	}
	mu.Unlock()
	t.Logf("all %d tasks landed %.3fs after the engine started", len(ids), landed.Seconds())
	// Each host ends with its agent, and its pod with it.
	wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
	defer wcancel()
	for _, id := range ids {
		if _, err := c.WaitPod(wctx, "default", r.Selector("script-"+id), func(p *corev1.Pod) bool {
			return p.Status.Phase == corev1.PodSucceeded
		}); err != nil {
			t.Errorf("the pod of %s did not end: %v", id, err)
		}
	}
	if ms, err := r.List(wctx); err != nil || len(ms) != 0 {
		t.Errorf("live hosts after every task landed: %+v, %v", ms, err)
	}
	mark := time.Since(start)
	t.Logf("every agent's pod Succeeded %.3fs after the engine started", mark.Seconds())
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}
