package kube_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/host/kube"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/kubetest"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// farAgent is an agent (a shell) that writes down what it was given: the
// file its prompt points to when the prompt is too long for argv, the
// chorus that prompt tells it to signal with, and the paths its
// environment names. It commits that and signals COMPLETE with that
// chorus, as the prompt says.
const farAgent = `f=none
for w in $1; do case "$w" in /*.prompt.md.) f=${w%.};; esac; done
id=$CHORUS_TASK_ID
signal=$(sed -n 's/.*Run .\([^ ]*\) signal COMPLETE.*/\1/p' "$f" 2>/dev/null | head -n 1)
{
  echo "file=$f"
  echo "marker=$(grep -c END-OF-THE-LONG-PROMPT "$f" 2>/dev/null)"
  echo "signal=$signal"
  echo "BEADS_DIR=${BEADS_DIR-unset}"
  echo "CHORUS_EXE=$CHORUS_EXE"
  echo "CHORUS_DIR=$CHORUS_DIR"
  echo "PATH=$PATH"
} > env-$id.txt
echo done > out-$id.txt
git add -A && git commit -q -m "feat: what the agent was given" && "$signal" signal COMPLETE
`

// An agent in a pod gets what it needs where it runs: a prompt over the
// command line's limit, which the engine writes to a file on the hub,
// comes to the pod in the host's spec and the argv points to the copy
// in the pod's own directory; the chorus the prompt says to run, and
// CHORUS_EXE and PATH, are the pod's (its image's chorus is at another
// path than the hub's); the hub's task store (BEADS_DIR) is not named.
func TestLongPromptAndEnvironmentInThePod(t *testing.T) {
	c := kubetest.Start(t, testkit.Root())
	long := strings.Repeat("Keep every line of this description in mind while you work.\n", 1700) + "END-OF-THE-LONG-PROMPT\n"
	podChorus := filepath.Join(t.TempDir(), "image", "chorus")
	if err := os.MkdirAll(filepath.Dir(podChorus), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := copyFile(testkit.Chorus(t), podChorus); err != nil {
		t.Fatal(err)
	}
	k := startKubeEngine(t, c, "", 1, 1, func(cfg *config.Config, o *beads.CreateOptions, r *kube.Runner) {
		cfg.Agents.Available["script"] = config.AgentProfile{Command: "/bin/sh", Args: []string{"-c", farAgent, "sh"}, Prompt: config.PromptArg}
		o.Description = long
		r.Exe = podChorus
	})
	id := k.ids[0]
	done := k.events.Wait(func(e orchestrator.Event) bool {
		return (e.Kind == orchestrator.EvCompleted || e.Kind == orchestrator.EvFailed) && e.Task == id
	})
	if done.Kind != orchestrator.EvCompleted {
		t.Fatalf("the task did not complete: %+v", done)
	}
	k.waitIdle(t)
	hubFile := filepath.Join(k.root, ".chorus", "logs", "script-"+id+".prompt.md")
	if b, err := os.ReadFile(hubFile); err != nil || len(b) <= 96<<10 {
		t.Fatalf("the hub's prompt file %s: %d bytes, %v: want the prompt over 96 KiB written there", hubFile, len(b), err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(testkit.Git(t, k.root, "show", "main:env-"+id+".txt"), "\n") {
		key, v, _ := strings.Cut(l, "=")
		got[key] = v
	}
	t.Logf("the agent in its pod was given: file=%s marker=%s signal=%s BEADS_DIR=%s CHORUS_EXE=%s PATH=%.80s…", got["file"], got["marker"], got["signal"], got["BEADS_DIR"], got["CHORUS_EXE"], got["PATH"])
	if f := got["file"]; !strings.HasPrefix(f, c.PodRoot()) || strings.HasPrefix(f, k.root) {
		t.Errorf("the agent's prompt pointed to %q: want a file in its pod's directory under %s", f, c.PodRoot())
	}
	if got["marker"] != "1" {
		t.Errorf("the prompt file in the pod holds the prompt's end %q times, want 1", got["marker"])
	}
	if got["BEADS_DIR"] != "unset" {
		t.Errorf("BEADS_DIR=%q in the pod: the hub's task store is not there", got["BEADS_DIR"])
	}
	if got["signal"] != podChorus {
		t.Errorf("the prompt in the pod says to run %q: want the pod's chorus %s", got["signal"], podChorus)
	}
	if exe := got["CHORUS_EXE"]; exe != podChorus || !strings.HasPrefix(got["PATH"], filepath.Dir(podChorus)+":") {
		t.Errorf("CHORUS_EXE=%q, PATH=%q: want the pod's chorus %s, first on the pod's PATH", exe, got["PATH"], podChorus)
	}
	for _, p := range filepath.SplitList(got["PATH"]) {
		if strings.HasPrefix(p, k.root) {
			t.Errorf("PATH in the pod names the hub's %s", p)
		}
	}
	if d := got["CHORUS_DIR"]; !strings.HasPrefix(d, c.PodRoot()) {
		t.Errorf("CHORUS_DIR=%q: want the pod's", d)
	}
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o755)
}
