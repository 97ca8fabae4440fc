package orchestrator

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// The ledger names the files each iteration changed and the agent's note;
// it survives an engine restart, the next iteration's handover is built
// from it, and the timeline lists the finished task's states.
func TestLedgerSurvivesRestartAndFeedsHandover(t *testing.T) {
	script := `
@ prompt~found-the-cache
write second.txt two
commit "second part"
signal COMPLETE
@ iteration=1
write first.txt one
commit "first part"
note "found-the-cache: tests must reset it"
hang
@ *
exit 0
`
	h := newHarness(t, script, nil)
	id := h.task("two parts", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvNote, id))
	h.stop() // the agent is stopped mid-iteration, the task released
	path := LedgerPath(h.dir.Path, id)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Iteration 1 · script-" + id, "first.txt", "note: found-the-cache: tests must reset it", "run ended: released"} {
		if !strings.Contains(string(before), want) {
			t.Fatalf("ledger lacks %q:\n%s", want, before)
		}
	}

	h.start() // a new engine on the same repository
	h.do(Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind("merge_landed", id))
	// The branch can land before its supervisor closed the iteration's
	// section; the run's end comes after.
	h.waitFor(func(ev Event) bool { return ev.Kind == EvFinished && ev.Task == id && ev.Text == string(outCompleted) })
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(after), string(before)) {
		t.Fatalf("the ledger was rewritten, not appended to:\n%s", after)
	}
	its, err := ReadLedger(path)
	if err != nil || len(its) != 2 {
		t.Fatalf("iterations %+v %v\n%s", its, err, after)
	}
	// The stopped iteration was not the agent's to pay: the next is
	// iteration 1 again, handed over from the ledger.
	if its[1].N != 1 || strings.Join(its[1].Files, ",") != "second.txt" && !strings.HasSuffix(strings.Join(its[1].Files, ","), ",second.txt") || !strings.Contains(its[1].Result, "completed") {
		t.Fatalf("iteration after the restart: %+v\n%s", its[1], after)
	}
	if len(its[0].Notes) != 1 || its[0].End.IsZero() {
		t.Fatalf("iteration 1: %+v", its[0])
	}

	cmd := exec.Command(testkit.Chorus(t), "task", "show", id)
	cmd.Dir = h.root
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "ledger: "+filepath.Join(".chorus", "ledgers", id+".md")+" (2 iterations)") {
		t.Fatalf("task show: %v\n%s", err, out)
	}

	stages, err := Timeline(h.dir, id)
	if err != nil {
		t.Fatal(err)
	}
	var states []string
	for _, s := range stages {
		states = append(states, s.State)
	}
	want := "assigned,iteration 1,released,assigned,iteration 1,checking,completed,merging,landed"
	if got := strings.Join(states, ","); got != want {
		t.Fatalf("timeline %s, want %s\n%+v", got, want, stages)
	}
	if !strings.Contains(stages[1].Detail, "first.txt") || !strings.Contains(stages[1].Detail, "found-the-cache") {
		t.Fatalf("iteration 1 detail: %q", stages[1].Detail)
	}
	cmd = exec.Command(testkit.Chorus(t), "task", "timeline", id)
	cmd.Dir = h.root
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "landed") || !strings.Contains(string(out), "iteration 1") {
		t.Fatalf("task timeline: %v\n%s", err, out)
	}
}

// The same required check failing the same way three times hands the task
// to a person (blocked, with the failure as evidence) long before
// maxIterations.
func TestRepeatedFailureGoesToPerson(t *testing.T) {
	script := `
write work.txt "an attempt"
commit "attempt"
signal COMPLETE
wait-input
signal COMPLETE
wait-input
signal COMPLETE
wait-input
signal COMPLETE
hang
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Completion.MaxIterations = 20
		c.QualityCommands = []config.QualityCommand{{Name: "test", Command: "echo 'TestX failed after 0.01s'; exit 1", Required: true, Order: 1}}
	})
	id := h.task("hopeless", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHuman, id))
	if !strings.Contains(ev.Text, "same quality failure 3 times") || !strings.Contains(ev.Text, "TestX failed") {
		t.Fatalf("needs-human event: %q", ev.Text)
	}
	h.waitFor(kind(EvBlocked, id))
	if n := h.count(EvQuality); n != 3 {
		t.Fatalf("%d checks ran, want 3", n)
	}
	if n := h.count(EvFailed); n != 0 {
		t.Fatal("the task failed instead of going to a person")
	}
	tk := h.get(id)
	if tk.Status != beads.StatusBlocked || tk.HasLabel(beads.LabelFailed) || !strings.Contains(tk.Notes, "needs a person") {
		t.Fatalf("task: %+v", tk)
	}
	// Front ends show which check failed and its last lines, and count
	// the failed checks.
	h.sync()
	snap := h.eng.Snapshot()
	if tr := snap.Tasks[id]; tr == nil || tr.FailCheck != "test" || tr.FailTail != "TestX failed after 0.01s" {
		t.Fatalf("task run: %+v", tr)
	}
	if snap.Stats.ChecksFailed != 3 {
		t.Fatalf("checks failed: %d, want 3", snap.Stats.ChecksFailed)
	}
}

// The count of a repeating failure survives the agent being stopped and
// the task taken up again: two failures in a row, one per run, are two.
func TestRepeatedFailureCountedAcrossRuns(t *testing.T) {
	script := `
run "date +%s%N >> work.txt"
commit "attempt"
signal COMPLETE
hang
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Completion.MaxIterations = 20
		c.Completion.RepeatedFailures = 2
		c.QualityCommands = []config.QualityCommand{{Name: "test", Command: "echo 'TestX failed'; exit 1", Required: true, Order: 1}}
	})
	id := h.task("hopeless", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	q := h.waitFor(func(e Event) bool { return e.Kind == EvQuality && e.Task == id })
	// Stopped once the failure is handed back (the next iteration began),
	// not while the check is still being recorded.
	h.waitFor(func(e Event) bool { return e.Kind == EvIteration && e.Task == id && e.Fields["iteration"] == 2 })
	h.do(Command{Kind: CmdStop, AgentID: q.Agent})
	h.waitFor(kind(EvReleased, id))
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHuman, id))
	if !strings.Contains(ev.Text, "same quality failure 2 times") {
		t.Fatalf("needs-human event: %q\n%s", ev.Text, h.report())
	}
}

