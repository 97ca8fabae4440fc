// Package kube runs agent hosts on Kubernetes: a Job per agent whose pod
// runs `chorus agent-host`, reached through the API server's exec stream
// (WebSocket, SPDY as fallback) to `chorus agent-host-bridge` beside it,
// found again by labels. It implements host.Runner.
package kube

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/remotecommand"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/klog/v2"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/chorus-dev/chorus/agent/host"
)

// Labels and the annotation a host's Job and pod carry.
const (
	LabelInstance  = "chorus.dev/instance" // a hash of the engine instance
	LabelTask      = "chorus.dev/task"
	LabelAgent     = "chorus.dev/agent"
	AnnotationMeta = "chorus.dev/meta"                    // the host's host.Meta as JSON
	labelUID       = "batch.kubernetes.io/controller-uid" // set by the job controller on a Job's pods
	container      = "host"
	// socket is the host's socket, relative to the container's working
	// directory, where exec runs the bridge too.
	socket = "chorus-host/agent.sock"
)

// podGrace is the shortest termination grace of a host's pod: the host's
// stop of its agent and the push of its work after it (a push to a remote
// far away, with its connection, takes seconds; the rest is margin). A
// pod killed before the push loses what changed since the last one.
const podGrace = host.StopGrace + 20*time.Second

// Runner starts each agent host as a Job in Namespace.
type Runner struct {
	Config     *rest.Config // the cluster and credentials
	Namespace  string
	Instance   string // the engine instance (its .chorus dir): List returns only its hosts
	Image      string
	Exe        string // chorus in the image ("" means "chorus" on its PATH)
	WorkingDir string // the container's directory ("" means the image's)
	Env        []corev1.EnvVar
	Resources  corev1.ResourceRequirements
	Orphan     time.Duration // a host's wait for an engine (0: host.DefaultOrphan)
	Deadline   time.Duration // the Job's active deadline (0: 24 h)
	TTL        time.Duration // how long a finished Job stays (0: 1 h)
	// Grace is the pod's termination grace, at least podGrace: told to
	// go, the host stops its agent (host.StopGrace) and pushes its work.
	Grace  time.Duration
	Binary string // this chorus's version, told to hosts
	// Remote is the git remote's URL as pods reach it: each pod clones
	// its task's branch from there into its own directory and pushes the
	// work back (host.Spec.Git), never seeing the hub's files. "" has
	// pods work in the hub's worktrees, which only a node sharing the
	// hub's files can do.
	Remote string

	// Timeline, when set, hears when a Start or Connect reached each
	// step.
	Timeline func(agentID, step string)

	once    sync.Once
	c       *clients
	initErr error
}

// api is the runner's connection to the API server, made on first use.
func (r *Runner) api() (*clients, error) {
	r.once.Do(func() {
		quiet.Do(func() { klog.SetLogger(logr.Discard()) })
		r.c, r.initErr = newClients(r.Config)
	})
	return r.c, r.initErr
}

var _ host.Remote = (*Runner)(nil)

// RemoteURL is where the pods clone from and push to (host.Remote).
func (r *Runner) RemoteURL() string { return r.Remote }

// quiet keeps client-go's own logging (klog: a stream torn down, a retry)
// off the terminal a TUI may be drawing; what matters comes back as
// errors.
var quiet sync.Once

func (r *Runner) exe() string {
	if r.Exe == "" {
		return "chorus"
	}
	return r.Exe
}

func (r *Runner) mark(agentID, step string) {
	if r.Timeline != nil {
		r.Timeline(agentID, step)
	}
}

func hash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

// labelValue makes s a label value: what labels cannot hold becomes '-',
// and a changed or long value ends in a hash so values stay distinct.
func labelValue(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('-')
		}
	}
	v := b.String()
	if v != s || len(v) > 63 {
		v = v[:min(len(v), 54)] + "-" + hash(s, 8)
	}
	return strings.Trim(v, "-_.")
}

// jobPrefix begins the names of an agent's Jobs (the API server adds a
// suffix to each): a DNS label naming the agent.
func jobPrefix(agentID string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(agentID) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	base := strings.Trim(b.String(), "-")
	return strings.Trim("chorus-"+base[:min(len(base), 40)], "-") + "-"
}

// Selector picks the Jobs and pods of an agent of this instance.
func (r *Runner) Selector(agentID string) string {
	return LabelInstance + "=" + hash(r.Instance, 16) + "," + LabelAgent + "=" + labelValue(agentID)
}

// Start creates the agent's Job, waits for its pod to run and for exec to
// reach the host in it, and connects.
func (r *Runner) Start(ctx context.Context, m host.Meta) (*host.Client, error) {
	var cl *host.Client
	if _, err := r.start(ctx, m, r.handshake(&cl)); err != nil {
		return nil, err
	}
	return cl, nil
}

