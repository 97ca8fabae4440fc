package kube_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// bridgeOf finds the agent-host-bridge the node runs for the exec into
// the pod of agent pid (the test node's pods are local processes): the
// process in the pod's directory, the host's, named for the bridge.
func bridgeOf(t *testing.T, agentPid int) int {
	t.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", agentPid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	hostPid, _ := strconv.Atoi(f[1])
	podDir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", hostPid))
	if err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		cwd, _ := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if cwd == podDir && bytes.Contains(cmd, []byte("agent-host-bridge\x00")) && !bytes.Contains(cmd, []byte("--stop")) {
			return pid
		}
	}
	t.Fatalf("no agent-host-bridge in %s", podDir)
	return 0
}

// The exec stream to a pod's host dropped mid-run (its bridge killed):
// the engine finds the pod still running, connects again, rebuilds the
// agent's screen from the host's, and the agent keeps running in the
// same turn; a resize made after the reconnect reaches the agent's
// terminal (stty), and typing reaches it. Both with the runner in the
// engine's process and through chorus-kube, whose process then ends with
// the stream and is run again for the new one.
func TestDroppedExecStreamReconnects(t *testing.T) {
	runnerWays(t, func(t *testing.T, viaProc bool) {
		c := kubetest.Start(t, testkit.Root())
		k := startKube(t, c, `
	print "before the drop"
	signal PROGRESS 10
	wait-input
	run "stty size < /dev/tty"
	run "echo work done > out-$CHORUS_TASK_ID.txt"
	commit "feat: work"
	signal COMPLETE
	`, 1, 1, viaProc)
		ev := k.events.Wait(func(e orchestrator.Event) bool { return e.Kind == orchestrator.EvStarted })
		k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvSignal && e.Fields["type"] == "PROGRESS"
		})
		pid, _ := ev.Fields["pid"].(int)
		bridge := bridgeOf(t, pid)
		dropped := time.Now()
		if err := syscall.Kill(bridge, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		back := k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvRecovered || e.Kind == orchestrator.EvAgentExit || e.Kind == orchestrator.EvFailed
		})
		if back.Kind != orchestrator.EvRecovered || back.Fields["reconnected"] != true {
			t.Fatalf("after the exec stream dropped: %+v", back)
		}
		t.Logf("stream dropped → reconnected %v (%v ms connecting)", back.Time.Sub(dropped).Round(time.Millisecond), back.Fields["ms"])
		emu := k.eng.Screen(ev.Agent)
		if !strings.Contains(emu.Text(), "before the drop") {
			t.Fatalf("the screen after reconnecting:\n%s", emu.Text())
		}
		k.eng.Resize(ev.Agent, 91, 27)
		if err := k.eng.Do(context.Background(), orchestrator.Command{Kind: orchestrator.CmdType, AgentID: ev.Agent, Text: "go on"}); err != nil {
			t.Fatal(err)
		}
		done := k.events.Wait(func(e orchestrator.Event) bool {
			return e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed || e.Kind == orchestrator.EvAgentExit && e.Fields["hostLost"] == true
		})
		if done.Kind != orchestrator.EvCompleted || fmt.Sprint(done.Fields["iterations"]) != "1" {
			t.Fatalf("the task after the reconnect: %+v", done)
		}
		text := emu.Text() // the run has ended: the emulator it wrote to
		if !strings.Contains(text, "received: go on") || !strings.Contains(text, "27 91") {
			t.Errorf("the agent's screen does not show the typed text and its new size (27 91):\n%s", text)
		}
		for _, e := range k.events.Log {
			if e.Kind == orchestrator.EvStarted && e.Time.After(ev.Time) {
				t.Errorf("the agent was started again: %+v", e)
			}
		}
		jobs, err := c.Client.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: k.r.Selector(ev.Agent)})
		if err != nil || len(jobs.Items) != 1 {
			t.Fatalf("the agent's Jobs: %d, %v; want one", len(jobs.Items), err)
		}
	})
}
