// Package kubetest starts a real Kubernetes control plane for tests on
// this machine: etcd, kube-apiserver, the controllers Jobs need and a node
// whose pods are local processes (tools/kube, built by
// scripts/build-kube.sh), with certificates made here; every process it
// started is stopped when the test ends. Without the tools, tests skip
// saying how to build them.
package kubetest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	watchtools "k8s.io/client-go/tools/watch"
)

// Cluster is a running control plane with one node.
type Cluster struct {
	Config     *rest.Config
	Client     kubernetes.Interface
	Kubeconfig string // an administrator's kubeconfig file
	Node       string // the node's name
	Dir        string // certificates, logs, etcd's data and the pods' directories
	Ready      time.Duration
	procs      []*proc
	certs      *certs
	server     string
}

// Binaries the tools directory must hold.
var Binaries = []string{"etcd", "kube-apiserver", "kube-controller-manager", "kube-node"}

// Key is the tools cache's key for the checkout at root: a hash of the
// files that decide what scripts/build-kube.sh builds (scripts/kube-key.sh
// computes the same).
func Key(root string) (string, error) {
	node, err := filepath.Glob(filepath.Join(root, "tools/kube/node/*.go"))
	if err != nil {
		return "", err
	}
	rel := []string{"tools/kube/node/go.mod", "tools/kube/node/go.sum"}
	for _, n := range node {
		rel = append(rel, "tools/kube/node/"+filepath.Base(n))
	}
	sort.Strings(rel)
	rel = append([]string{"tools/kube/go.mod", "tools/kube/go.sum"}, rel...)
	h := sha256.New()
	for _, r := range rel {
		b, err := os.ReadFile(filepath.Join(root, r))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "%s\n", r)
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// ToolsDir is where the binaries are: $CHORUS_KUBE_TOOLS, or
// ${CHORUS_KUBE_CACHE:-<root>/.tools}/kube-<Key>. The error says what is
// missing and how to build it.
func ToolsDir(root string) (string, error) {
	dir := os.Getenv("CHORUS_KUBE_TOOLS")
	if dir == "" {
		key, err := Key(root)
		if err != nil {
			return "", fmt.Errorf("the Kubernetes tools' sources: %w", err)
		}
		cache := os.Getenv("CHORUS_KUBE_CACHE")
		if cache == "" {
			cache = filepath.Join(root, ".tools")
		}
		dir = filepath.Join(cache, "kube-"+key)
	}
	for _, b := range Binaries {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.Mode()&0o111 == 0 {
			return "", fmt.Errorf("needs %s in %s: run scripts/build-kube.sh (kube-apiserver and friends from the Go module proxy, etcd from apt; tens of CPU-minutes once per change of tools/kube) or set CHORUS_KUBE_TOOLS to a directory holding %s",
				b, dir, strings.Join(Binaries, ", "))
		}
	}
	return dir, nil
}

// Start starts a cluster for t from the tools of the checkout at root, or
// skips t when they are not built. Everything it started is stopped when
// t ends.
func Start(t testing.TB, root string) *Cluster {
	t.Helper()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs a POSIX shell for the pods' commands")
	}
	tools, err := ToolsDir(root)
	if err != nil {
		t.Skip(err.Error())
	}
	begin := time.Now()
	dir, err := os.MkdirTemp("", "kubetest-")
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Dir: dir, Node: "chorus-node"}
	t.Cleanup(func() {
		c.Stop(t)
		if !t.Failed() {
			os.RemoveAll(dir)
		} else {
			t.Logf("kubetest: logs kept in %s", dir)
		}
	})
	if err := c.start(t, tools); err != nil {
		c.logTails(t)
		t.Fatalf("kubetest: %v", err)
	}
	c.Ready = time.Since(begin)
	t.Logf("kubetest: empty etcd to node Ready and default service account in %v", c.Ready.Round(time.Millisecond))
	return c
}

