package kube_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// An agent's uncommitted work survives its pod's deletion: told to go
// (SIGTERM), the host pushes the work under refs/chorus/wip/<branch>,
// stops the agent and pushes again; the task's next pod clones the
// branch and puts the work back, uncommitted, where the agent left it;
// the task lands with it. The first pod is deleted with its own grace
// while the runner asks for less (2 s) than the host's stop takes: the
// Job's pod gets enough for the stop and the push all the same. The
// second is deleted with a grace of 1 s, shorter than the agent's stop:
// the push made when the host was told to go keeps its work.
func TestUncommittedWorkSurvivesThePodsDeletion(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	k := startKubeEngine(t, c, `
run "if [ -f b-$CHORUS_TASK_ID.txt ]; then echo restored > out-$CHORUS_TASK_ID.txt; elif [ -f wip-$CHORUS_TASK_ID.txt ]; then echo second > b-$CHORUS_TASK_ID.txt; else echo uncommitted > wip-$CHORUS_TASK_ID.txt; fi"
signal PROGRESS 50
run "while [ ! -f out-$CHORUS_TASK_ID.txt ]; do sleep 0.1; done"
commit "feat: work"
signal COMPLETE
`, 1, 1)
	ctx := context.Background()
	ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
	// runningPod waits for the agent's PROGRESS and returns its live pod.
	runningPod := func() corev1.Pod {
		k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvSignal && e.Fields["type"] == "PROGRESS"
		})
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
		if err != nil {
			t.Fatal(err)
		}
		var live []corev1.Pod
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				live = append(live, p)
			}
		}
		if len(live) != 1 {
			t.Fatalf("the agent's running pods: %d of %d", len(live), len(pods.Items))
		}
		return live[0]
	}
	pod := runningPod()
	var grace int64
	if g := pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = *g
	}
	if time.Duration(grace)*time.Second < host.StopGrace+10*time.Second {
		t.Fatalf("the pod's terminationGracePeriodSeconds = %d with the runner's Grace %v: want the host's stop grace (%v) and a push", grace, k.r.Grace, host.StopGrace)
	}
	deleted := time.Now()
	k.step(ev.Agent, fmt.Sprintf("pod deleted (its grace: %ds)", grace))
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	pod = runningPod()
	again := time.Now()
	t.Logf("first pod deleted → the next one's agent at work %.3fs", again.Sub(deleted).Seconds())
	short := int64(1)
	k.step(ev.Agent, "pod deleted (grace 1s)")
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &short}); err != nil {
		t.Fatal(err)
	}
	done := k.events.Wait(func(e orchestrator.Event) bool {
		return (e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed) && e.Task == ev.Task
	})
	if done.Kind != orchestrator.EvCompleted {
		t.Fatalf("the task after its pods were deleted: %+v", done)
	}
	k.waitIdle(t)
	t.Logf("second pod deleted (grace 1s) → landed %.3fs", time.Since(again).Seconds())
	for file, want := range map[string]string{"wip": "uncommitted", "b": "second", "out": "restored"} {
		if got := testkit.Git(t, k.root, "show", "main:"+file+"-"+ev.Task+".txt"); got != want {
			t.Errorf("main:%s-%s.txt = %q, want %q: a pod's uncommitted work did not come back", file, ev.Task, got, want)
		}
	}
	t.Logf("the remote's WIP refs now: %q", testkit.Git(t, k.bare, "for-each-ref", "--format=%(refname)", host.WIPRef("")))
	k.mu.Lock()
	t.Logf("timeline: %v", k.timeline[ev.Agent])
	k.mu.Unlock()
}
