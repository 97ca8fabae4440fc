package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

func TestFailureCause(t *testing.T) {
	cases := []struct{ in, cause string }{
		{`agent command "claude" not found on PATH: install it`, "the agent command is missing"},
		{"committing: write .git/objects: no space left on device", "the disk is full"},
		{"The agent process exited with code 1: Not logged in · Please run /login", "the model API refuses the account"},
		{"API Error: 401 {\"type\":\"authentication_error\"}", "the model API refuses the account"},
		{"Unable to connect to API (ConnectionRefused)", "the model API cannot be reached"},
		{"The agent process exited with code 1: API Error: 529 overloaded", "the model API is failing"},
	}
	for _, c := range cases {
		key, cause := failureCause(c.in)
		if cause != c.cause || key != cause {
			t.Errorf("%q: key %q cause %q, want %q", c.in, key, cause, c.cause)
		}
	}
	// Unknown failures match on their text with numbers blanked.
	a, _ := failureCause("The agent process exited with code 3 before finishing.")
	b, _ := failureCause("The agent process exited with code 7 before finishing.")
	c, _ := failureCause("The agent exited without signalling COMPLETE.")
	if a != b || a == c || a == "" {
		t.Errorf("fingerprints %q %q %q", a, b, c)
	}
	if k, _ := failureCause("  "); k != "" {
		t.Errorf("empty failure has key %q", k)
	}
}

func TestStreak(t *testing.T) {
	var s streak
	first := s.failed("a", "k", "x")
	if again := s.failed("a", "k", "x"); first || again {
		t.Fatal("one task failing again and again is that task's failure")
	}
	if !s.failed("b", "k", "x") {
		t.Fatal("two tasks failing the same way in a row: an outage")
	}
	s.ok()
	if s.failed("a", "k", "x") || s.failed("b", "j", "y") {
		t.Fatal("a turn that worked, or another way of failing, starts a new streak")
	}
	if s.failed("c", "", "") {
		t.Fatal("no fingerprint: never an outage")
	}
}

func TestHoldFor(t *testing.T) {
	now := time.Date(2026, 1, 1, 3, 0, 0, 0, time.UTC)
	h := holdFor(nil, HoldOutage, "k", "the disk is full", now, time.Second)
	if h.Until != now.Add(time.Second) || h.Probes != 0 || h.Since != now {
		t.Fatalf("new hold %+v", h)
	}
	h2 := holdFor(h, HoldOutage, "k", "the disk is full", now, time.Second)
	h3 := holdFor(h2, HoldOutage, "k", "the disk is full", now, time.Second)
	if h2.Probes != 1 || h2.Until != now.Add(2*time.Second) || h3.Until != now.Add(4*time.Second) || h3.Since != now {
		t.Fatalf("renewed holds %+v %+v", h2, h3)
	}
	if d := holdBackoff(time.Second, 40); d != holdBackoffMax {
		t.Fatalf("backoff after 40 probes %s", d)
	}
	if h4 := holdFor(h3, HoldOutage, "other", "x", now, time.Second); h4.Probes != 0 || h4.Key != "other" {
		t.Fatalf("another cause: %+v", h4)
	}
}

