package orchestrator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// A local agent host killed with SIGKILL mid-task (the OOM killer, a
// person's kill -9) is a lost host, as a deleted pod is: its agent, left
// without its terminal, is ended too, and the task runs again from its
// worktree without spending an iteration.
func TestLocalHostKilledCostsNoIteration(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "go-on")
	h := newHarness(t, fmt.Sprintf(`
run "echo part >> part.txt"
commit "feat: part"
signal PROGRESS 50
run "while [ ! -f %s ]; do sleep 0.1; done"
run "echo done > out.txt"
commit "feat: work"
signal COMPLETE
`, flag), func(c *config.Config) { c.Agents.Host, c.Mode = true, config.ModeAutopilot })
	h.task("one", beads.CreateOptions{})
	h.start()
	first := h.waitFor(func(e Event) bool { return e.Kind == EvStarted })
	h.waitFor(func(e Event) bool { return e.Kind == EvSignal && e.Fields["type"] == "PROGRESS" })
	metas, _ := filepath.Glob(filepath.Join(h.dir.Path, "hosts", "*.json"))
	if len(metas) != 1 {
		t.Fatalf("host metadata files: %v", metas)
	}
	b, err := os.ReadFile(metas[0])
	var m host.Meta
	if err != nil || json.Unmarshal(b, &m) != nil || m.HostPID <= 0 {
		t.Fatalf("host metadata: %s, %v", b, err)
	}
	if err := syscall.Kill(m.HostPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	exit := h.waitFor(func(e Event) bool { return e.Kind == EvAgentExit || e.Kind == EvFailed })
	if exit.Fields["hostLost"] != true || !strings.Contains(exit.Text, "killed?") {
		t.Fatalf("the agent's end after its host was killed: %+v", exit)
	}
	if pid, ok := first.Fields["pid"].(int); !ok || !testkit.WaitExit(t, pid, 30*time.Second) {
		t.Fatalf("the first agent (%v) outlived its host", first.Fields["pid"])
	}
	again := h.waitFor(func(e Event) bool { return (e.Kind == EvStarted && e.Time.After(exit.Time)) || e.Kind == EvFailed })
	if again.Kind != EvStarted || again.Fields["iteration"] != 1 {
		t.Fatalf("after the host was killed: %+v; want a start in iteration 1", again)
	}
	if err := os.WriteFile(flag, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	done := h.waitFor(func(e Event) bool { return e.Kind == EvCompleted || e.Kind == EvFailed })
	if done.Kind != EvCompleted || done.Fields["iterations"] != 1 {
		t.Fatalf("the task: %+v; want completed in 1 iteration", done)
	}
	h.waitIdle()
	if got := testkit.Git(t, h.root, "show", "main:part.txt"); got != "part\npart" {
		t.Errorf("main:part.txt = %q; want the first run's line kept and the second's", got)
	}
}
