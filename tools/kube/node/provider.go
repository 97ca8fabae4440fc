package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node/api"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	utilexec "k8s.io/utils/exec"
)

// processes is a virtual-kubelet provider that runs each container's
// command as a process of this machine, in a process group and a
// directory of its own; the image is not pulled.
type processes struct {
	root   string // a directory per pod under it
	ip     string
	path   string // PATH given to every container
	mu     sync.Mutex
	pods   map[string]*pod
	notify func(*corev1.Pod)
}

type pod struct {
	spec       *corev1.Pod
	containers []*container
	started    metav1.Time
	message    string // why the pod failed before any container started
}

// container is one running (or finished) container process.
type container struct {
	spec   corev1.Container
	dir    string
	env    []string
	cmd    *exec.Cmd
	tty    *os.File       // the PTY master when spec.TTY
	stdin  io.WriteCloser // the process's stdin when not a TTY
	out    *output
	start  metav1.Time
	done   chan struct{} // closed once the process ended and its output is read
	code   int
	finish metav1.Time
	killed bool
}

func key(ns, name string) string { return ns + "/" + name }

func (p *processes) CreatePod(ctx context.Context, in *corev1.Pod) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	k := key(in.Namespace, in.Name)
	if _, ok := p.pods[k]; ok {
		return nil
	}
	pd := &pod{spec: in.DeepCopy(), started: metav1.Now()}
	p.pods[k] = pd
	base := filepath.Join(p.root, in.Namespace, in.Name)
	for _, cs := range in.Spec.Containers {
		c, err := p.startContainer(pd, base, cs)
		if err != nil {
			pd.message = fmt.Sprintf("container %s: %v", cs.Name, err)
			p.killAll(pd, syscall.SIGKILL)
			break
		}
		pd.containers = append(pd.containers, c)
	}
	p.notifyLocked(pd)
	return nil
}

func (p *processes) startContainer(pd *pod, base string, cs corev1.Container) (*container, error) {
	argv := append(append([]string(nil), cs.Command...), cs.Args...)
	if len(argv) == 0 {
		return nil, fmt.Errorf("no command: this node runs a container's command as a local process and never pulls the image %q", cs.Image)
	}
	dir := cs.WorkingDir
	if dir == "" {
		dir = filepath.Join(base, cs.Name)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	env := []string{"PATH=" + p.path, "HOME=" + dir, "HOSTNAME=" + pd.spec.Name}
	if cs.TTY {
		env = append(env, "TERM=xterm")
	}
	for _, e := range cs.Env {
		// The node resolved references (secrets, the downward API) into
		// Value before CreatePod; what it could not is left out.
		if e.ValueFrom == nil {
			env = append(env, e.Name+"="+e.Value)
		}
	}
	out, err := newOutput(filepath.Join(base, cs.Name+".log"))
	if err != nil {
		return nil, err
	}
	c := &container{spec: cs, dir: dir, env: env, out: out, done: make(chan struct{})}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = dir, env
	if lp, err := lookPath(argv[0], p.path); err == nil {
		cmd.Path = lp
	}
	c.cmd = cmd
	readDone := make(chan struct{})
	if cs.TTY {
		cmd.SysProcAttr = sysAttr(true)
		f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 24, Cols: 80}, cmd.SysProcAttr)
		if err != nil {
			out.close()
			return nil, err
		}
		c.tty = f
		go func() { _, _ = io.Copy(out, f); close(readDone) }()
	} else {
		cmd.SysProcAttr = sysAttr(false)
		cmd.Stdout, cmd.Stderr = out, out
		if cs.Stdin {
			w, err := cmd.StdinPipe()
			if err != nil {
				return nil, err
			}
			c.stdin = w
		}
		if err := cmd.Start(); err != nil {
			out.close()
			return nil, err
		}
		close(readDone)
	}
	c.start = metav1.Now()
	go p.wait(pd, c, readDone)
	return c, nil
}

// wait records a container's end. Like a container's init, the main
// process ending ends everything it started.
func (p *processes) wait(pd *pod, c *container, readDone chan struct{}) {
	err := c.cmd.Wait()
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	<-readDone
	if c.tty != nil {
		c.tty.Close()
	}
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
		if code < 0 {
			code = 128 + int(ee.Sys().(syscall.WaitStatus).Signal())
		}
	} else if err != nil {
		code = 128
	}
	p.mu.Lock()
	c.code, c.finish = code, metav1.Now()
	close(c.done)
	c.out.close()
	p.notifyLocked(pd)
	p.mu.Unlock()
}

func (p *processes) killAll(pd *pod, sig syscall.Signal) {
	for _, c := range pd.containers {
		select {
		case <-c.done:
		default:
			c.killed = c.killed || sig == syscall.SIGKILL
			_ = syscall.Kill(-c.cmd.Process.Pid, sig)
		}
	}
}

