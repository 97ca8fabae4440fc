package orchestrator

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Plan Agent runs in the repository root, creates tasks with the
// chorus CLI, and reports each turn's end; typed text starts its next turn,
// in a new process once it exited, into the live one while it runs.
func TestPlanRun(t *testing.T) {
	script := `
@ prompt~FIX
run "chorus task create 'Add b' --acceptance 'b returns 1' >/dev/null"
tag COMPLETE
wait-input
run "chorus task create 'Add c' --acceptance 'c returns 1' >/dev/null"
signal COMPLETE
hang
@ *
run "test -d .chorus && chorus task create 'Add a' --acceptance 'a returns 1' >/dev/null"
signal COMPLETE
exit 0
`
	h := newHarness(t, script, nil)
	h.start()
	id, err := h.eng.StartPlan(context.Background(), PlanOptions{Prompt: "Plan: build the thing"})
	if err != nil {
		t.Fatal(err)
	}
	if id != "plan-script" {
		t.Fatalf("id %q", id)
	}
	turn := func() Event {
		t.Helper()
		ev := h.waitFor(func(e Event) bool { return e.Kind == EvPlanTurn && e.Agent == id })
		h.events.Log = nil // the next turn's event, not this one again
		return ev
	}
	if ev := turn(); ev.Fields["complete"] != true {
		log, _ := os.ReadFile(filepath.Join(h.dir.Logs(), id+".log"))
		t.Fatalf("first turn: %+v\n%s\n%s", ev, h.report(), log)
	}
	titles := func() string {
		ts, err := h.store.List(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tk := range ts {
			out = append(out, tk.Title)
		}
		return strings.Join(out, ",")
	}
	if got := titles(); got != "Add a" {
		t.Fatalf("tasks after the first turn: %q", got)
	}
	if h.eng.Snapshot().Agents[id] == nil {
		t.Fatal("the Plan Agent left the snapshot after its turn")
	}
	h.do(Command{Kind: CmdType, AgentID: id, Text: "FIX the tasks"})
	if ev := turn(); ev.Fields["complete"] != true || titles() != "Add a,Add b" {
		t.Fatalf("second turn: %+v %q", ev, titles())
	}
	h.do(Command{Kind: CmdType, AgentID: id, Text: "one more"})
	if ev := turn(); ev.Fields["complete"] != true || titles() != "Add a,Add b,Add c" {
		t.Fatalf("typed turn: %+v %q", ev, titles())
	}
	h.do(Command{Kind: CmdStop, AgentID: id})
	h.waitFor(func(e Event) bool { return e.Kind == EvFinished && e.Agent == id })
	h.sync()
	if s := h.eng.Snapshot(); len(s.Agents) != 0 || s.Tasks[planTaskID] != nil {
		t.Fatalf("after stop: %+v", s.State)
	}
	// Its checkout goes with it; the root is the user's, untouched.
	if _, err := os.Stat(filepath.Join(h.root, ".worktrees", id)); !os.IsNotExist(err) {
		t.Fatalf("the Plan Agent's checkout is still there: %v", err)
	}
	if err := h.eng.Do(context.Background(), Command{Kind: CmdType, AgentID: id, Text: "x"}); err == nil {
		t.Fatal("typing into a stopped Plan Agent accepted")
	}
}