// One task whose agent always crashes fails alone, with its exit reason
// and evidence; the others land and autopilot never holds.
func TestCrashingTaskFailsAlone(t *testing.T) {
	h := newHarness(t, "", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.Completion.MaxAgentErrors = 2
	})
	crasher := h.task("crasher", beads.CreateOptions{Priority: 1})
	var others []string
	for _, n := range []string{"one", "two", "three"} {
		others = append(others, h.task(n, beads.CreateOptions{Priority: 2}))
	}
	script := "@ task=" + crasher + "\nprint \"segfault in the agent\"\nexit 3\n@ *\nwrite f-$CHORUS_TASK_ID.txt x\ncommit \"feat: work\"\nsignal COMPLETE\n"
	if err := os.WriteFile(filepath.Join(h.root, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	h.start()
	ev := h.waitFor(kind(EvFailed, crasher))
	if !strings.Contains(ev.Text, "failed 2 times in a row") || !strings.Contains(ev.Text, "exited with code 3") {
		t.Fatalf("failed with %q", ev.Text)
	}
	if out, _ := ev.Fields["output"].(string); !strings.Contains(out, "segfault in the agent") {
		t.Fatalf("evidence %q", out)
	}
	for _, id := range others {
		h.waitFor(kind("merge_landed", id))
	}
	h.waitIdle()
	if n := h.count(EvHeld) + h.count(EvPaused); n != 0 {
		t.Fatalf("autopilot held or paused %d times for one task's failure\n%s", n, h.report())
	}
	tk := h.get(crasher)
	if tk.Status != beads.StatusBlocked || !tk.HasLabel(beads.LabelFailed) || !strings.Contains(tk.Notes, FailedNote) {
		t.Fatalf("crasher in the store: %+v", tk)
	}
	snap := h.eng.Snapshot()
	if tr := snap.Tasks[crasher]; tr == nil || !strings.Contains(tr.Failed, "exited with code 3") || snap.Stats.TasksFailed != 1 {
		t.Fatalf("snapshot: %+v %+v", snap.Tasks[crasher], snap.Stats)
	}
	if _, err := os.Stat(filepath.Join(h.root, ".worktrees", "script-"+crasher)); err != nil {
		t.Fatalf("the failed task's worktree: %v", err)
	}
}

// Agents of different tasks failing the same way hold the run: no agent
// starts but a probe after each wait, no task fails; once the cause is
// gone the run resumes by itself and every task lands.
func TestOutageHoldsRunAndResumes(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "api-up")
	h := newHarness(t, "write f-$CHORUS_TASK_ID.txt x\ncommit \"feat: work\"\nsignal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.Completion.MaxAgentErrors = 5
		c.Agents.Available["script"] = config.AgentProfile{Command: "sh", Prompt: config.PromptArg, Args: []string{"-c",
			`test -f "` + flag + `" || { echo "API Error: 529 overloaded"; exit 1; }; exec "` + testkit.Chorus(t) + `" scripted-agent --script agent.script "$0"`}}
	})
	h.holdBackoff = 100 * time.Millisecond
	var ids []string
	for _, n := range []string{"one", "two", "three"} {
		ids = append(ids, h.task(n, beads.CreateOptions{Priority: 2}))
	}
	h.start()
	held := h.waitFor(kind(EvHeld, ""))
	if !strings.Contains(held.Text, "the model API is failing") {
		t.Fatalf("held with %q", held.Text)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvResumed, ""))
	for _, id := range ids {
		h.waitFor(kind("merge_landed", id))
	}
	h.waitIdle()
	if n := h.count(EvFailed) + h.count(EvBlocked); n != 0 {
		t.Fatalf("%d tasks failed or blocked for an outage\n%s", n, h.report())
	}
	// While held, every agent started was a probe.
	inHold, starts, probes := false, 0, 0
	for _, ev := range h.log {
		switch ev.Kind {
		case EvHeld:
			inHold = true
		case EvResumed:
			inHold = false
		case EvProbe:
			probes++
		case EvStarted:
			if inHold {
				starts++
			}
		}
	}
	if starts > probes || probes == 0 {
		t.Fatalf("%d agents started while held, %d probes\n%s", starts, probes, h.report())
	}
	if snap := h.eng.Snapshot(); snap.Hold != nil {
		t.Fatalf("still held: %+v", snap.Hold)
	}
}