// Stuck alerts that keep coming hand the task to a person too.
func TestStuckAlertsGoToPerson(t *testing.T) {
	h := newHarness(t, "exit 0\n", func(c *config.Config) {
		c.Completion.StuckIterations = 1
		c.Completion.StuckAlerts = 2
		c.Completion.MaxIterations = 10
	})
	id := h.task("stuck", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHuman, id))
	if !strings.Contains(ev.Text, "2 stuck alerts") {
		t.Fatalf("needs-human event: %q", ev.Text)
	}
	h.waitFor(kind(EvBlocked, id))
	if n := h.count(EvIteration); n != 2 {
		t.Fatalf("%d iterations, want 2", n)
	}
}

// Continue on a stuck alert lets the agent go on: the alerts that hand the
// task to a person count again from there, so it gets one more iteration
// than without (the second one waits until Continue was sent).
func TestContinueAfterStuckAlert(t *testing.T) {
	d := t.TempDir()
	fifo := filepath.Join(d, "fifo")
	if err := unix.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	script := `run "if [ ! -f ` + d + `/first ]; then touch ` + d + `/first; elif [ ! -f ` + d + `/second ]; then touch ` + d + `/second; read x < ` + fifo + `; fi"
exit 0
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Completion.StuckIterations = 1
		c.Completion.StuckAlerts = 2
		c.Completion.MaxIterations = 10
	})
	id := h.task("stuck", beads.CreateOptions{})
	h.start()
	h.do(Command{Kind: CmdAssign, TaskID: id})
	alert := h.waitFor(func(e Event) bool {
		return e.Kind == EvAlert && e.Task == id && strings.Contains(e.Text, "may be stuck")
	})
	h.do(Command{Kind: CmdContinue, AgentID: alert.Agent})
	h.waitFor(kind(EvContinued, id))
	// Let the second iteration end.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("go\n")
	f.Close()
	h.waitFor(kind(EvNeedsHuman, id))
	h.waitFor(kind(EvBlocked, id))
	if n := h.count(EvIteration); n != 3 {
		t.Fatalf("%d iterations, want 3 (2 without Continue)", n)
	}
}

// The default profile (interactive Claude Code, injectContext off) gets
// PATTERNS.md, under one heading.
func TestPromptCarriesPatternsOnce(t *testing.T) {
	root := testkit.Repo(t)
	cfg := config.Default()
	if _, err := config.Install(root, cfg); err != nil {
		t.Fatal(err)
	}
	h := &harness{dir: chorusdir.At(root)}
	os.MkdirAll(filepath.Join(root, ".agent"), 0o755)
	os.WriteFile(h.dir.Learnings(), []byte("## Learnings\n- run go generate before tests\n"), 0o644)
	pat, err := os.ReadFile(h.dir.Patterns())
	if err != nil {
		t.Fatal(err)
	}
	d := dirs{root: root, prompts: h.dir.Prompts(), patterns: h.dir.Patterns(), learnings: h.dir.Learnings()}
	p := cfg.Agents.Available[cfg.Agents.Default]
	if cfg.Agents.Default != "claude" || p.InjectContext {
		t.Fatalf("default profile %q injectContext=%v", cfg.Agents.Default, p.InjectContext)
	}
	got, err := buildPrompt(d, cfg, p, "claude", beads.Task{ID: "t-1", Title: "do it"}, "agent/claude/t-1")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(got, strings.TrimSpace(string(pat))); n != 1 {
		t.Fatalf("PATTERNS.md appears %d times:\n%s", n, got)
	}
	if n := strings.Count(got, "# Project Patterns"); n != 1 {
		t.Fatalf("the patterns heading appears %d times:\n%s", n, got)
	}
	if !strings.Contains(got, "run go generate before tests") || !strings.Contains(got, "# Task: t-1") {
		t.Fatalf("prompt:\n%s", got)
	}
}