func (p *processes) UpdatePod(ctx context.Context, in *corev1.Pod) error { return nil }

// DeletePod stops the pod's processes: SIGTERM, then SIGKILL after the
// grace period (at most 30 s).
func (p *processes) DeletePod(ctx context.Context, in *corev1.Pod) error {
	p.mu.Lock()
	pd, ok := p.pods[key(in.Namespace, in.Name)]
	if !ok {
		p.mu.Unlock()
		return errdefs.NotFound("no such pod")
	}
	grace := int64(30)
	if in.DeletionGracePeriodSeconds != nil {
		grace = *in.DeletionGracePeriodSeconds
	}
	grace = min(grace, 30)
	p.killAll(pd, syscall.SIGTERM)
	p.mu.Unlock()
	t := time.NewTimer(time.Duration(grace) * time.Second)
	defer t.Stop()
	for _, c := range pd.containers {
		select {
		case <-c.done:
		case <-t.C:
			p.mu.Lock()
			p.killAll(pd, syscall.SIGKILL)
			p.mu.Unlock()
			<-c.done
		}
	}
	p.mu.Lock()
	delete(p.pods, key(in.Namespace, in.Name))
	pd.spec.DeletionTimestamp = in.DeletionTimestamp
	p.notifyLocked(pd)
	p.mu.Unlock()
	return nil
}

// Close kills every process this node started: nothing outlives it.
func (p *processes) Close() {
	p.mu.Lock()
	pods := make([]*pod, 0, len(p.pods))
	for _, pd := range p.pods {
		p.killAll(pd, syscall.SIGKILL)
		pods = append(pods, pd)
	}
	p.mu.Unlock()
	for _, pd := range pods {
		for _, c := range pd.containers {
			<-c.done
		}
	}
}

func (p *processes) GetPod(ctx context.Context, ns, name string) (*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, ok := p.pods[key(ns, name)]
	if !ok {
		return nil, errdefs.NotFound("no such pod")
	}
	return p.podLocked(pd), nil
}

func (p *processes) GetPodStatus(ctx context.Context, ns, name string) (*corev1.PodStatus, error) {
	pd, err := p.GetPod(ctx, ns, name)
	if err != nil {
		return nil, err
	}
	return &pd.Status, nil
}

func (p *processes) GetPods(ctx context.Context) ([]*corev1.Pod, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []*corev1.Pod
	for _, pd := range p.pods {
		out = append(out, p.podLocked(pd))
	}
	return out, nil
}

func (p *processes) NotifyPods(ctx context.Context, f func(*corev1.Pod)) {
	p.mu.Lock()
	p.notify = f
	p.mu.Unlock()
}

func (p *processes) notifyLocked(pd *pod) {
	if p.notify != nil {
		p.notify(p.podLocked(pd))
	}
}

// podLocked is the pod with its status as the processes have it.
func (p *processes) podLocked(pd *pod) *corev1.Pod {
	out := pd.spec.DeepCopy()
	st := &out.Status
	st.HostIP, st.PodIP = p.ip, p.ip
	st.HostIPs = []corev1.HostIP{{IP: p.ip}}
	st.PodIPs = []corev1.PodIP{{IP: p.ip}}
	st.StartTime = &pd.started
	running, failed, finished := 0, pd.message != "", 0
	for _, c := range pd.containers {
		cs := corev1.ContainerStatus{Name: c.spec.Name, Image: c.spec.Image, ImageID: "process://" + c.spec.Image,
			ContainerID: fmt.Sprintf("process://%d", c.cmd.Process.Pid)}
		select {
		case <-c.done:
			finished++
			reason := "Completed"
			if c.code != 0 {
				failed, reason = true, "Error"
			}
			cs.State.Terminated = &corev1.ContainerStateTerminated{ExitCode: int32(c.code), Reason: reason,
				StartedAt: c.start, FinishedAt: c.finish, ContainerID: cs.ContainerID}
		default:
			running++
			t := true
			cs.Ready, cs.Started = true, &t
			cs.State.Running = &corev1.ContainerStateRunning{StartedAt: c.start}
		}
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	switch {
	case pd.message != "":
		st.Phase, st.Reason, st.Message = corev1.PodFailed, "StartError", pd.message
	case running > 0:
		st.Phase = corev1.PodRunning
	case failed:
		st.Phase = corev1.PodFailed
	case finished > 0:
		st.Phase = corev1.PodSucceeded
	default:
		st.Phase = corev1.PodPending
	}
	ready := corev1.ConditionFalse
	if st.Phase == corev1.PodRunning && running == len(pd.spec.Spec.Containers) {
		ready = corev1.ConditionTrue
	}
	now := metav1.Now()
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: pd.started},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: pd.started},
		{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: now},
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: now},
	}
	return out
}

