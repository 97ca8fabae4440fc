package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

func TestDiskFullText(t *testing.T) {
	for _, tc := range []struct {
		text string
		want bool
	}{
		{"write /x/state.json: no space left on device", true},
		{"bash: echo: write error: No space left on device", true},
		{"Error: ENOSPC: no space left on device, write", true},
		{"cp: error writing 'a': Disk quota exceeded", true},
		{"exit status 1", false},
		{"fatal: not a git repository", false},
	} {
		if got := DiskFull(tc.text); got != tc.want {
			t.Errorf("DiskFull(%q) = %v", tc.text, got)
		}
	}
	if got := DiskFullText("/data", 3<<20, true); got != "disk full: free space on /data (3.0 MiB free), then resume" {
		t.Error(got)
	}
	if got := DiskFullText("/data", 0, false); got != "disk full: free space on /data, then resume" {
		t.Error(got)
	}
}

// A worktree setup that runs out of space (a real ENOSPC: writing to
// /dev/full) pauses autopilot once, naming the file system to free; no
// task is failed or counted against. Freed and resumed, every task runs.
func TestDiskFullPausesOnce(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	flag := filepath.Join(t.TempDir(), "full")
	os.WriteFile(flag, nil, 0o644)
	script := `
run "echo done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.Worktree.Setup = []string{"if [ -e '" + flag + "' ]; then head -c 1 /dev/zero > /dev/full; fi"}
	})
	ids := []string{h.task("a", beads.CreateOptions{Priority: 1}), h.task("b", beads.CreateOptions{Priority: 1}), h.task("c", beads.CreateOptions{Priority: 2})}
	h.start()
	ev := h.waitFor(func(ev Event) bool { return ev.Kind == EvPaused })
	mount, _, _ := mountOf(h.root)
	if !strings.HasPrefix(ev.Text, "disk full: free space on "+mount+" (") || !strings.HasSuffix(ev.Text, "then resume") ||
		ev.Fields["diskFull"] != mount || !DiskFull(ev.Fields["cause"].(string)) {
		t.Fatalf("pause: %s %v", ev.Text, ev.Fields)
	}
	h.waitIdle()
	if !h.eng.Snapshot().State.Paused {
		t.Fatal("not paused")
	}
	for _, id := range ids {
		if tk := h.get(id); tk.Status != beads.StatusOpen {
			t.Fatalf("%s: %s", id, tk.Status)
		}
	}
	os.Remove(flag)
	h.do(Command{Kind: CmdResume})
	for range ids {
		h.waitFor(kind(EvCompleted, ""))
	}
	h.waitIdle()
	paused, failed := 0, 0
	for _, e := range h.events.Log {
		switch e.Kind {
		case EvPaused:
			paused++
		case EvFailed, EvHeld:
			failed++
		}
	}
	if paused != 1 || failed != 0 {
		t.Fatalf("paused %d times, %d failures or holds", paused, failed)
	}
}
