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

// The medium conflict tier through the engine: task b's agent makes the
// change task a made, then builds on it. Once a has landed, b's merge
// conflicts (both add shared.txt), but b rebases cleanly onto main, so it
// lands with no resolver agent (agentResolve is off) and no person.
func TestMediumTierRebasesConflict(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) {
		c.Agents.MaxParallel = 2
		c.Merge.AgentResolve = false
	})
	a := h.task("medium a", beads.CreateOptions{})
	b := h.task("medium b", beads.CreateOptions{})
	script := fmt.Sprintf(`
@ task=%s
write shared.txt "foo"
commit "a: shared"
signal COMPLETE
hang
@ task=%s
write shared.txt "foo"
commit "b: shared, as a"
run "until git -C $CHORUS_DIR/.. cat-file -e main:shared.txt 2>/dev/null; do sleep 0.05; done"
write shared.txt "bar"
commit "b: on top"
signal COMPLETE
hang
`, a, b)
	if err := os.WriteFile(filepath.Join(h.root, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: a})
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: b})
	h.waitIdle()
	if got := git(t, h.root, "show", "main:shared.txt"); got != "bar" {
		t.Fatalf("main:shared.txt = %q\n%s", got, h.report())
	}
	for _, it := range h.eng.Snapshot().MergeQueue {
		if it.TaskID == b && (it.Status != "landed" || it.Human) {
			t.Fatalf("%s: %s (human %v): %s\n%s", b, it.Status, it.Human, it.LastError, h.report())
		}
	}
	if got := git(t, h.root, "log", "--format=%s", "main"); !strings.Contains(got, "b: on top") || !strings.Contains(got, "b: shared, as a") {
		t.Fatalf("b's commits are not on main:\n%s", got)
	}
}

// A conflict that reached a person is queued again once the person moves
// main outside Chorus and accepts the new tip: here the new tip drops the
// file the two tasks both added, so the waiting task lands on it.
func TestAcceptTargetRequeuesConflict(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) {
		c.Agents.MaxParallel = 2
		c.Merge.AgentResolve = false
	})
	a := h.task("accept a", beads.CreateOptions{})
	b := h.task("accept b", beads.CreateOptions{})
	script := fmt.Sprintf(`
@ task=%s
write shared.txt "from a"
commit "a"
signal COMPLETE
hang
@ task=%s
run "until git -C $CHORUS_DIR/.. cat-file -e main:shared.txt 2>/dev/null; do sleep 0.05; done"
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
	h.waitFor(func(ev Event) bool { return ev.Kind == "merge_waiting_human" && ev.Task == b })
	// The person takes a's file off main by hand.
	git(t, h.root, "rm", "-q", "shared.txt")
	git(t, h.root, "commit", "-q", "-m", "drop shared.txt")
	h.waitFor(func(ev Event) bool { return ev.Kind == "merge_target_moved" })
	if err := h.eng.Do(context.Background(), Command{Kind: CmdMergeAcceptTarget}); err != nil {
		t.Fatal(err)
	}
	h.waitFor(func(ev Event) bool { return ev.Kind == "merge_landed" && ev.Task == b })
	if got := git(t, h.root, "show", "main:shared.txt"); got != "from b" {
		t.Fatalf("main:shared.txt = %q\n%s", got, h.report())
	}
}
