package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsEnding(t *testing.T) {
	at := func(s int) metav1.Time { return metav1.NewTime(time.Unix(int64(s), 0)) }
	now := at(100)
	pod := func(name string, created int, phase corev1.PodPhase, reason, msg string, deleted bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: at(created)},
			Status: corev1.PodStatus{Phase: phase, Reason: reason, Message: msg}}
		if deleted {
			p.DeletionTimestamp = &now
		}
		return p
	}
	cases := []struct {
		name string
		pods []corev1.Pod
		gone bool
		why  string
	}{
		{"no pod left: gone", nil, true, "pod is gone"},
		{"being deleted", []corev1.Pod{pod("a", 1, corev1.PodRunning, "", "", true)}, true, "pod a was deleted"},
		{"evicted", []corev1.Pod{pod("a", 1, corev1.PodFailed, "Evicted", "The node was low on resource: memory.", false)},
			true, "pod a ended (Failed) (Evicted: The node was low on resource: memory.)"},
		{"node lost", []corev1.Pod{pod("a", 1, corev1.PodUnknown, "NodeLost", "", false)}, true, "node of the agent's pod a was lost (NodeLost)"},
		{"still running: only the stream broke", []corev1.Pod{pod("a", 1, corev1.PodRunning, "", "", false)}, false, "pod a broke; the pod still runs"},
		{"the latest pod decides", []corev1.Pod{pod("new", 5, corev1.PodRunning, "", "", false), pod("old", 1, corev1.PodFailed, "", "", false)},
			false, "pod new broke"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := podsEnding(c.pods)
			if e.Gone != c.gone || !strings.Contains(e.Why, c.why) {
				t.Fatalf("got %+v; want gone=%v and %q", e, c.gone, c.why)
			}
		})
	}
}
