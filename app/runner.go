package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// hostRunner is the runner `runner` in the config names: nil for local
// (then agents.host decides whether agents run in hosts), a Kubernetes
// runner for "kubernetes", which runs chorus-kube (so chorus links no
// Kubernetes client); it reads the kubeconfig now, so a cluster that is
// not configured is said before any agent starts.
func hostRunner(cfg config.Config, dir chorusdir.Dir) (host.Runner, error) {
	rc := cfg.Runner
	if rc.Kind != config.RunnerKubernetes {
		return nil, nil
	}
	in, err := dir.Instance()
	if err != nil {
		return nil, err
	}
	url, err := podRemote(cfg, dir.Root)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return kubeproc.New(ctx, "", kubeproc.Config{Kubeconfig: rc.Kubeconfig, Context: rc.Context, Namespace: rc.Namespace,
		Instance: in.ID, Image: rc.Image, Exe: rc.ChorusPath, WorkingDir: rc.WorkingDir, Remote: url,
		Env: rc.Env, EnvFromSecrets: rc.EnvFromSecrets, Resources: rc.Resources,
		Orphan: time.Duration(cfg.Agents.HostOrphanSeconds) * time.Second})
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
	kr, ok := rn.(*kubeproc.Runner)
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
