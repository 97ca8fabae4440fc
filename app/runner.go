package app

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// hostRunner is the runner `runner` in the config names: nil for local
// (then agents.host decides whether agents run in hosts), a Kubernetes
// runner for "kubernetes".
func hostRunner(cfg config.Config, dir chorusdir.Dir) (host.Runner, error) {
	rc := cfg.Runner
	if rc.Kind != config.RunnerKubernetes {
		return nil, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if rc.Kubeconfig != "" {
		rules.ExplicitPath = rc.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: rc.Context})
	rest, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("runner.kind is kubernetes, but its cluster is not configured: %w (set runner.kubeconfig and runner.context in .chorus/config.json)", err)
	}
	ns := rc.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	in, err := dir.Instance()
	if err != nil {
		return nil, err
	}
	url, err := podRemote(cfg, dir.Root)
	if err != nil {
		return nil, err
	}
	r := &kube.Runner{Config: rest, Namespace: ns, Instance: in.ID, Image: rc.Image, Remote: url,
		Exe: rc.ChorusPath, WorkingDir: rc.WorkingDir,
		Orphan: time.Duration(cfg.Agents.HostOrphanSeconds) * time.Second}
	for _, k := range sortedKeys(rc.Env) {
		r.Env = append(r.Env, corev1.EnvVar{Name: k, Value: rc.Env[k]})
	}
	for _, k := range sortedKeys(rc.EnvFromSecrets) {
		secret, key, _ := strings.Cut(rc.EnvFromSecrets[k], "/")
		r.Env = append(r.Env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
	}
	for _, k := range sortedKeys(rc.Resources) {
		q, err := resource.ParseQuantity(rc.Resources[k])
		if err != nil {
			return nil, fmt.Errorf("runner.resources %q: %q is not a quantity such as 500m, 2 or 4Gi", k, rc.Resources[k])
		}
		kind, name, _ := strings.Cut(k, ".")
		list := &r.Resources.Requests
		if kind == "limits" {
			list = &r.Resources.Limits
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[corev1.ResourceName(name)] = q
	}
	return r, nil
}

// podRemote is the URL the pods reach merge.remote at: runner.remoteURL,
// else the URL the repository has for merge.remote, if a pod can use it.
func podRemote(cfg config.Config, root string) (string, error) {
	if u := cfg.Runner.RemoteURL; u != "" {
		return u, nil
	}
	name := cfg.Runner.PodRemote(cfg.Merge.Remote)
	if name == "" {
		return "", errors.New("runner.kind is kubernetes, but no git remote is set for the pods: they clone each task from one and push their work back there; set runner.remote (e.g. \"origin\")")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := gitx.Git(ctx, root, "remote", "get-url", name)
	if err != nil {
		return "", fmt.Errorf("runner.remote %q: %w (add it with `git remote add %s URL`)", name, err, name)
	}
	if !config.PodURL(u) {
		return "", fmt.Errorf("the pods' remote %q is %s, which they cannot reach: set runner.remoteURL to a URL they can (https://…, ssh://…, or file://… for a path every node mounts)", name, u)
	}
	return u, nil
}

// checkRunner is doctor's look at the cluster a Kubernetes runner uses:
// it answers, these credentials may do what the runner does, and the
// image's chorus is this one (version, the hub's --version).
func checkRunner(ctx context.Context, r *doctorReport, cfg config.Config, d chorusdir.Dir, version string) {
	rn, err := hostRunner(cfg, d)
	if err != nil {
		r.add("cluster", levelFail, "%s", oneLine(err))
		return
	}
	kr, ok := rn.(*kube.Runner)
	if !ok {
		return
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	allowed := true
	for _, f := range kr.Check(cctx) {
		level := levelOK
		if !f.OK {
			level, allowed = levelFail, false
		}
		r.add(f.Check, level, "%s", f.Detail)
	}
	if !allowed {
		return // the image check needs the cluster and that access
	}
	// A pull can take a while; a pod that never starts is reported.
	ictx, icancel := context.WithTimeout(ctx, 3*time.Minute)
	defer icancel()
	f := kr.CheckImage(ictx, version)
	level := levelOK
	if !f.OK {
		level = levelFail
	}
	r.add(f.Check, level, "%s", f.Detail)
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
