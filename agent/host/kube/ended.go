package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
)

var _ host.Ender = (*Runner)(nil)

// Ended says what became of the agent's pod once the exec stream to its
// host ended without the agent's exit: a pod that still runs means only
// the stream broke; a pod deleted, evicted, failed or on a lost node
// means the host is gone.
func (r *Runner) Ended(ctx context.Context, in host.Info) host.Ending {
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	api, err := r.api()
	if err != nil {
		return host.Ending{Why: "the exec stream to the agent's pod broke; the cluster cannot be asked why: " + err.Error()}
	}
	pods, err := api.listPods(ctx, r.Namespace, metav1.ListOptions{LabelSelector: r.Selector(in.Meta.AgentID)})
	if err != nil {
		return host.Ending{Why: fmt.Sprintf("the exec stream to the agent's pod broke; listing its pods in %s: %v", r.Namespace, err)}
	}
	return podsEnding(pods.Items)
}

// podsEnding judges an agent's pods (those of its Jobs, the latest
// deciding): pure, so each case is tested without a cluster.
func podsEnding(pods []corev1.Pod) host.Ending {
	var last *corev1.Pod
	for i := range pods {
		if last == nil || last.CreationTimestamp.Before(&pods[i].CreationTimestamp) {
			last = &pods[i]
		}
	}
	if last == nil {
		return host.Ending{Gone: true, Why: "the agent's pod is gone (deleted, evicted or its node lost)"}
	}
	p := last
	why := func(s string) string {
		if d := strings.TrimSpace(strings.TrimSpace(p.Status.Reason) + ": " + strings.TrimSpace(p.Status.Message)); d != ":" {
			s += " (" + strings.Trim(d, ": ") + ")"
		}
		return s
	}
	switch {
	case p.DeletionTimestamp != nil:
		return host.Ending{Gone: true, Why: why("the agent's pod " + p.Name + " was deleted")}
	case p.Status.Reason == "NodeLost" || p.Status.Phase == corev1.PodUnknown:
		return host.Ending{Gone: true, Why: why("the node of the agent's pod " + p.Name + " was lost")}
	case p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded:
		return host.Ending{Gone: true, Why: why(fmt.Sprintf("the agent's pod %s ended (%s)", p.Name, p.Status.Phase))}
	}
	return host.Ending{Why: "the exec stream to the agent's pod " + p.Name + " broke; the pod still runs"}
}