func (p *processes) find(ns, name, cname string) (*pod, *container, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	pd, ok := p.pods[key(ns, name)]
	if !ok {
		return nil, nil, errdefs.NotFound("no such pod")
	}
	for _, c := range pd.containers {
		if c.spec.Name == cname || cname == "" {
			return pd, c, nil
		}
	}
	return nil, nil, errdefs.NotFoundf("container %q not found in pod %s", cname, name)
}

// GetContainerLogs reads the container's output (a TTY's or stdout and
// stderr together), following it until the process ends if asked.
func (p *processes) GetContainerLogs(ctx context.Context, ns, name, cname string, opts api.ContainerLogOpts) (io.ReadCloser, error) {
	_, c, err := p.find(ns, name, cname)
	if err != nil {
		return nil, err
	}
	return c.out.reader(ctx, opts.Follow, opts.Tail, opts.LimitBytes)
}

// RunInContainer is exec: the command runs in the container's directory
// with its environment, under a PTY when asked; its exit code goes back.
func (p *processes) RunInContainer(ctx context.Context, ns, name, cname string, argv []string, io_ api.AttachIO) error {
	_, c, err := p.find(ns, name, cname)
	if err != nil {
		return err
	}
	select {
	case <-c.done:
		return errdefs.InvalidInputf("container %q is not running", cname)
	default:
	}
	if len(argv) == 0 {
		return errdefs.InvalidInput("exec: no command")
	}
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = c.dir, c.env
	if lp, err := lookPath(argv[0], p.path); err == nil {
		cmd.Path = lp
	}
	var copies sync.WaitGroup
	if io_.TTY() {
		cmd.SysProcAttr = sysAttr(true)
		f, err := pty.StartWithAttrs(cmd, &pty.Winsize{Rows: 24, Cols: 80}, cmd.SysProcAttr)
		if err != nil {
			return err
		}
		defer f.Close()
		go resize(ctx, f, io_.Resize())
		if in := io_.Stdin(); in != nil {
			go func() { _, _ = io.Copy(f, in) }()
		}
		copies.Add(1)
		go func() { defer copies.Done(); _, _ = io.Copy(io_.Stdout(), f) }()
	} else {
		cmd.SysProcAttr = sysAttr(false)
		cmd.Stdout, cmd.Stderr = io_.Stdout(), io_.Stderr()
		if cmd.Stderr == nil {
			cmd.Stderr = io_.Stdout()
		}
		if in := io_.Stdin(); in != nil {
			w, err := cmd.StdinPipe()
			if err != nil {
				return err
			}
			go func() { _, _ = io.Copy(w, in); w.Close() }()
		}
		cmd.WaitDelay = 2 * time.Second
		if err := cmd.Start(); err != nil {
			return err
		}
	}
	err = cmd.Wait()
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	copies.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code := ee.ExitCode()
		if code < 0 {
			code = 137
		}
		return utilexec.CodeExitError{Err: err, Code: code}
	}
	return err
}

// AttachToContainer joins the container's own stdio: its output from now
// on, input to its PTY or stdin, resizes to its PTY.
func (p *processes) AttachToContainer(ctx context.Context, ns, name, cname string, io_ api.AttachIO) error {
	_, c, err := p.find(ns, name, cname)
	if err != nil {
		return err
	}
	if c.tty != nil {
		go resize(ctx, c.tty, io_.Resize())
	}
	if in := io_.Stdin(); in != nil {
		var w io.Writer = c.stdin
		if c.tty != nil {
			w = c.tty
		}
		if w != nil {
			go func() { _, _ = io.Copy(w, in) }()
		}
	}
	r, err := c.out.reader(ctx, true, 0, 0)
	if err != nil {
		return err
	}
	defer r.Close()
	r.(*follower).fromEnd()
	_, err = io.Copy(io_.Stdout(), r)
	return err
}

func resize(ctx context.Context, f *os.File, ch <-chan api.TermSize) {
	for {
		select {
		case s, ok := <-ch:
			if !ok {
				return
			}
			_ = pty.Setsize(f, &pty.Winsize{Rows: s.Height, Cols: s.Width})
		case <-ctx.Done():
			return
		}
	}
}

func (p *processes) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errdefs.NotFound("stats are not kept by this node")
}

func (p *processes) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errdefs.NotFound("metrics are not kept by this node")
}

func (p *processes) PortForward(ctx context.Context, ns, pod string, port int32, stream io.ReadWriteCloser) error {
	return errdefs.NotFound("port forwarding is not supported by this node")
}

// lookPath finds a command on the containers' PATH rather than the node's.
func lookPath(name, path string) (string, error) {
	if filepath.IsAbs(name) || filepath.Base(name) != name {
		return name, nil
	}
	for _, d := range filepath.SplitList(path) {
		f := filepath.Join(d, name)
		if st, err := os.Stat(f); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return f, nil
		}
	}
	return "", exec.ErrNotFound
}
