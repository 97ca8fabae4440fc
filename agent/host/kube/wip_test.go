package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// An agent's uncommitted work survives its pod's deletion: told to go
// (SIGTERM, within the pod's grace), the host stops the agent and pushes
// the work under refs/chorus/wip/<branch>; the task's next pod clones
// the branch and puts the work back, uncommitted, where the agent left
// it; the task lands with it. The pod is deleted with its own grace
// while the runner asks for less (2 s) than the host's stop takes: the
// Job's pod gets enough for the stop and the push all the same.
func TestUncommittedWorkSurvivesThePodsDeletion(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	k := startKubeEngine(t, c, `
run "if [ -f wip-$CHORUS_TASK_ID.txt ]; then echo restored > out-$CHORUS_TASK_ID.txt; else echo uncommitted > wip-$CHORUS_TASK_ID.txt; fi"
signal PROGRESS 50
run "while [ ! -f out-$CHORUS_TASK_ID.txt ]; do sleep 0.1; done"
commit "feat: work"
signal COMPLETE
`, 1, 1)
	ctx := context.Background()
	ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
	k.events.Wait(func(e orchestrator.Event) bool {
		return e.Kind == orchestrator.EvSignal && e.Fields["type"] == "PROGRESS"
	})
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the agent's pods: %v, %v", pods, err)
	}
	var grace int64
	if g := pods.Items[0].Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if time.Duration(grace)*time.Second < host.StopGrace+10*time.Second {
		t.Fatalf("the pod's terminationGracePeriodSeconds = %d with the runner's Grace %v: want the host's stop grace (%v) and a push", grace, k.r.Grace, host.StopGrace)
	}
	deleted := time.Now()
	k.step(ev.Agent, fmt.Sprintf("pod deleted (its grace: %ds)", grace))
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	done := k.events.Wait(func(e orchestrator.Event) bool {
		return (e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed) && e.Task == ev.Task
	})
	if done.Kind != orchestrator.EvCompleted {
		t.Fatalf("the task after its pod was deleted: %+v", done)
	}
	k.waitIdle(t)
	t.Logf("pod deleted → landed %.3fs", time.Since(deleted).Seconds())
	if got := testkit.Git(t, k.root, "show", "main:wip-"+ev.Task+".txt"); got != "uncommitted" {
		t.Errorf("main:wip-%s.txt = %q: the first pod's uncommitted file did not come back", ev.Task, got)
	}
	if got := testkit.Git(t, k.root, "show", "main:out-"+ev.Task+".txt"); got != "restored" {
		t.Errorf("main:out-%s.txt = %q: the second pod did not find the first one's work", ev.Task, got)
	}
	t.Logf("the remote's WIP refs now: %q", testkit.Git(t, k.bare, "for-each-ref", "--format=%(refname)", host.WIPRef("")))
	k.mu.Lock()
	t.Logf("timeline: %v", k.timeline[ev.Agent])
	k.mu.Unlock()
}