// handshake is the greeter of an engine in this process: its client,
// made on the stream, goes in *cl.
func (r *Runner) handshake(cl **host.Client) greeter {
	return func(ctx context.Context, c net.Conn, name string) (<-chan struct{}, error) {
		var err error
		if *cl, err = host.Handshake(ctx, c, name, r.Binary); err != nil {
			return nil, err
		}
		return (*cl).Done(), nil
	}
}

// greeter says hello to the host over a new exec stream c. It returns
// once the host answered, with what ends the engine's side of the stream
// (closed: the engine is done with it), or the error for which the
// stream is torn down (and, but for a host of another version, another
// tried).
type greeter func(ctx context.Context, c net.Conn, name string) (done <-chan struct{}, err error)

// start creates the Job and connects with greet; the channel is closed
// once the stream has ended.
func (r *Runner) start(ctx context.Context, m host.Meta, greet greeter) (<-chan struct{}, error) {
	m.Instance, m.Version, m.Socket = r.Instance, host.Version, socket
	mj, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	orphan := r.Orphan
	if orphan <= 0 {
		orphan = host.DefaultOrphan
	}
	labels := map[string]string{LabelInstance: hash(r.Instance, 16), LabelAgent: labelValue(m.AgentID)}
	if m.TaskID != "" {
		labels[LabelTask] = labelValue(m.TaskID)
	}
	secs := func(d, def time.Duration) int64 {
		if d <= 0 {
			d = def
		}
		return int64(d / time.Second)
	}
	job := &batchv1.Job{
		// A name of its own per start: a finished Job of the same agent
		// (kept until its TTL) never blocks the next.
		ObjectMeta: metav1.ObjectMeta{GenerateName: jobPrefix(m.AgentID), Labels: labels, Annotations: map[string]string{AnnotationMeta: string(mj)}},
		Spec: batchv1.JobSpec{
			// Chorus decides whether a task runs again, not the Job.
			BackoffLimit:            new(int32(0)),
			ActiveDeadlineSeconds:   new(secs(r.Deadline, 24*time.Hour)),
			TTLSecondsAfterFinished: new(int32(secs(r.TTL, time.Hour))),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{AnnotationMeta: string(mj)}},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					TerminationGracePeriodSeconds: new(secs(max(r.Grace, podGrace), podGrace)),
					Containers: []corev1.Container{{
						Name: container, Image: r.Image, WorkingDir: r.WorkingDir,
						Command: []string{r.exe(), "agent-host", "--socket", socket, "--orphan", orphan.String(), "--info", string(mj)},
						Env:     r.Env, Resources: r.Resources,
					}},
				},
			},
		},
	}
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	created, err := api.createJob(ctx, r.Namespace, job)
	if err != nil {
		return nil, fmt.Errorf("creating the agent's Job in namespace %s: %w", r.Namespace, err)
	}
	r.mark(m.AgentID, "Job created")
	ended, err := r.connect(ctx, m.AgentID, labelUID+"="+string(created.UID), true, greet)
	if err != nil {
		// Nothing is left behind a start that failed.
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = r.deleteJob(dctx, created.Name)
		cancel()
		return nil, err
	}
	return ended, nil
}

// List returns the hosts of this instance whose pods live.
func (r *Runner) List(ctx context.Context) ([]host.Meta, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	pods, err := api.listPods(ctx, r.Namespace, metav1.ListOptions{LabelSelector: LabelInstance + "=" + hash(r.Instance, 16)})
	if err != nil {
		return nil, fmt.Errorf("listing the agent pods in namespace %s: %w", r.Namespace, err)
	}
	var ms []host.Meta
	for _, p := range pods.Items {
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		var m host.Meta
		if json.Unmarshal([]byte(p.Annotations[AnnotationMeta]), &m) != nil || m.Instance != r.Instance {
			continue
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Connect reaches a listed host through its pod's exec.
func (r *Runner) Connect(ctx context.Context, m host.Meta) (*host.Client, error) {
	var cl *host.Client
	if _, err := r.connect(ctx, m.AgentID, r.Selector(m.AgentID), false, r.handshake(&cl)); err != nil {
		return nil, err
	}
	return cl, nil
}

// Stop asks the host to stop its agent (its work kept), then deletes the
// agent's Jobs and their pods.
func (r *Runner) Stop(ctx context.Context, m host.Meta) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	pods, err := api.listPods(ctx, r.Namespace, metav1.ListOptions{LabelSelector: r.Selector(m.AgentID)})
	if err == nil {
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				_ = r.exec(ctx, p.Name, []string{r.exe(), "agent-host-bridge", "--stop", socket}, nil, io.Discard, io.Discard)
			}
		}
	}
	jobs, err := api.listJobs(ctx, r.Namespace, r.Selector(m.AgentID))
	if err != nil {
		return fmt.Errorf("listing the agent's Jobs in %s: %w", r.Namespace, err)
	}
	for _, j := range jobs.Items {
		if err := r.deleteJob(ctx, j.Name); err != nil {
			return err
		}
	}
	if pods != nil {
		// The Jobs' pods go with them, but only once the garbage
		// collector gets to them: deleted here too, they are gone from
		// List at once. Without the right to (RBAC), the collector
		// still does it.
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil {
				_ = api.deletePod(ctx, r.Namespace, p.Name)
			}
		}
	}
	return nil
}

