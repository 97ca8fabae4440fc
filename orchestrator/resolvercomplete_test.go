package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

// A conflict resolver that says COMPLETE instead of RESOLVED is told so
// while its merge is unfinished, and taken as RESOLVED once its merge is
// concluded and clean: the task lands without waiting out the resolver's
// time limit.
func TestResolverSayingComplete(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) {
		c.Agents.MaxParallel = 2
		c.Merge.AgentResolve = true
	})
	a := h.task("conflict a", beads.CreateOptions{})
	b := h.task("conflict b", beads.CreateOptions{})
	script := fmt.Sprintf(`
@ prompt~Resolution
signal COMPLETE
wait-input
write shared.txt "from a and b"
commit "merge: keep both"
signal COMPLETE
hang
@ task=%s
write shared.txt "from a"
commit "a"
run "while [ ! -f $CHORUS_DIR/b-started ]; do sleep 0.05; done"
signal COMPLETE
hang
@ task=%s
run "touch $CHORUS_DIR/b-started"
write shared.txt "from b"
commit "b"
signal COMPLETE
hang
`, a, b)
	if err := os.WriteFile(filepath.Join(h.root, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: a})
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: b})
	told := h.waitFor(func(ev Event) bool { return ev.Kind == EvAlert && ev.Fields["told"] != nil })
	if !strings.Contains(told.Text, "not concluded") && !strings.Contains(told.Text, "unmerged") {
		t.Fatalf("told without the reason: %s", told.Text)
	}
	taken := h.waitFor(func(ev Event) bool {
		return ev.Kind == EvAlert && ev.Fields["resolverComplete"] == true && strings.Contains(ev.Text, "taken as RESOLVED")
	})
	if taken.Agent != told.Agent {
		t.Fatalf("told %s, taken from %s", told.Agent, taken.Agent)
	}
	h.waitIdle()
	if got := git(t, h.root, "show", "main:shared.txt"); got != "from a and b" {
		t.Fatalf("main:shared.txt = %q\n%s", got, h.report())
	}
}
