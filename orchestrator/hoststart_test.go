package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// Agent hosts start as chorus-agent-host when it is installed beside the
// chorus executable from the same build, and as `chorus agent-host` when
// it is missing or of another build. The agent, started in its host by a
// running engine, records its host's command line, which lands on main.
func TestAgentHostCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the agent reads its host's command line from /proc")
	}
	full := testkit.Chorus(t)
	// Only the chorus executable, linked into a folder of its own.
	alone := func(t *testing.T) string {
		exe := filepath.Join(t.TempDir(), "chorus")
		if err := os.Symlink(full, exe); err != nil {
			t.Fatal(err)
		}
		return exe
	}
	for _, c := range []struct {
		name string
		exe  func(t *testing.T) string
		want []string
	}{
		{"beside", func(*testing.T) string { return full }, []string{filepath.Join(filepath.Dir(full), "chorus-agent-host"), "--socket"}},
		{"missing", alone, []string{"", "agent-host", "--socket"}},
		{"another build", func(t *testing.T) string {
			exe := alone(t)
			// Not a build of this source at all: used, no host would start.
			if err := os.WriteFile(filepath.Join(filepath.Dir(exe), "chorus-agent-host"), []byte("#!/bin/sh\nexit 3\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			return exe
		}, []string{"", "agent-host", "--socket"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			// $PPID is the agent; the fourth field of its stat, its parent:
			// the host.
			script := "run \"h=$(cut -d' ' -f4 /proc/$PPID/stat); cat /proc/$h/cmdline >host.txt\"\ncommit \"feat: the host\"\nsignal COMPLETE\n"
			h := newHarness(t, script, func(c *config.Config) { c.Agents.Host = true })
			h.exe = c.exe(t)
			id := h.task("where does it run", beads.CreateOptions{})
			h.start()
			h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
			h.waitFor(kind(EvCompleted, id))
			h.waitIdle()
			argv := strings.Split(git(t, h.root, "show", "main:host.txt"), "\x00")
			want := c.want
			if want[0] == "" {
				want = append([]string{h.exe}, want[1:]...)
			}
			if len(argv) < len(want) {
				t.Fatalf("the host ran as %q, want %q…", argv, want)
			}
			for i, w := range want {
				if argv[i] != w {
					t.Fatalf("the host ran as %q, want %q…", argv, want)
				}
			}
		})
	}
}
