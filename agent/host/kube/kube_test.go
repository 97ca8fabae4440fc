package kube_test

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// waitOut reads the client's output until it holds text.
func waitOut(ctx context.Context, t *testing.T, cl *host.Client, seen *bytes.Buffer, text string) {
	t.Helper()
	for !strings.Contains(seen.String(), text) {
		select {
		case b, ok := <-cl.Output():
			if !ok {
				t.Fatalf("the host's output ended before %q; got %q", text, seen.String())
			}
			seen.Write(b)
		case <-ctx.Done():
			t.Fatalf("waiting for %q: %v; got %q", text, ctx.Err(), seen.String())
		}
	}
}

// An agent host in a Job's pod on a real API server: started, reached
// through exec, typed into, listed by its labels, reconnected to with its
// screen replayed, and stopped, which deletes its Job.
func TestRunnerAgentInAPod(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	chorus := testkit.Chorus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	mark := func(what string) { t.Logf("%8.3fs  %s", time.Since(start).Seconds(), what) }
	r := &kube.Runner{Config: c.Config, Namespace: "default", Instance: t.TempDir(),
		Image: "unused", Exe: chorus, Grace: 2 * time.Second, Binary: "test",
		Timeline: func(id, step string) { mark(id + ": " + step) }}
	other := &kube.Runner{Config: c.Config, Namespace: "default", Instance: t.TempDir(), Image: "unused", Exe: chorus}

	cl, err := r.Start(ctx, host.Meta{AgentID: "agent/1", TaskID: "task-1"})
	if err != nil {
		t.Fatalf("%v\nnode log:\n%s", err, c.Log("kube-node"))
	}
	work := t.TempDir()
	if err := cl.Start(ctx, host.Spec{Argv: []string{"sh", "-c", `echo hello-agent; read x; echo "got-$x"; read y`},
		Dir: work, Cols: 80, Rows: 24}); err != nil {
		t.Fatal(err)
	}
	var seen bytes.Buffer
	waitOut(ctx, t, cl, &seen, "hello-agent")
	mark("agent's first output")
	if _, err := cl.Write([]byte("typed\r")); err != nil {
		t.Fatal(err)
	}
	waitOut(ctx, t, cl, &seen, "got-typed")
	mark("typed into the agent, read its answer")

	ms, err := r.List(ctx)
	if err != nil || len(ms) != 1 || ms[0].AgentID != "agent/1" || ms[0].TaskID != "task-1" {
		t.Fatalf("List: %+v, %v; want the one host of agent/1", ms, err)
	}
	if theirs, err := other.List(ctx); err != nil || len(theirs) != 0 {
		t.Fatalf("another instance's List: %+v, %v; want none", theirs, err)
	}
	cl.Close()

	cl2, err := r.Connect(ctx, ms[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := cl2.Wait4Info(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, screen := cl2.Screen(); !bytes.Contains(screen, []byte("got-typed")) {
		t.Fatalf("the reconnected screen lacks the agent's output: %q", screen)
	}
	mark("reconnected through a new exec; screen replayed")
	var seen2 bytes.Buffer
	if _, err := cl2.Write([]byte("again\r")); err != nil {
		t.Fatal(err)
	}
	waitOut(ctx, t, cl2, &seen2, "again")
	mark("typed after reconnecting")

	if err := r.Stop(ctx, ms[0]); err != nil {
		t.Fatal(err)
	}
	mark("stopped")
	if jobs, err := c.Client.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{LabelSelector: r.Selector("agent/1")}); err != nil || len(jobs.Items) != 0 {
		t.Fatalf("Jobs after Stop: %v, %v; want none", jobs, err)
	}
	if ms, err := r.List(ctx); err != nil || len(ms) != 0 {
		t.Fatalf("List after Stop: %+v, %v; want none", ms, err)
	}
	cl2.Close()
}

// How long reaching a running agent's host takes (connect, hello, the
// screen back) in a pod through the API server, against a local host on
// this machine: the wait before a re-attached tile shows the agent. It
// reports figures; it asserts only that every connect worked.
func TestAttachLatencyPodAgainstLocal(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	chorus := testkit.Chorus(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	spec := host.Spec{Argv: []string{"sh", "-c", "echo ready-to-attach; read x"}, Dir: t.TempDir(), Cols: 80, Rows: 24}
	local := &host.Local{Dir: t.TempDir(), Instance: "latency", Exe: chorus, Args: []string{"agent-host"}, Binary: "test"}
	pod := &kube.Runner{Config: c.Config, Namespace: "default", Instance: t.TempDir(), Image: "unused", Exe: chorus,
		Grace: 2 * time.Second, Binary: "test"}
	for _, rn := range []struct {
		name string
		r    host.Runner
	}{{"local host", local}, {"host in a pod", pod}} {
		cl, err := rn.r.Start(ctx, host.Meta{AgentID: "latency", TaskID: "t-1"})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Start(ctx, spec); err != nil {
			t.Fatal(err)
		}
		var seen bytes.Buffer
		waitOut(ctx, t, cl, &seen, "ready-to-attach")
		cl.Close()
		ms, err := rn.r.List(ctx)
		if err != nil || len(ms) != 1 {
			t.Fatalf("%s: List: %v, %v", rn.name, ms, err)
		}
		var ds []time.Duration
		for range 7 {
			t0 := time.Now()
			cl, err := rn.r.Connect(ctx, ms[0])
			if err == nil {
				err = cl.Wait4Info(ctx)
			}
			if err != nil {
				t.Fatalf("%s: connect: %v", rn.name, err)
			}
			if _, _, screen := cl.Screen(); !bytes.Contains(screen, []byte("ready-to-attach")) {
				t.Fatalf("%s: the screen on connect lacks the agent's output: %q", rn.name, screen)
			}
			ds = append(ds, time.Since(t0))
			cl.Close()
		}
		slices.Sort(ds)
		t.Logf("%s: connect to screen, 7 times: median %v, min %v, max %v", rn.name,
			ds[3].Round(time.Microsecond), ds[0].Round(time.Microsecond), ds[6].Round(time.Microsecond))
		if err := rn.r.Stop(ctx, ms[0]); err != nil {
			t.Fatal(err)
		}
	}
}
