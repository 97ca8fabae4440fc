package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// kengine is the engine in this process with agents on the test cluster.
type kengine struct {
	c        *kubetest.Cluster
	eng      *orchestrator.Engine
	events   *testkit.Events[orchestrator.Event]
	r        *kube.Runner
	root     string
	bare     string // the remote the pods clone from and push to
	ids      []string
	start    time.Time
	stop     func() // stops the engine and waits for it, its clean-ups with it
	mu       sync.Mutex
	timeline map[string][]string
}

func (k *kengine) step(agent, what string) {
	k.mu.Lock()
	k.timeline[agent] = append(k.timeline[agent], fmt.Sprintf("%.3fs %s", time.Since(k.start).Seconds(), what))
	k.mu.Unlock()
}

// startKubeEngine makes a repository with tasks run by the scripted agent
// (script), and starts the engine on it with the cluster runner.
// setup, when given, changes the config, the tasks' options and the
// runner first.
func startKubeEngine(t *testing.T, c *kubetest.Cluster, script string, tasks, parallel int, setup ...func(*config.Config, *beads.CreateOptions, *kube.Runner)) *kengine {
	t.Helper()
	return startKube(t, c, script, tasks, parallel, false, setup...)
}

// runnerWays runs f with the engine's runner in this process and, as the
// chorus binary has it, through chorus-kube (agent/host/kubeproc).
func runnerWays(t *testing.T, f func(t *testing.T, viaProc bool)) {
	t.Run("in-process", func(t *testing.T) { f(t, false) })
	t.Run("chorus-kube", func(t *testing.T) { f(t, true) })
}

// startKube is startKubeEngine; viaProc: the engine's runner is
// kubeproc's, running chorus-kube with k.r's settings.
func startKube(t *testing.T, c *kubetest.Cluster, script string, tasks, parallel int, viaProc bool, setup ...func(*config.Config, *beads.CreateOptions, *kube.Runner)) *kengine {
	t.Helper()
	chorusBin := testkit.Chorus(t)
	root := testkit.Repo(t)
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Agents.MaxParallel = parallel
	cfg.Mode = config.ModeAutopilot
	cfg.Completion.StopGraceSeconds = 2
	cfg.QualityCommands = []config.QualityCommand{{Name: "file", Command: "test -f out-$CHORUS_TASK_ID.txt", Required: true, Order: 1}}
	dir := chorusdir.At(root)
	k := &kengine{c: c, root: root, timeline: map[string][]string{}}
	k.r = &kube.Runner{Config: c.Config, Namespace: "default", Instance: dir.Path,
		Image: "unused", Exe: chorusBin, Grace: 2 * time.Second, Binary: "test", Timeline: k.step}
	opts := beads.CreateOptions{Priority: 1}
	for _, f := range setup {
		f(&cfg, &opts, k.r)
	}
	// The pods meet the hub on a bare remote: they clone from it into
	// directories of their own and push back; the script travels in
	// the repository.
	bare := remoteFor(t, root)
	cfg.Merge.Remote = "origin"
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(script), 0o644)
	testkit.Git(t, root, "add", "agent.script")
	testkit.Git(t, root, "commit", "-q", "-m", "the agents' script")
	testkit.Git(t, root, "push", "-q", "origin", "main")
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	k.bare = bare
	k.r.Remote = "file://" + bare
	for i := range tasks {
		tk, err := st.Create(context.Background(), fmt.Sprintf("task %d", i), opts)
		if err != nil {
			t.Fatal(err)
		}
		k.ids = append(k.ids, tk.ID)
	}
	var rn host.Runner = k.r
	if viaProc {
		pr, err := kubeproc.New(context.Background(), testkit.ChorusKube(t), kubeproc.Config{Kubeconfig: c.Kubeconfig,
			Namespace: k.r.Namespace, Instance: k.r.Instance, Image: k.r.Image, Exe: k.r.Exe, Grace: k.r.Grace,
			Binary: k.r.Binary, Remote: k.r.Remote, Orphan: k.r.Orphan})
		if err != nil {
			t.Fatal(err)
		}
		pr.Timeline = k.step
		rn = pr
	}
	k.start = time.Now()
	eng, err := orchestrator.New(orchestrator.Options{Dir: dir, Config: cfg, Store: st, Target: "main",
		ChorusExe: chorusBin, Cols: 100, Rows: 30, Runner: rn})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	k.eng = eng
	// A second subscription records each agent's timeline as it happens.
	watch := eng.Subscribe()
	go func() {
		for e := range watch {
			switch e.Kind {
			case orchestrator.EvStarted, orchestrator.EvSignal, orchestrator.EvCompleted, orchestrator.EvMergeQueued:
				k.step(e.Agent, string(e.Kind)+" "+e.Text)
			case "merge_landed":
				k.step("script-"+e.Task, "merge_landed")
			}
		}
	}()
	k.events = &testkit.Events[orchestrator.Event]{TB: t, C: eng.Subscribe(), Limit: 3 * time.Minute, Report: func() string {
		return fmt.Sprintf("node log:\n%s", tail(c.Log("kube-node"), 3000))
	}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- eng.Run(ctx) }()
	var once sync.Once
	k.stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(k.stop)
	if err := eng.RouteSignals(ctx); err != nil {
		t.Fatal(err)
	}
	return k
}

