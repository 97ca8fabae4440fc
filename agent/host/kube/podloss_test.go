package kube_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// waitIdle waits until the engine has landed what it completed.
func (k *kengine) waitIdle(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	limit := time.After(3 * time.Minute)
	for {
		if err := k.eng.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		if k.eng.Snapshot().Idle {
			return
		}
		select {
		case <-k.eng.Changed():
		case ev := <-k.events.C:
			k.events.Log = append(k.events.Log, ev)
		case <-limit:
			t.Fatal("the engine never became idle")
		}
	}
}

// An agent's pod deleted mid-task (as an eviction or a lost node would
// end it) is the machine's failure, not the agent's: the runner finds the
// pod gone, the engine runs the task again in a new Job's pod from the
// work it had (a commit made before the loss), and the task lands with
// one iteration spent. Both with the runner in the engine's process and
// through chorus-kube (its ended, start and stop operations).
func TestPodDeletedMidTaskCostsNoIteration(t *testing.T) {
	runnerWays(t, func(t *testing.T, viaProc bool) {
		c := kubetest.Start(t, testkit.Root())
		flag := filepath.Join(t.TempDir(), "go-on")
		k := startKube(t, c, fmt.Sprintf(`
	run "echo part >> part-$CHORUS_TASK_ID.txt"
	commit "feat: part"
	signal PROGRESS 50
	run "while [ ! -f %s ]; do sleep 0.1; done"
	run "echo work done > out-$CHORUS_TASK_ID.txt"
	commit "feat: work"
	signal COMPLETE
	`, flag), 1, 1, viaProc)
		ctx := context.Background()
		ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
		if it := fmt.Sprint(ev.Fields["iteration"]); it != "1" {
			t.Fatalf("first start: iteration %s", it)
		}
		k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvSignal && e.Fields["type"] == "PROGRESS"
		})
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
		if err != nil || len(pods.Items) != 1 {
			t.Fatalf("the agent's pods: %v, %v", pods, err)
		}
		zero := int64(0)
		deleted := time.Now()
		k.step(ev.Agent, "pod deleted")
		if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
			t.Fatal(err)
		}
		exit := k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvAgentExit || e.Kind == orchestrator.EvFailed
		})
		if exit.Fields["hostLost"] != true || !strings.Contains(exit.Text, "pod") {
			t.Fatalf("the agent's end after its pod was deleted: %+v", exit)
		}
		again := k.events.Wait(func(e orchestrator.Event) bool {
			return (e.Kind == orchestrator.EvStarted && e.Task == ev.Task) || e.Kind == orchestrator.EvFailed
		})
		if again.Kind != orchestrator.EvStarted || fmt.Sprint(again.Fields["iteration"]) != "1" {
			t.Fatalf("after its pod was deleted: %+v; want a start in iteration 1", again)
		}
		t.Logf("pod deleted → host lost seen %v → running again in a new pod %v", exit.Time.Sub(deleted).Round(time.Millisecond),
			again.Time.Sub(deleted).Round(time.Millisecond))
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		done := k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed
		})
		if done.Kind != orchestrator.EvCompleted {
			t.Fatalf("the task after its pod was deleted: %+v", done)
		}
		k.waitIdle(t)
		t.Logf("pod deleted → landed %v", time.Since(deleted).Round(time.Millisecond))
		id := ev.Task
		// The first pod's commit was kept and the second run went on from it.
		if got := testkit.Git(t, k.root, "show", "main:part-"+id+".txt"); got != "part\npart" {
			t.Errorf("main:part-%s.txt = %q; want the line of each run", id, got)
		}
		if n := fmt.Sprint(done.Fields["iterations"]); n != "1" {
			t.Errorf("the task completed after %s iterations, want 1", n)
		}
		its, err := orchestrator.ReadLedger(orchestrator.LedgerPath(filepath.Join(k.root, ".chorus"), id))
		if err != nil || len(its) != 2 {
			t.Fatalf("ledger: %+v, %v; want the lost run and the one that landed", its, err)
		}
		for _, it := range its {
			if it.N != 1 {
				t.Errorf("ledger records iteration %d: %+v", it.N, it)
			}
		}
		if !strings.Contains(its[0].Result, "host was lost") {
			t.Errorf("the lost run's record: %q", its[0].Result)
		}
		jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
		if err != nil || len(jobs.Items) != 2 {
			t.Fatalf("the agent's Jobs: %d, %v; want the first and the one it ran again in", len(jobs.Items), err)
		}
		k.mu.Lock()
		t.Logf("timeline: %s", strings.Join(k.timeline[ev.Agent], " | "))
		k.mu.Unlock()
	})
}
