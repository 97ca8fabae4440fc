package kube

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestImageVerdict(t *testing.T) {
	pod := func(phase corev1.PodPhase, st corev1.ContainerState) *corev1.Pod {
		return &corev1.Pod{Status: corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{State: st}}}}
	}
	cases := []struct {
		name   string
		p      *corev1.Pod
		out    string
		ok     bool
		done   bool
		detail string
	}{
		{"same version", pod(corev1.PodSucceeded, corev1.ContainerState{}), "chorus v1.2.0\n", true, true, "has chorus v1.2.0, as this hub"},
		{"another version", pod(corev1.PodSucceeded, corev1.ContainerState{}), "chorus v1.1.0\n", false, true, `has "chorus v1.1.0" but this hub is "chorus v1.2.0": build the image`},
		{"cannot pull", pod(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "not found"}}),
			"", false, true, "cannot pull image img:1 (ImagePullBackOff: not found): check runner.image"},
		{"no chorus in the image", pod(corev1.PodFailed, corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 127}}),
			"exec: chorus: not found", false, true, "exit code 127) exec: chorus: not found: put chorus in the image, or set runner.chorusPath"},
		{"still starting", pod(corev1.PodPending, corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}), "", false, false, ""},
		{"running", pod(corev1.PodRunning, corev1.ContainerState{}), "", false, false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, done := imageVerdict("img:1", "chorus", c.p, c.out, "chorus v1.2.0")
			if f.OK != c.ok || done != c.done || !strings.Contains(f.Detail, c.detail) {
				t.Fatalf("got %+v done=%v; want ok=%v done=%v and %q", f, done, c.ok, c.done, c.detail)
			}
		})
	}
}
