package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// An agent's pod deleted mid-task (as an eviction or a lost node would):
// the engine sees its agent end, starts it again in a new Job's pod, and
// the task lands. (Today the lost pod costs an iteration, as a crash
// does; the work stays because this node shares the hub's worktree.)
func TestPodDeletedMidTaskIsRunAgain(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	flag := filepath.Join(t.TempDir(), "go-on")
	k := startKubeEngine(t, c, fmt.Sprintf(`
print "waiting"
run "while [ ! -f %s ]; do sleep 0.1; done"
run "echo work done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`, flag), 1, 1)
	ctx := context.Background()
	ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the agent's pods: %v, %v", pods, err)
	}
	zero := int64(0)
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	again := k.events.Wait(func(e orchestrator.Event) bool {
		return (e.Kind == orchestrator.EvStarted && e.Task == ev.Task) || e.Kind == orchestrator.EvFailed
	})
	if again.Kind != orchestrator.EvStarted {
		t.Fatalf("after its pod was deleted: %+v", again)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := k.events.Wait(func(e orchestrator.Event) bool {
		return e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed
	})
	if done.Kind != orchestrator.EvCompleted {
		t.Fatalf("the task after its pod was deleted: %+v", done)
	}
	t.Logf("iteration of the second start: %v", again.Fields["iteration"])
	jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
	if err != nil || len(jobs.Items) != 2 {
		t.Fatalf("the agent's Jobs: %d, %v; want the first and the one it ran again in", len(jobs.Items), err)
	}
}
