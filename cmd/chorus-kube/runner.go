//go:build unix

package main

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
)

// newRunner builds the runner cfg describes: the cluster from the
// kubeconfig, the namespace from it when cfg names none; server is the
// API server's URL.
func newRunner(cfg kubeproc.Config) (r *kube.Runner, server string, err error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rest, err := cc.ClientConfig()
	if err != nil {
		return nil, "", fmt.Errorf("runner.kind is kubernetes, but its cluster is not configured: %w (set runner.kubeconfig and runner.context in .chorus/config.json)", err)
	}
	ns := cfg.Namespace
	if ns == "" {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	r = &kube.Runner{Config: rest, Namespace: ns, Instance: cfg.Instance, Image: cfg.Image, Remote: cfg.Remote,
		Exe: cfg.Exe, WorkingDir: cfg.WorkingDir, Orphan: cfg.Orphan, Grace: cfg.Grace, Binary: cfg.Binary}
	for _, k := range sortedKeys(cfg.Env) {
		r.Env = append(r.Env, corev1.EnvVar{Name: k, Value: cfg.Env[k]})
	}
	for _, k := range sortedKeys(cfg.EnvFromSecrets) {
		secret, key, _ := strings.Cut(cfg.EnvFromSecrets[k], "/")
		r.Env = append(r.Env, corev1.EnvVar{Name: k, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}})
	}
	for _, k := range sortedKeys(cfg.Resources) {
		q, err := resource.ParseQuantity(cfg.Resources[k])
		if err != nil {
			return nil, "", fmt.Errorf("runner.resources %q: %q is not a quantity such as 500m, 2 or 4Gi", k, cfg.Resources[k])
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
	return r, rest.Host, nil
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