func (c *Cluster) start(t testing.TB, tools string) error {
	ct, err := newCerts(c.Dir)
	if err != nil {
		return err
	}
	c.certs = ct
	lo := []net.IP{net.ParseIP("127.0.0.1")}
	for _, is := range []struct {
		name, cn string
		orgs     []string
		ips      []net.IP
		dns      []string
	}{
		{"apiserver", "kube-apiserver", nil, append(lo, net.ParseIP("10.0.0.1")),
			[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"}},
		{"admin", "admin", []string{"system:masters"}, nil, nil},
		{"apiserver-kubelet-client", "kube-apiserver-kubelet-client", []string{"system:masters"}, nil, nil},
		{"node", "system:node:" + c.Node, []string{"system:nodes"}, lo, []string{"localhost"}},
	} {
		if err := ct.issue(is.name, is.cn, is.orgs, is.ips, is.dns); err != nil {
			return err
		}
	}
	if err := ct.serviceAccountKeys(); err != nil {
		return err
	}
	ports, err := freePorts(4)
	if err != nil {
		return err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	if err := c.run(tools, "etcd", "--name=default", "--data-dir="+filepath.Join(c.Dir, "etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--logger=zap", "--log-level=warn"); err != nil {
		return err
	}
	p := ct.path
	// etcd 3.4 answers a watch without a resource version with "too large
	// resource version" unless the watch cache is off.
	if err := c.run(tools, "kube-apiserver", "--etcd-servers="+etcdURL, "--watch-cache=false",
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(ports[2]),
		"--tls-cert-file="+p("apiserver.crt"), "--tls-private-key-file="+p("apiserver.key"),
		"--client-ca-file="+p("ca.crt"), "--service-cluster-ip-range=10.0.0.0/24",
		"--service-account-issuer=https://kubernetes.default.svc",
		"--service-account-key-file="+p("sa.pub"), "--service-account-signing-key-file="+p("sa.key"),
		"--authorization-mode=Node,RBAC",
		"--kubelet-client-certificate="+p("apiserver-kubelet-client.crt"),
		"--kubelet-client-key="+p("apiserver-kubelet-client.key"),
		"--kubelet-certificate-authority="+p("ca.crt"), "--kubelet-preferred-address-types=InternalIP",
		"--enable-priority-and-fairness=false", "--profiling=false", "--endpoint-reconciler-type=none"); err != nil {
		return err
	}
	c.server = "https://127.0.0.1:" + strconv.Itoa(ports[2])
	if c.Kubeconfig, err = c.writeKubeconfig("admin"); err != nil {
		return err
	}
	c.Config, err = clientcmd.BuildConfigFromFlags("", c.Kubeconfig)
	if err != nil {
		return err
	}
	c.Client, err = kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	if err := c.waitHealthy(ctx); err != nil {
		return err
	}
	if err := c.run(tools, "kube-controller-manager", "--kubeconfig="+c.Kubeconfig, "--leader-elect=false",
		"--controllers=job-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller,ttl-after-finished-controller",
		"--secure-port=0", "--use-service-account-credentials=false"); err != nil {
		return err
	}
	if err := c.run(tools, "kube-node", "-kubeconfig="+c.Kubeconfig, "-name="+c.Node,
		"-listen=127.0.0.1:"+strconv.Itoa(ports[3]), "-tls-cert="+p("node.crt"), "-tls-key="+p("node.key"),
		"-client-ca="+p("ca.crt"), "-root="+c.PodRoot()); err != nil {
		return err
	}
	nodes := cache.NewListWatchFromClient(c.Client.CoreV1().RESTClient(), "nodes", "",
		fields.OneTermEqualSelector("metadata.name", c.Node))
	if err := c.Until(ctx, "node "+c.Node+" Ready", nodes, &corev1.Node{}, func(o runtime.Object) bool {
		for _, cd := range o.(*corev1.Node).Status.Conditions {
			if cd.Type == corev1.NodeReady && cd.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}); err != nil {
		return err
	}
	// Pods are refused until the service-account controller made the
	// namespace's default account.
	sas := cache.NewListWatchFromClient(c.Client.CoreV1().RESTClient(), "serviceaccounts", "default",
		fields.OneTermEqualSelector("metadata.name", "default"))
	return c.Until(ctx, "the default service account", sas, &corev1.ServiceAccount{}, func(runtime.Object) bool { return true })
}

// writeKubeconfig writes <name>.kubeconfig for the client certificate
// <name>.crt.
func (c *Cluster) writeKubeconfig(name string) (string, error) {
	path := filepath.Join(c.Dir, name+".kubeconfig")
	kc := clientcmdapi.NewConfig()
	kc.Clusters["test"] = &clientcmdapi.Cluster{Server: c.server, CertificateAuthority: c.certs.path("ca.crt")}
	kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificate: c.certs.path(name + ".crt"), ClientKey: c.certs.path(name + ".key")}
	kc.Contexts["test"] = &clientcmdapi.Context{Cluster: "test", AuthInfo: name, Namespace: "default"}
	kc.CurrentContext = "test"
	return path, clientcmd.WriteToFile(*kc, path)
}

// UserKubeconfig is a kubeconfig for a user of the cluster other than
// the administrator, who may do only what RBAC grants it.
func (c *Cluster) UserKubeconfig(t testing.TB, user string) string {
	t.Helper()
	if err := c.certs.issue("user-"+user, user, nil, nil, nil); err != nil {
		t.Fatal(err)
	}
	path, err := c.writeKubeconfig("user-" + user)
	if err != nil {
		t.Fatal(err)
	}
	return path
}

// waitHealthy polls the API server's /readyz (nothing to watch before it
// serves) until it answers ok, failing at once if a process ended.
func (c *Cluster) waitHealthy(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		b, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			last = err
			return false, nil
		}
		return strings.TrimSpace(string(b)) == "ok", nil
	})
	if err != nil && last != nil {
		return fmt.Errorf("the API server did not become ready: %v (last answer: %v)", err, last)
	}
	return err
}

// Until watches lw until cond holds for an object, or ctx ends.
func (c *Cluster) Until(ctx context.Context, what string, lw cache.ListerWatcher, obj runtime.Object, cond func(runtime.Object) bool) error {
	_, err := watchtools.UntilWithSync(ctx, lw, obj, nil, func(ev watch.Event) (bool, error) {
		if err := c.exited(); err != nil {
			return false, err
		}
		if ev.Type == watch.Deleted {
			return false, nil
		}
		return cond(ev.Object), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
	return nil
}

// WaitPod watches the pods of ns matching selector until cond holds for
// one, returning it.
func (c *Cluster) WaitPod(ctx context.Context, ns, selector string, cond func(*corev1.Pod) bool) (*corev1.Pod, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = selector
			return c.Client.CoreV1().Pods(ns).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = selector
			return c.Client.CoreV1().Pods(ns).Watch(ctx, o)
		},
	}
	var got *corev1.Pod
	err := c.Until(ctx, "a pod matching "+selector, lw, &corev1.Pod{}, func(o runtime.Object) bool {
		p := o.(*corev1.Pod)
		if cond(p) {
			got = p
			return true
		}
		return false
	})
	return got, err
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// run starts one of the tools, its output in <Dir>/<name>.log.
func (c *Cluster) run(tools, name string, args ...string) error {
	log := filepath.Join(c.Dir, name+".log")
	f, err := os.Create(log)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.Command(filepath.Join(tools, name), args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Dir = c.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, log: log, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	c.procs = append(c.procs, p)
	return nil
}

// exited says which of the cluster's processes ended, if one did.
func (c *Cluster) exited() error {
	for _, p := range c.procs {
		select {
		case <-p.done:
			return fmt.Errorf("%s exited (%v); see %s", p.name, p.cmd.ProcessState, p.log)
		default:
		}
	}
	return nil
}

// Stop ends the processes, the node first so it stops its pods: SIGTERM,
// then SIGKILL to the group after 15 s. It runs when the test ends; a
// test may call it earlier to check what is left.
func (c *Cluster) Stop(t testing.TB) {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(15 * time.Second):
			t.Logf("kubetest: %s did not end on SIGTERM within 15s; killing it", p.name)
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-p.done
		}
	}
	c.procs = nil
}

// logTails logs the end of each process's log, for a failed start.
func (c *Cluster) logTails(t testing.TB) {
	for _, p := range c.procs {
		b, _ := os.ReadFile(p.log)
		if len(b) > 3000 {
			b = b[len(b)-3000:]
		}
		t.Logf("--- %s (%s):\n%s", p.name, p.log, b)
	}
}

// PodRoot is where the node makes each pod's containers a directory of
// their own (<root>/<namespace>/<pod>/<container>, also their HOME),
// away from the test's repositories.
func (c *Cluster) PodRoot() string { return filepath.Join(c.Dir, "pods") }

// Log returns the log of one of the cluster's processes ("kube-node",
// "kube-apiserver", ...), for a failing test to show.
func (c *Cluster) Log(name string) string {
	b, _ := os.ReadFile(filepath.Join(c.Dir, name+".log"))
	return string(b)
}

func freePorts(n int) ([]int, error) {
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
