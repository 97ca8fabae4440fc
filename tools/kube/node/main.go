// Command kube-node is a Kubernetes node for tests on one machine: a
// virtual kubelet whose pods are local processes (a pod's command, never
// its image), serving exec, attach and logs to the API server over TLS
// on 127.0.0.1, and, with -bind, a binder that places every pending pod
// on it in place of a scheduler.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-node:", err)
		os.Exit(1)
	}
}

func run() error {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the API server")
	name := flag.String("name", "local", "node name")
	listen := flag.String("listen", "127.0.0.1:10250", "address of the node's API (exec, attach, logs)")
	cert := flag.String("tls-cert", "", "serving certificate (for 127.0.0.1)")
	key := flag.String("tls-key", "", "serving key")
	clientCA := flag.String("client-ca", "", "CA whose client certificates (the API server's) may call the node")
	root := flag.String("root", "", "directory under which each pod gets a directory")
	bind := flag.Bool("bind", true, "bind pending pods to this node (no scheduler needed)")
	flag.Parse()
	if *kubeconfig == "" || *cert == "" || *key == "" || *clientCA == "" || *root == "" {
		return fmt.Errorf("-kubeconfig, -tls-cert, -tls-key, -client-ca and -root are required")
	}
	host, portS, err := net.SplitHostPort(*listen)
	if err != nil {
		return err
	}
	port, _ := strconv.Atoi(portS)
	rc, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	pair, err := tls.LoadX509KeyPair(*cert, *key)
	if err != nil {
		return err
	}
	caPEM, err := os.ReadFile(*clientCA)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("%s: no certificate", *clientCA)
	}
	// Only holders of a certificate from the cluster's CA (the API
	// server) reach pods' processes.
	tlsCfg := &tls.Config{Certificates: []tls.Certificate{pair}, ClientCAs: pool,
		ClientAuth: tls.RequireAndVerifyClientCert, MinVersion: tls.VersionTLS12}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	provider := &processes{root: *root, ip: host, path: os.Getenv("PATH"), pods: map[string]*pod{}}
	defer provider.Close()
	mux := http.NewServeMux()
	n, err := nodeutil.NewNode(*name, func(pc nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		describe(pc.Node, host, int32(port))
		return provider, nil, nil
	}, nodeutil.WithClient(client), func(c *nodeutil.NodeConfig) error {
		c.HTTPListenAddr, c.Handler, c.TLSConfig = *listen, mux, tlsCfg
		c.NumWorkers = 2
		c.InformerResyncPeriod = time.Minute
		c.StreamIdleTimeout = 4 * time.Hour
		c.StreamCreationTimeout = 30 * time.Second
		return nil
	}, nodeutil.AttachProviderRoutes(mux))
	if err != nil {
		return err
	}
	if *bind {
		go binder(ctx, client, *name)
	}
	go func() {
		if err := n.WaitReady(ctx, 0); err == nil {
			fmt.Fprintln(os.Stderr, "kube-node: ready")
		}
	}()
	err = n.Run(ctx)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// describe fills in what the API server needs to reach the node and the
// job controller to place pods.
func describe(n *corev1.Node, ip string, port int32) {
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: ip}, {Type: corev1.NodeHostName, Address: n.Name}}
	n.Status.DaemonEndpoints.KubeletEndpoint.Port = port
	res := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("64"),
		corev1.ResourceMemory: resource.MustParse("256Gi"),
		corev1.ResourcePods:   resource.MustParse("1000"),
	}
	n.Status.Capacity, n.Status.Allocatable = res, res
	n.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: runtime.GOOS, Architecture: runtime.GOARCH,
		KubeletVersion: "v1.34.4", ContainerRuntimeVersion: "process://1"}
	n.Labels["kubernetes.io/os"] = runtime.GOOS
	n.Labels["kubernetes.io/arch"] = runtime.GOARCH
}

// binder places every pod no node holds yet on this node, in place of a
// scheduler.
func binder(ctx context.Context, client kubernetes.Interface, nodeName string) {
	f := informers.NewSharedInformerFactoryWithOptions(client, time.Minute,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" }))
	bindPod := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			return
		}
		b := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID},
			Target: corev1.ObjectReference{Kind: "Node", Name: nodeName}}
		err := client.CoreV1().Pods(p.Namespace).Bind(ctx, b, metav1.CreateOptions{})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "kube-node: binding %s/%s: %v\n", p.Namespace, p.Name, err)
		}
	}
	_, _ = f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    bindPod,
		UpdateFunc: func(_, o any) { bindPod(o) },
	})
	f.Start(ctx.Done())
	<-ctx.Done()
	f.Shutdown()
}
