package e2e

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/agent/host/kubeproc"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/modelserver"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Interactive Claude Code runs in an agent host in a Job's pod on a real
// API server, reached through exec, in a clone of the task's branch from
// the remote in the pod's own directory; it commits and runs `chorus
// signal COMPLETE`, which reaches the engine over the host's stream; the
// pod pushes the work and the task lands as it does locally.
func TestClaudeInAPodCompletes(t *testing.T) {
	h := newHarness(t, func(c *config.Config) {
		c.QualityCommands = quality
		c.Runner.Remote = "origin"
		// Each pod's clone is a new folder nobody can answer Claude
		// Code's trust question for: the profile has them trusted.
		p := c.Agents.Available["claude"]
		p.TrustWorktrees = true
		c.Agents.Available["claude"] = p
	})
	c := kubetest.Start(t, testkit.Root())
	bare := filepath.Join(t.TempDir(), "remote.git")
	git(t, h.root, "init", "-q", "--bare", bare)
	git(t, bare, "config", "uploadpack.allowFilter", "true")
	git(t, h.root, "remote", "add", "origin", "file://"+bare)
	// Through chorus-kube, as the chorus binary runs it.
	kr, err := kubeproc.New(context.Background(), testkit.ChorusKube(t), kubeproc.Config{Kubeconfig: c.Kubeconfig,
		Namespace: "default", Instance: h.dir.Path, Image: "unused", Exe: chorusBin, Grace: 2 * time.Second,
		Binary: "test", Remote: "file://" + bare})
	if err != nil {
		t.Fatal(err)
	}
	kr.Timeline = func(agent, step string) { t.Logf("%s: %s", agent, step) }
	h.runner = kr
	id := h.task("say hello", beads.CreateOptions{})
	h.srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id) + " && chorus signal COMPLETE")}},
		{Text: "Committed hello.txt and signalled completion."},
	}})
	h.start()
	start := time.Now()
	h.assign(id, "claude")
	h.waitFor(kind(orchestrator.EvStarted, id))
	t.Logf("assign to agent started: %v", time.Since(start).Round(time.Millisecond))
	sig := h.waitFor(kind(orchestrator.EvSignal, id))
	if sig.Fields["source"] != "signal" || sig.Fields["type"] != "COMPLETE" {
		t.Fatalf("signal %+v; want COMPLETE from `chorus signal`\n%s", sig, h.report())
	}
	t.Logf("assign to COMPLETE: %v", time.Since(start).Round(time.Millisecond))
	h.waitFor(kind(orchestrator.EvCompleted, id))
	h.waitIdle()
	t.Logf("assign to landed: %v", time.Since(start).Round(time.Millisecond))
	if got := git(t, h.root, "show", "main:hello.txt"); got != "hello" {
		t.Fatalf("main:hello.txt = %q", got)
	}
	jobs, err := c.Client.BatchV1().Jobs("default").List(context.Background(), metav1.ListOptions{LabelSelector: kube.LabelTask + "=" + id})
	if err != nil || len(jobs.Items) != 1 {
		t.Fatalf("the task's Jobs: %v, %v; want the one its agent ran in", jobs, err)
	}
	// The work reached main only through the branch the pod pushed; once
	// landed, the engine drops that branch and its WIP ref from the
	// remote, off its loop: by the time it has stopped they are gone.
	h.stop()
	branch := "agent/claude/" + id
	if refs := git(t, bare, "for-each-ref", "--format=%(refname)", "refs/heads/"+branch, host.WIPRef(branch)); refs != "" {
		t.Fatalf("the landed task's refs left on the remote: %s", refs)
	}
}
