package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// A night of six tasks through the chorus binary (`chorus --autopilot
// --headless`) with runner.kind kubernetes and runner.remote: each
// agent's pod clones its task from the bare remote, away from the hub's
// files, and pushes its work back; all six land on main.
func TestBinaryNightLandsThroughTheRemote(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	chorusBin := testkit.Chorus(t)
	testkit.ChorusKube(t) // the engine's runner, beside it
	root := testkit.Repo(t)
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Agents.Available["script"] = config.AgentProfile{Command: chorusBin, Args: []string{"scripted-agent", "--script", "agent.script"}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Agents.MaxParallel = 3
	cfg.Mode = config.ModeAutopilot
	cfg.Completion.StopGraceSeconds = 2
	cfg.QualityCommands = []config.QualityCommand{{Name: "file", Command: "test -f out-$CHORUS_TASK_ID.txt", Required: true, Order: 1}}
	remoteFor(t, root)
	cfg.Runner = config.Runner{Kind: config.RunnerKubernetes, Kubeconfig: c.Kubeconfig, Namespace: "default",
		Image: "unused", ChorusPath: chorusBin, Remote: "origin"}
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(root, "agent.script"), []byte(`
print "in the pod: $CHORUS_TASK_ID"
run "echo work done > out-$CHORUS_TASK_ID.txt; pwd > where-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`), 0o644)
	testkit.Git(t, root, "add", "agent.script")
	testkit.Git(t, root, "commit", "-q", "-m", "the agents' script")
	testkit.Git(t, root, "push", "-q", "origin", "main")
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
	e := startEngine(t, chorusBin, root)
	landed := map[string]time.Duration{}
	steps := map[string][]string{}
	for len(landed) < len(ids) {
		ev := e.waitFor(t, "six landings", func(ev binEvent) bool {
			if ev.Task != "" {
				steps[ev.Task] = append(steps[ev.Task], fmt.Sprintf("%.3fs %s", time.Since(start).Seconds(), ev.Kind))
			}
			return ev.Kind == "merge_landed" || ev.Kind == "task_failed"
		})
		if ev.Kind == "task_failed" {
			t.Fatalf("%s failed: %s", ev.Task, ev.Text)
		}
		landed[ev.Task] = time.Since(start)
	}
	t.Logf("six tasks landed %.3fs after the engine started", time.Since(start).Seconds())
	t.Logf("%s: %s", ids[0], strings.Join(steps[ids[0]], " | "))
	for _, id := range ids {
		if got := testkit.Git(t, root, "show", "main:out-"+id+".txt"); got != "work done" {
			t.Errorf("main:out-%s.txt = %q", id, got)
		}
		if dir := testkit.Git(t, root, "show", "main:where-"+id+".txt"); strings.HasPrefix(dir, root) || !strings.HasPrefix(dir, c.PodRoot()) {
			t.Errorf("%s's agent worked in %q, not in its pod's directory under %s", id, dir, c.PodRoot())
		}
	}
}
