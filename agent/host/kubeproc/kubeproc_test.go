package kubeproc_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
	"github.com/chorus-dev/chorus/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }

// Without chorus-kube beside chorus or on PATH, the runner says what is
// missing and how to install it.
func TestMissingChorusKubeSaysWhatToDo(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := kubeproc.New(context.Background(), "", kubeproc.Config{Instance: "i"})
	if err == nil || !strings.Contains(err.Error(), "chorus-kube") || !strings.Contains(err.Error(), "CGO_ENABLED=0 go install ./cmd/...") {
		t.Fatalf("err = %v; want chorus-kube named and how to install it", err)
	}
}

// A kubeconfig that is not there is said at New, before any agent starts.
func TestUnconfiguredClusterIsSaidAtNew(t *testing.T) {
	exe := testkit.ChorusKube(t)
	_, err := kubeproc.New(context.Background(), exe, kubeproc.Config{Instance: "i", Kubeconfig: filepath.Join(t.TempDir(), "none")})
	if err == nil || !strings.Contains(err.Error(), "cluster is not configured") || !strings.Contains(err.Error(), "runner.kubeconfig") {
		t.Fatalf("err = %v", err)
	}
	_, err = kubeproc.New(context.Background(), exe, kubeproc.Config{Instance: "i", Kubeconfig: kubeconfig(t, "http://127.0.0.1:1"),
		Resources: map[string]string{"limits.memory": "lots"}})
	if err == nil || !strings.Contains(err.Error(), `"lots" is not a quantity`) {
		t.Fatalf("err = %v", err)
	}
}

// A start against an API server that never answers ends with its
// context, saying so, and chorus-kube, told to give up, ends too.
func TestStartGivesUpWithItsContext(t *testing.T) {
	exe := testkit.ChorusKube(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	conns := make(chan net.Conn, 16)
	asked := make(chan struct{}) // chorus-kube reached the server
	go func() {
		for n := 0; ; n++ {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns <- c // held open, never answered
			if n == 0 {
				close(asked)
			}
		}
	}()
	defer func() {
		for len(conns) > 0 {
			(<-conns).Close()
		}
	}()
	// chorus-kube under a name that tells its pid (exec keeps it).
	dir := t.TempDir()
	wrap := filepath.Join(dir, "chorus-kube")
	if err := os.WriteFile(wrap, []byte("#!/bin/sh\necho $$ > "+dir+"/pid.$1\nexec "+exe+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	r, err := kubeproc.New(context.Background(), wrap, kubeproc.Config{Instance: "i", Kubeconfig: kubeconfig(t, "http://"+ln.Addr().String()), Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	r.Timeline = func(_, step string) { steps = append(steps, step) }
	// The context ends once chorus-kube waits on the server (a fixed
	// timeout could end it, on a busy machine, before chorus-kube ran).
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-asked:
		case <-time.After(2 * time.Minute): // fail-safe only
		}
		cancel()
	}()
	_, err = r.Start(ctx, host.Meta{AgentID: "a"})
	if err == nil || !strings.Contains(err.Error(), "context canceled") {
		t.Fatalf("Start: %v; want its context's end", err)
	}
	select {
	case <-asked:
	default:
		t.Fatal("chorus-kube never reached the API server")
	}
	if len(steps) != 0 {
		t.Fatalf("steps %v before the Job was created", steps)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid.start"))
	if err != nil {
		t.Fatal(err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	if !testkit.WaitExit(t, pid, 30*time.Second) {
		t.Fatalf("chorus-kube start (pid %d) still runs after its start was given up", pid)
	}
}

// A Start whose chorus-kube fails says why, from its stderr.
func TestStartFailureSaysWhy(t *testing.T) {
	exe := testkit.ChorusKube(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now: connection refused
	r, err := kubeproc.New(context.Background(), exe, kubeproc.Config{Instance: "i", Kubeconfig: kubeconfig(t, "http://"+addr), Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err = r.Start(ctx, host.Meta{AgentID: "a"})
	if err == nil || !strings.Contains(err.Error(), "creating the agent's Job in namespace ns") {
		t.Fatalf("Start: %v; want chorus-kube's reason", err)
	}
	if _, err := r.List(ctx); err == nil || !strings.Contains(err.Error(), "listing the agent pods in namespace ns") {
		t.Fatalf("List: %v", err)
	}
	if e := r.Ended(ctx, host.Info{Meta: host.Meta{AgentID: "a"}}); e.Gone || !strings.Contains(e.Why, "listing its pods in ns") {
		t.Fatalf("Ended: %+v", e)
	}
}

func kubeconfig(t *testing.T, server string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: %q}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`, server)
	if err := os.WriteFile(p, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
