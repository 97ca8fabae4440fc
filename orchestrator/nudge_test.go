package orchestrator

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// A headless run whose final message ends on a tag in backticks (a near
// miss) is asked, in the next run's handover, to confirm with `chorus
// signal COMPLETE`; it does, and the task completes. The nudge is in the
// session log and the task's ledger.
func TestNearMissNudgedHeadless(t *testing.T) {
	script := "@ prompt~Handover\nsignal COMPLETE\n" +
		"@ *\nwrite result.txt good\ncommit work\n" + resultLine("All done: `<chorus>COMPLETE</chorus>`", 0.1)
	h := newHarness(t, script, headless)
	id := h.task("near miss", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(e Event) bool { return e.Task == id && (e.Kind == EvCompleted || e.Kind == EvBlocked) })
	if ev.Kind != EvCompleted {
		t.Fatalf("%s: %s\n%s", ev.Kind, ev.Text, h.report())
	}
	var nudges []Event
	for _, e := range h.log {
		if e.Kind == EvNudge {
			nudges = append(nudges, e)
		}
	}
	if len(nudges) != 1 || nudges[0].Fields["channel"] != "handover" || nudges[0].Fields["nudge"] != 1 ||
		!strings.Contains(nudges[0].Text, "<chorus>COMPLETE</chorus>") || !strings.Contains(nudges[0].Text, "inline code") || !strings.Contains(nudges[0].Text, "chorus signal COMPLETE") {
		t.Fatalf("nudges %+v\n%s", nudges, h.report())
	}
	led, err := os.ReadFile(LedgerPath(h.dir.Path, id))
	if err != nil || !strings.Contains(string(led), "nudge 1 (handover)") {
		t.Fatalf("ledger (%v):\n%s", err, led)
	}
	if n := h.count(EvNearMiss); n != 1 {
		t.Fatalf("near misses: %d\n%s", n, h.report())
	}
}

// A negation ("I will not print <tag>") never closes the task: each run
// is asked to confirm, never does, and past completion.maxNudges the task
// goes to a person with the evidence.
func TestNegationNeverCloses(t *testing.T) {
	negation := resultLine("The tests still fail, so this is NOT finished and I will not print <chorus>COMPLETE</chorus>", 0.1)
	script := "@ prompt~Handover\n" + negation + "@ *\nwrite result.txt good\ncommit work\n" + negation
	h := newHarness(t, script, headless)
	id := h.task("negation", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(e Event) bool { return e.Task == id && (e.Kind == EvCompleted || e.Kind == EvBlocked) })
	if ev.Kind != EvBlocked || !strings.Contains(ev.Text, "did not confirm") {
		t.Fatalf("%s: %s\n%s", ev.Kind, ev.Text, h.report())
	}
	if n := h.count(EvNudge); n != 3 {
		t.Fatalf("nudges: %d, want completion.maxNudges (3)\n%s", n, h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusBlocked || !strings.Contains(tk.Notes, "did not count") {
		t.Fatalf("task %+v", tk)
	}
}