// The engine in autopilot runs six tasks with the scripted agent, each
// agent in a Job's pod on a real API server, reached only through exec;
// each pod clones its task from the remote into a directory of its own,
// its signals and notes come over its host's stream, and its work goes
// back by a push: every task lands on main, and every pod ends with its
// agent.
func TestEngineSixTasksThroughTheCluster(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	k := startKubeEngine(t, c, `
print "in the pod: $CHORUS_TASK_ID"
run "echo work done > out-$CHORUS_TASK_ID.txt"
run "pwd > where-$CHORUS_TASK_ID.txt; echo $CHORUS_DIR >> where-$CHORUS_TASK_ID.txt"
commit "feat: work"
note "noted in the pod"
signal COMPLETE
`, 6, 3)
	eng, events, ids, root, r, start := k.eng, k.events, k.ids, k.root, k.r, k.start
	ctx := context.Background()
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
		// The agent worked, and signalled, away from the hub's files.
		for _, dir := range strings.Split(testkit.Git(t, root, "show", "main:where-"+id+".txt"), "\n") {
			if dir == "" || strings.HasPrefix(dir, root) || !strings.HasPrefix(dir, c.PodRoot()) {
				t.Errorf("%s's agent worked in %q: want a directory of its pod under %s, not the hub's %s", id, dir, c.PodRoot(), root)
			}
		}
		if got := testkit.Git(t, k.bare, "rev-parse", "main"); got != testkit.Git(t, root, "rev-parse", "main") {
			t.Errorf("the remote's main %s is not the hub's", got)
		}
		if b, err := os.ReadFile(orchestrator.LedgerPath(chorusdir.At(root).Path, id)); err != nil || !strings.Contains(string(b), "noted in the pod") {
			t.Errorf("%s's ledger lacks the note sent from its pod: %v\n%s", id, err, b)
		}
	}
	// One task's way through the cluster, as its pod's log tells it.
	if pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: r.Selector("script-" + ids[0])}); err == nil && len(pods.Items) > 0 {
		if b, err := c.Client.CoreV1().Pods("default").GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{Container: "host"}).DoRaw(ctx); err == nil {
			// The host's dated lines join the engine's timeline.
			for _, l := range strings.Split(string(b), "\n") {
				ts, what, ok := strings.Cut(l, " agent host: ")
				if at, err := time.Parse(time.RFC3339Nano, ts); ok && err == nil {
					k.mu.Lock()
					k.timeline["script-"+ids[0]] = append(k.timeline["script-"+ids[0]], fmt.Sprintf("%.3fs (pod) %s", at.Sub(start).Seconds(), what))
					k.mu.Unlock()
				}
			}
		}
	}
	k.mu.Lock()
	for agent, steps := range k.timeline {
		sort.SliceStable(steps, func(i, j int) bool { return secs(steps[i]) < secs(steps[j]) })
		t.Logf("%s: %s", agent, strings.Join(steps, " | "))
	}
	k.mu.Unlock()
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
	// Landed tasks leave nothing on the remote but the target; their
	// tips are in main, so the hub keeps no tip of them either.
	k.stop()
	if refs := testkit.Git(t, k.bare, "for-each-ref", "--format=%(refname)"); refs != "refs/heads/main" {
		t.Errorf("the remote after every task landed holds:\n%s\nwant only refs/heads/main", refs)
	}
	if kept := testkit.Git(t, root, "for-each-ref", "--format=%(refname)", "refs/chorus/kept/"); kept != "" {
		t.Logf("kept on the hub: %s", kept)
	}
}

// secs is the time a timeline step begins with.
func secs(step string) float64 {
	f, _ := strconv.ParseFloat(strings.TrimSuffix(strings.Fields(step)[0], "s"), 64)
	return f
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// Text typed into an agent through the engine (the TUI's chat line,
// CmdType) reaches the agent in its pod, through exec.
func TestTypingReachesTheAgentInItsPod(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	k := startKubeEngine(t, c, `
print "waiting for a word"
wait-input
run "echo work done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`, 1, 1)
	ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
	sent := time.Now()
	if err := k.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdType, AgentID: ev.Agent, Text: "go on"}); err != nil {
		t.Fatal(err)
	}
	done := k.events.Wait(func(e orchestrator.Event) bool {
		return e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed
	})
	if done.Kind != orchestrator.EvCompleted {
		t.Fatalf("the task did not complete: %+v", done)
	}
	t.Logf("typed into the agent in its pod; COMPLETE %v later", time.Since(sent).Round(time.Millisecond))
	if emu := k.eng.Screen(ev.Agent); emu != nil && !strings.Contains(emu.Text(), "received: go on") {
		t.Errorf("the agent's screen does not show the typed text:\n%s", emu.Text())
	}
}