// The account's usage limit holds the run at its first sight: the other
// running agent is parked, no task is blocked or failed, no agent starts
// before the reset time the agent gave, and every task lands after it.
func TestUsageLimitHoldsUntilReset(t *testing.T) {
	// The window opens as the first agent starts, for 3 to 4 seconds
	// (ln: one agent sets it): opened before the engine's start, it
	// could close before a busy machine started any agent.
	window := filepath.Join(t.TempDir(), "window-end")
	wrapper := `w="` + window + `"; echo $(($(date +%s) + 4)) > "$w.$$"; ln "$w.$$" "$w" 2>/dev/null; rm -f "$w.$$"; ` +
		`end=$(cat "$w"); now=$(date +%s); if [ "$now" -lt "$end" ]; then ` +
		`echo "API Error: Request rejected (429) · rate limited · resets in $((end-now)) seconds"; sleep 60; exit 1; fi; ` +
		`exec "` + testkit.Chorus(t) + `" scripted-agent --script agent.script "$0"`
	h := newHarness(t, "write f-$CHORUS_TASK_ID.txt x\ncommit \"feat: work\"\nsignal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 2
		c.Agents.Available["script"] = config.AgentProfile{Command: "sh", Prompt: config.PromptArg, Args: []string{"-c", wrapper}}
	})
	var ids []string
	for _, n := range []string{"one", "two", "three"} {
		ids = append(ids, h.task(n, beads.CreateOptions{Priority: 2}))
	}
	h.start()
	held := h.waitFor(func(e Event) bool { return e.Kind == EvHeld && e.Fields["hold"] == HoldUsage })
	b, err := os.ReadFile(window)
	sec, perr := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || perr != nil {
		t.Fatalf("the window's end: %q (%v, %v)", b, err, perr)
	}
	end := time.Unix(sec, 0)
	until, _ := held.Fields["until"].(time.Time)
	if known, _ := held.Fields["resetKnown"].(bool); !known || until.Before(end) {
		t.Fatalf("held until %v (known %v); the window ends %v", until, held.Fields["resetKnown"], end)
	}
	h.waitFor(kind(EvResumed, ""))
	for _, id := range ids {
		h.waitFor(kind("merge_landed", id))
	}
	h.waitIdle()
	if n := h.count(EvFailed) + h.count(EvBlocked) + h.count(EvNeedsHuman); n != 0 {
		t.Fatalf("%d tasks failed, blocked or handed to a person for a usage limit\n%s", n, h.report())
	}
	heldAt := held.Time
	for _, ev := range h.log {
		if ev.Kind == EvStarted && ev.Time.After(heldAt) && ev.Time.Before(end) {
			var b strings.Builder
			for _, e := range h.log {
				fmt.Fprintf(&b, "  %s %s %s %s %v\n", e.Time.Format("15:04:05.000"), e.Kind, e.Task, e.Text, e.Fields)
			}
			t.Fatalf("an agent started during the window at %v (window ends %v)\n%s", ev.Time, end, b.String())
		}
	}
	// Parked tasks gave their turn back: each landed in its first iteration.
	for _, ev := range h.log {
		if ev.Kind == EvIteration && ev.Fields["iteration"] != 1 {
			t.Fatalf("a task spent a second iteration: %+v", ev)
		}
	}
}

// With one agent at a time, a task can spend its errors on an outage
// before a second task shows it is one: that task is FAILED at first, and
// retried when the hold clears; both land.
func TestOutageRetriesTaskItFailed(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "api-up")
	h := newHarness(t, "write f-$CHORUS_TASK_ID.txt x\ncommit \"feat: work\"\nsignal COMPLETE\n", func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 1
		c.Completion.MaxAgentErrors = 2
		c.Agents.Available["script"] = config.AgentProfile{Command: "sh", Prompt: config.PromptArg, Args: []string{"-c",
			`test -f "` + flag + `" || { echo "API Error: 500 internal server error"; exit 1; }; exec "` + testkit.Chorus(t) + `" scripted-agent --script agent.script "$0"`}}
	})
	h.holdBackoff = 100 * time.Millisecond
	a := h.task("first", beads.CreateOptions{Priority: 1})
	b := h.task("second", beads.CreateOptions{Priority: 2})
	h.start()
	h.waitFor(kind(EvFailed, a))
	held := h.waitFor(kind(EvHeld, ""))
	if !strings.Contains(held.Text, "the model API is failing") {
		t.Fatalf("held with %q", held.Text)
	}
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	h.waitFor(kind(EvResumed, ""))
	h.waitFor(kind("merge_landed", b))
	h.waitFor(kind("merge_landed", a))
	if tk := h.get(a); tk.Status != beads.StatusClosed || tk.HasLabel(beads.LabelFailed) {
		t.Fatalf("the task the outage failed: %+v", tk)
	}
}
