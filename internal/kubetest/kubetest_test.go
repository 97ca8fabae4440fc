package kubetest_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// screen collects a stream's output and wakes whoever waits for a text.
type screen struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	woken chan struct{}
}

func newScreen() *screen { return &screen{woken: make(chan struct{}, 1)} }

func (s *screen) Write(b []byte) (int, error) {
	s.mu.Lock()
	s.buf.Write(b)
	s.mu.Unlock()
	select {
	case s.woken <- struct{}{}:
	default:
	}
	return len(b), nil
}

func (s *screen) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.buf.String() }

func (s *screen) waitFor(ctx context.Context, t *testing.T, text string) {
	t.Helper()
	for !strings.Contains(s.String(), text) {
		select {
		case <-s.woken:
		case <-ctx.Done():
			t.Fatalf("waiting for %q: %v; got %q", text, ctx.Err(), s.String())
		}
	}
}

// sizes is a TerminalSizeQueue fed by the test.
type sizes chan remotecommand.TerminalSize

func (q sizes) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// A Job's pod runs a command on the node; through the API server the
// test types into a shell exec'd in it with a TTY (WebSocket, SPDY as
// fallback) and reads the answer, sees an exec's exit code over SPDY,
// attaches to the container's stdin, reads its logs and sees the Job
// succeed. Nothing the cluster started is left afterwards.
func TestJobExecAttachLogs(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	start := time.Now()
	mark := func(what string) { t.Logf("%8.3fs  %s", time.Since(start).Seconds(), what) }
	ns := "default"
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "smoke", Labels: map[string]string{"chorus/task": "smoke"}},
		Spec: batchv1.JobSpec{
			BackoffLimit:            new(int32(0)),
			ActiveDeadlineSeconds:   new(int64(600)),
			TTLSecondsAfterFinished: new(int32(600)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"chorus/task": "smoke"}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: new(int64(1)),
					Containers: []corev1.Container{{
						Name: "main", Image: "unused", Stdin: true,
						Command: []string{"sh", "-c", `echo hello-from-pod; read line; echo "bye $line"`},
						Env:     []corev1.EnvVar{{Name: "GREETING", Value: "hi-there"}},
					}},
				},
			},
		},
	}
	if _, err := c.Client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mark("Job created")
	pod, err := c.WaitPod(ctx, ns, "chorus/task=smoke", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err != nil {
		t.Fatalf("%v\nnode log:\n%s", err, c.Log("kube-node"))
	}
	mark("pod " + pod.Name + " Running")
	pid, err := strconv.Atoi(strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "process://"))
	if err != nil {
		t.Fatalf("container id %q: %v", pod.Status.ContainerStatuses[0].ContainerID, err)
	}

	// A shell with a TTY: WebSocket first, SPDY if the upgrade fails.
	req := c.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"sh"}, Stdin: true, Stdout: true, TTY: true}, scheme.ParameterCodec)
	ws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", req.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req.URL())
	if err != nil {
		t.Fatal(err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	out := newScreen()
	q := make(sizes, 1)
	q <- remotecommand.TerminalSize{Width: 97, Height: 31}
	done := make(chan error, 1)
	go func() {
		done <- ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: inR, Stdout: out, Tty: true, TerminalSizeQueue: q})
	}()
	if _, err := io.WriteString(inW, "echo answer-$((6*7)) $GREETING; stty size\n"); err != nil {
		t.Fatal(err)
	}
	out.waitFor(ctx, t, "answer-42 hi-there")
	mark("typed into a TTY exec and read the answer back")
	out.waitFor(ctx, t, "31 97")
	q <- remotecommand.TerminalSize{Width: 120, Height: 40}
	io.WriteString(inW, "stty size; exit 3\n")
	out.waitFor(ctx, t, "40 120")
	mark("resized the exec's terminal")
	var code exec.CodeExitError
	if err := <-done; !errors.As(err, &code) || code.Code != 3 {
		t.Fatalf("exec ended with %v, want exit code 3", err)
	}
	close(q)

	// SPDY alone, no TTY, stdout and stderr apart, an exit code.
	req2 := c.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod.Name).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "main", Command: []string{"sh", "-c", "pwd; echo oops >&2; exit 7"},
			Stdout: true, Stderr: true}, scheme.ParameterCodec)
	spdy2, err := remotecommand.NewSPDYExecutor(c.Config, "POST", req2.URL())
	if err != nil {
		t.Fatal(err)
	}
	var so, se bytes.Buffer
	err = spdy2.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &so, Stderr: &se})
	if !errors.As(err, &code) || code.Code != 7 || !strings.Contains(so.String(), "/main") || se.String() != "oops\n" {
		t.Fatalf("SPDY exec: err %v, stdout %q, stderr %q; want exit 7, the container's directory, oops", err, so.String(), se.String())
	}
	mark("SPDY exec: exit code 7, stdout and stderr apart")

	// Attach to the container's own stdin: it answers and ends.
	areq := c.Client.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name(pod.Name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: "main", Stdin: true, Stdout: true}, scheme.ParameterCodec)
	aws, err := remotecommand.NewWebSocketExecutor(c.Config, "GET", areq.URL().String())
	if err != nil {
		t.Fatal(err)
	}
	aout := newScreen()
	if err := aws.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("done\n"), Stdout: aout}); err != nil {
		t.Fatalf("attach: %v (got %q)", err, aout.String())
	}
	if !strings.Contains(aout.String(), "bye done") {
		t.Fatalf("attach read %q, want the container's answer", aout.String())
	}
	mark("attached, typed into the container's stdin, read its answer")

	jobs := cache.NewListWatchFromClient(c.Client.BatchV1().RESTClient(), "jobs", ns, fields.OneTermEqualSelector("metadata.name", "smoke"))
	if err := c.Until(ctx, "the Job to complete", jobs, &batchv1.Job{}, func(o runtime.Object) bool {
		for _, cd := range o.(*batchv1.Job).Status.Conditions {
			if cd.Type == batchv1.JobFailed && cd.Status == corev1.ConditionTrue {
				t.Fatalf("the Job failed: %s", cd.Message)
			}
			if cd.Type == batchv1.JobComplete && cd.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}); err != nil {
		t.Fatal(err)
	}
	mark("Job Complete")
	logs, err := c.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{Container: "main"}).DoRaw(ctx)
	if err != nil || string(logs) != "hello-from-pod\nbye done\n" {
		t.Fatalf("logs: %q, %v", logs, err)
	}
	mark("logs read")
	if !testkit.WaitExit(t, pid, 10*time.Second) {
		t.Errorf("the finished pod's process %d is still there", pid)
	}

	// A pod still running, with a child of its own, when the cluster
	// stops: neither outlives it.
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "lingering", Labels: map[string]string{"chorus/task": "lingering"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{
			Name: "main", Image: "unused", Stdin: true, Command: []string{"sh", "-c", "sh -c 'read a' & echo child $! here; read b"}}}}}
	if _, err := c.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p, err = c.WaitPod(ctx, ns, "chorus/task=lingering", func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning })
	if err != nil {
		t.Fatal(err)
	}
	main, _ := strconv.Atoi(strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "process://"))
	rc, err := c.Client.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Follow: true}).Stream(ctx)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(rc).ReadString('\n')
	rc.Close()
	var child int
	if f := strings.Fields(line); len(f) == 3 {
		child, _ = strconv.Atoi(f[1])
	}
	if err != nil || child <= 0 {
		t.Fatalf("following the pod's log: %q, %v", line, err)
	}
	c.Stop(t)
	for _, pid := range []int{main, child} {
		if !testkit.WaitExit(t, pid, 10*time.Second) {
			t.Errorf("process %d of a running pod outlived the cluster", pid)
		}
	}
	mark("cluster stopped; the running pod's processes ended with it")
}