func (r *Runner) deleteJob(ctx context.Context, name string) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	err = api.deleteJob(ctx, r.Namespace, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting the agent's Job %s: %w", name, err)
	}
	return nil
}

// podWatch lists and watches the pods of ns that match sel.
func podWatch(api *clients, ns, sel string) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return api.listPods(ctx, ns, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return api.watchPods(ctx, ns, o)
		},
	}
}

// runningPod waits for a pod matching sel to run. With strict (the pods
// of one Job), a pod that ended is an error saying why; otherwise ended
// pods (of an agent's earlier Jobs) are passed over.
func (r *Runner) runningPod(ctx context.Context, sel string, strict bool) (*corev1.Pod, error) {
	api, err := r.api()
	if err != nil {
		return nil, err
	}
	lw := podWatch(api, r.Namespace, sel)
	var pod *corev1.Pod
	_, err = watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
			return false, nil
		}
		switch p.Status.Phase {
		case corev1.PodRunning:
			pod = p
			return true, nil
		case corev1.PodFailed, corev1.PodSucceeded:
			if !strict {
				return false, nil
			}
			return false, fmt.Errorf("the agent's pod %s ended (%s): %s %s", p.Name, p.Status.Phase, p.Status.Reason, p.Status.Message)
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for a pod %s in %s to run: %w", sel, r.Namespace, err)
	}
	return pod, nil
}

// connect waits for the pod, then retries exec until the host in it
// answers: right after a pod starts, exec can fail (container not found)
// and the host may not listen yet.
// It returns what is closed once the stream has ended.
func (r *Runner) connect(ctx context.Context, agentID, sel string, strict bool, greet greeter) (<-chan struct{}, error) {
	pod, err := r.runningPod(ctx, sel, strict)
	if err != nil {
		return nil, err
	}
	r.mark(agentID, "pod Running")
	wait := 50 * time.Millisecond
	for {
		ended, err := r.dial(ctx, pod.Name, greet)
		if err == nil {
			r.mark(agentID, "exec ready, host connected")
			return ended, nil
		}
		if errors.As(err, new(host.ErrVersion)) {
			return nil, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("reaching the agent host in pod %s through exec: %w (last: %v)", pod.Name, ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
		if p, gerr := r.c.getPod(ctx, r.Namespace, pod.Name); gerr == nil &&
			(p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded || p.DeletionTimestamp != nil) {
			return nil, fmt.Errorf("the agent's pod %s ended (%s) before its host answered: %v", pod.Name, p.Status.Phase, err)
		}
	}
}

// dial runs the bridge in the pod through exec and has greet say hello
// over it; the channel is closed once the stream has ended.
func (r *Runner) dial(ctx context.Context, pod string, greet greeter) (<-chan struct{}, error) {
	engine, far := net.Pipe()
	sctx, cancel := context.WithCancel(context.Background())
	var errb lockedBuffer
	ended := make(chan error, 1)
	go func() {
		err := r.exec(sctx, pod, []string{r.exe(), "agent-host-bridge", socket}, far, far, &errb)
		far.Close()
		cancel()
		ended <- err
	}()
	done, err := greet(ctx, engine, pod+":"+socket)
	if err != nil {
		engine.Close()
		cancel()
		if xerr := <-ended; xerr != nil {
			err = fmt.Errorf("%w (exec: %v %s)", err, xerr, strings.TrimSpace(errb.String()))
		}
		return nil, err
	}
	// The stream lives as long as the connection. Once the engine is done
	// its last words (the bye after an exit) still travel: closing its
	// end ends the bridge's stdin, and the bridge ends when the host
	// closes; the stream is cut only if that takes too long.
	go func() {
		select {
		case <-done:
			engine.Close()
			t := time.NewTimer(30 * time.Second)
			defer t.Stop()
			select {
			case <-t.C:
			case <-sctx.Done():
			}
		case <-sctx.Done():
		}
		cancel()
	}()
	return sctx.Done(), nil
}

// exec runs cmd in the pod's host container, WebSocket first, SPDY when
// the server cannot upgrade to it.
func (r *Runner) exec(ctx context.Context, pod string, cmd []string, in io.Reader, out, errw io.Writer) error {
	api, err := r.api()
	if err != nil {
		return err
	}
	req := api.core.Post().Namespace(r.Namespace).Resource("pods").Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: cmd, Stdin: in != nil, Stdout: true, Stderr: true},
			api.params)
	ws, err := remotecommand.NewWebSocketExecutor(r.Config, "GET", req.URL().String())
	if err != nil {
		return err
	}
	spdy, err := remotecommand.NewSPDYExecutor(r.Config, "POST", req.URL())
	if err != nil {
		return err
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return err
	}
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: in, Stdout: out, Stderr: errw})
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.b.Len() > 4096 {
		return len(p), nil
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }
