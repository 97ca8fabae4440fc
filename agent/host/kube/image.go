package kube

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	watchtools "k8s.io/client-go/tools/watch"
)

// CheckImage runs `chorus --version` from the configured image in a
// short Job and compares it with want, the hub's `chorus --version`: an
// image whose chorus differs, is missing, or cannot be pulled is named
// with what to do. The Job is deleted afterwards.
func (r *Runner) CheckImage(ctx context.Context, want string) Finding {
	const check = "agent image"
	api, err := r.api()
	if err != nil {
		return Finding{Check: check, Detail: err.Error()}
	}
	labels := map[string]string{LabelInstance: hash(r.Instance, 16), "chorus.dev/doctor": "image"}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "chorus-doctor-", Labels: labels},
		Spec: batchv1.JobSpec{
			BackoffLimit:            new(int32(0)),
			ActiveDeadlineSeconds:   new(int64(300)),
			TTLSecondsAfterFinished: new(int32(300)),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{Name: container, Image: r.Image, WorkingDir: r.WorkingDir,
						Command: []string{r.exe(), "--version"}, Env: r.Env}},
				},
			},
		},
	}
	created, err := api.createJob(ctx, r.Namespace, job)
	if err != nil {
		return Finding{Check: check, Detail: fmt.Sprintf("creating a Job to run `%s --version` in image %s: %v", r.exe(), r.Image, err)}
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_ = r.deleteJob(dctx, created.Name)
		cancel()
	}()
	sel := labelUID + "=" + string(created.UID)
	lw := podWatch(api, r.Namespace, sel)
	var last *corev1.Pod
	_, err = watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		p, ok := ev.Object.(*corev1.Pod)
		if !ok || ev.Type == watch.Deleted {
			return false, nil
		}
		last = p
		_, done := imageVerdict(r.Image, r.exe(), p, "", want)
		return done, nil
	})
	if err != nil && last == nil {
		return Finding{Check: check, Detail: fmt.Sprintf("no pod of image %s ran `%s --version` (%v); look at `kubectl -n %s describe job %s`", r.Image, r.exe(), err, r.Namespace, created.Name)}
	}
	out := ""
	if last.Status.Phase == corev1.PodSucceeded || last.Status.Phase == corev1.PodFailed {
		b, lerr := api.core.Get().Namespace(r.Namespace).Resource("pods").Name(last.Name).SubResource("log").
			Param("container", container).DoRaw(ctx)
		if lerr != nil && last.Status.Phase == corev1.PodSucceeded {
			return Finding{Check: check, Detail: fmt.Sprintf("reading the output of `%s --version` in image %s: %v (the credentials need get on pods/log)", r.exe(), r.Image, lerr)}
		}
		if lerr == nil {
			out = string(b)
		}
	}
	f, done := imageVerdict(r.Image, r.exe(), last, out, want)
	if !done {
		f.Detail = fmt.Sprintf("the pod of image %s did not finish `%s --version` in time (%s); look at `kubectl -n %s describe pod %s`", r.Image, r.exe(), last.Status.Phase, r.Namespace, last.Name)
	}
	return f
}

// imageVerdict judges the pod that runs `exe --version` from image: done
// once it ended or cannot start (an image that cannot be pulled); out is
// its output once it ended. Pure, so every case is tested.
func imageVerdict(image, exe string, p *corev1.Pod, out, want string) (Finding, bool) {
	const check = "agent image"
	for _, cs := range p.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil {
			switch w.Reason {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return Finding{Check: check, Detail: fmt.Sprintf("the cluster cannot pull image %s (%s: %s): check runner.image, that the image is pushed, and the namespace's imagePullSecrets",
					image, w.Reason, strings.TrimSpace(w.Message))}, true
			}
		}
	}
	got := strings.TrimSpace(out)
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		if got == strings.TrimSpace(want) {
			return Finding{Check: check, OK: true, Detail: fmt.Sprintf("image %s has %s, as this hub", image, got)}, true
		}
		return Finding{Check: check, Detail: fmt.Sprintf("image %s has %q but this hub is %q: build the image with this chorus (or run the hub of the image's version): another chorus may speak another host protocol",
			image, oneLine(got), strings.TrimSpace(want))}, true
	case corev1.PodFailed:
		why := strings.TrimSpace(p.Status.Reason + " " + p.Status.Message)
		for _, cs := range p.Status.ContainerStatuses {
			if t := cs.State.Terminated; t != nil {
				why = strings.TrimSpace(fmt.Sprintf("%s exit code %d %s", why, t.ExitCode, t.Message))
			}
		}
		return Finding{Check: check, Detail: fmt.Sprintf("`%s --version` failed in image %s (%s) %s: put chorus in the image, or set runner.chorusPath to where it is",
			exe, image, why, oneLine(got))}, true
	}
	return Finding{Check: check}, false
}

func oneLine(s string) string {
	s = strings.TrimSpace(strings.ReplaceAll(s, "\n", " "))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
