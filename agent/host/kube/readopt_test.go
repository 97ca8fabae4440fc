package kube_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

type binEvent struct {
	Kind   string         `json:"kind"`
	Task   string         `json:"task"`
	Text   string         `json:"text"`
	Fields map[string]any `json:"fields"`
}

// engineProc is `chorus --autopilot --headless --json` in a process of its
// own, its events read from its output.
type engineProc struct {
	cmd    *exec.Cmd
	events chan binEvent
}

func startEngine(t *testing.T, chorusBin, root string) *engineProc {
	t.Helper()
	cmd := exec.Command(chorusBin, "-C", root, "--autopilot", "--headless", "--json")
	// What the engine says on stderr is shown only if the test fails.
	errf, err := os.CreateTemp(t.TempDir(), "engine-stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errf
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	e := &engineProc{cmd: cmd, events: make(chan binEvent, 4096)}
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
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			b, _ := os.ReadFile(errf.Name())
			t.Logf("engine stderr:\n%s", b)
		}
		errf.Close()
	})
	return e
}

func (e *engineProc) waitFor(t *testing.T, what string, pred func(binEvent) bool) binEvent {
	t.Helper()
	limit := time.After(3 * time.Minute)
	for {
		select {
		case ev, ok := <-e.events:
			if !ok {
				t.Fatalf("the engine ended before %s", what)
			}
			if pred(ev) {
				return ev
			}
		case <-limit:
			t.Fatalf("no %s", what)
		}
	}
}

// With runner.kind kubernetes in the config, the chorus binary runs
// three tasks' agents in pods; the engine is killed (SIGKILL) mid-task; a
// new engine re-adopts every agent in its pod by label, through exec, the
// same agent processes finish the same iterations and the tasks land:
// one iteration and one Job each.
func TestEngineKilledReadoptsThePods(t *testing.T) {
	const n = 3
	c := kubetest.Start(t, testkit.Root())
	chorusBin := testkit.Chorus(t)
	testkit.ChorusKube(t) // the engine's runner, beside it
	root := testkit.Repo(t)
	flag := filepath.Join(t.TempDir(), "go-on")
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Agents.MaxParallel = n
	cfg.Mode = config.ModeAutopilot
	cfg.Completion.StopGraceSeconds = 2
	cfg.Runner = config.Runner{Kind: config.RunnerKubernetes, Kubeconfig: c.Kubeconfig, Namespace: "default",
		Image: "unused", ChorusPath: chorusBin}
	remoteFor(t, root)
	cfg.Runner.Remote = "origin"
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf(`
print "waiting in the pod"
run "while [ ! -f %s ]; do sleep 0.1; done"
run "echo work > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`, flag)
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(script), 0o644)
	testkit.Git(t, root, "add", "agent.script")
	testkit.Git(t, root, "commit", "-q", "-m", "the agent's script")
	testkit.Git(t, root, "push", "-q", "origin", "main")
	st, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: root, Prefix: "t"})
	if err != nil {
		t.Fatal(err)
	}
	pids := map[string]int{} // task → its agent's pid
	var ids []string
	for i := range n {
		tk, err := st.Create(context.Background(), fmt.Sprintf("task %d", i), beads.CreateOptions{Priority: 1})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}

	first := startEngine(t, chorusBin, root)
	for len(pids) < n {
		ev := first.waitFor(t, "the agents' starts", func(e binEvent) bool { return e.Kind == "agent_started" })
		pids[ev.Task] = int(ev.Fields["pid"].(float64))
	}
	pstarts := map[string]uint64{}
	for id, pid := range pids {
		if pstarts[id], err = ptyproc.StartTimeOf(pid); err != nil {
			t.Fatal(err)
		}
	}
	_ = first.cmd.Process.Signal(syscall.SIGKILL)
	_ = first.cmd.Wait()
	for id, pid := range pids {
		if !ptyproc.Alive(pid, pstarts[id]) {
			t.Fatalf("the agent of %s died with its engine", id)
		}
	}

	started := time.Now()
	second := startEngine(t, chorusBin, root)
	for adopted := map[string]bool{}; len(adopted) < n; {
		ev := second.waitFor(t, "re-adoption", func(e binEvent) bool {
			return e.Kind == "recovered" && strings.Contains(e.Text, "re-adopted")
		})
		if got := int(ev.Fields["pid"].(float64)); got != pids[ev.Task] {
			t.Fatalf("%s: re-adopted pid %d, want %d", ev.Task, got, pids[ev.Task])
		}
		adopted[ev.Task] = true
	}
	t.Logf("engine start to the %d agents in their pods re-adopted: %v", n, time.Since(started).Round(time.Millisecond))
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for landed := map[string]bool{}; len(landed) < n; {
		ev := second.waitFor(t, "the merges", func(e binEvent) bool {
			if e.Kind == "agent_started" || e.Kind == "iteration_started" {
				t.Errorf("the second engine began a new iteration: %+v", e)
			}
			return e.Kind == "merge_landed"
		})
		landed[ev.Task] = true
	}
	t.Logf("engine start to the %d tasks landed: %v", n, time.Since(started).Round(time.Millisecond))
	log, err := os.ReadFile(filepath.Join(root, ".chorus", "session-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	in, err := chorusdir.At(root).Instance()
	if err != nil {
		t.Fatal(err)
	}
	r := &kube.Runner{Config: c.Config, Namespace: "default", Instance: in.ID}
	for _, id := range ids {
		if got := testkit.Git(t, root, "show", "main:out-"+id+".txt"); got != "work" {
			t.Errorf("main:out-%s.txt = %q", id, got)
		}
		iterations := 0
		for _, l := range strings.Split(string(log), "\n") {
			var e chorusdir.Entry
			if json.Unmarshal([]byte(l), &e) == nil && e.Details["taskId"] == id && e.Event == "iteration_started" {
				iterations++
			}
		}
		if iterations != 1 {
			t.Errorf("%s: %d iterations started, want 1", id, iterations)
		}
		jobs, err := c.Client.BatchV1().Jobs("default").List(context.Background(), metav1ListOptions(r.Selector("script-"+id)))
		if err != nil || len(jobs.Items) != 1 {
			t.Errorf("the Jobs of %s: %d, %v; want exactly one", id, len(jobs.Items), err)
		}
	}
}

// remoteFor gives the repository at root a bare remote "origin", as a
// URL the pods can use (file://: the test node shares this machine's
// disk; a real cluster needs https or ssh and credentials).
func remoteFor(t *testing.T, root string) string {
	t.Helper()
	bare := filepath.Join(t.TempDir(), "remote.git")
	testkit.Git(t, root, "init", "-q", "--bare", bare)
	testkit.Git(t, bare, "config", "uploadpack.allowFilter", "true")
	testkit.Git(t, root, "remote", "add", "origin", "file://"+bare)
	return bare
}

func metav1ListOptions(selector string) metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: selector}
}
