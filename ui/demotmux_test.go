package ui

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The full-screen demo in a real terminal tells its story in words: the
// conflict being resolved, the failed check and its retry (each on its
// task's row), and the end counts both; q then quits at once (nothing
// runs) and the exit hint names this binary.
func TestDemoInTmux(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo in tmux")
	}
	x := newTmux(t, "chorus-demo-test")
	t.Cleanup(func() { exec.Command(x.bin, "-L", x.sock, "kill-server").Run() })
	dir := filepath.Join(t.TempDir(), "demo")
	x.cmd("new-session", "-d", "-x", "160", "-y", "45", "-e", "PATH="+os.Getenv("PATH"),
		fmt.Sprintf("%s demo --pace 2s --dir %s; echo chorus-exited-$?; sleep 600", testkit.Chorus(t), dir))
	// The retry comes before the conflict: watch for every sign at once.
	want := []string{
		"● resolving the conflict in greet.sh",       // the resolver's task row
		"DEMO resolving the conflict in greet.sh (",  // its tile
		"● retry: tests failed: FAIL tests/test_bye", // the retried task's row
	}
	// The footer's "check tests failed, retrying: <line>" is a message the
	// next alert replaces, so a loaded machine's slow polls can miss it;
	// TestStoryGolden checks it on a drawn screen.
	seen := map[string]bool{}
	for len(seen) < len(want) {
		var out string
		for _, w := range want {
			if !seen[w] {
				out = x.waitScreenAny(want, seen)
				break
			}
		}
		for _, w := range want {
			if strings.Contains(out, w) {
				seen[w] = true
			}
		}
	}
	out := x.waitScreen("Autopilot is done")
	if !strings.Contains(out, "Autopilot is done: 8 closed, 8 merged, 1 conflict resolved, 1 check retried — q quits") {
		t.Fatalf("end of the demo:\n%s", out)
	}
	x.cmd("send-keys", "q")
	out = x.waitScreen("chorus-exited-0")
	if !strings.Contains(out, " -C "+dir+" task list") {
		t.Fatalf("after the demo:\n%s", out)
	}
}

// waitScreenAny waits until the pane shows one of want not yet seen.
func (x *tmuxServer) waitScreenAny(want []string, seen map[string]bool) string {
	x.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		out := x.cmd("capture-pane", "-p")
		for _, w := range want {
			if !seen[w] && strings.Contains(out, w) {
				return out
			}
		}
		if time.Now().After(deadline) {
			x.t.Fatalf("the pane never showed any of %q (seen %v):\n%s", want, seen, out)
		}
		x.cmd("wait-for", "-S", "nothing") // a round trip to the tmux server, not a sleep
	}
}
