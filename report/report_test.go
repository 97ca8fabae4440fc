package report

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
)

func logger(t *testing.T, d chorusdir.Dir) func(string, map[string]any) {
	return func(event string, details map[string]any) {
		t.Helper()
		if err := d.AppendLog("implementation", event, details); err != nil {
			t.Fatal(err)
		}
	}
}

// A night from its session log: two starts of Chorus (the first killed),
// a pause with its cause and end, a failure with its reason and command, a
// task blocked for a person, a conflict an agent resolved, iterations
// retried with their reasons (given by the engine, or read from the
// events before them), planning's cost, cost and time per task.
func TestNight(t *testing.T) {
	d := chorusdir.At(t.TempDir())
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	log := logger(t, d)
	log("agent_finished", map[string]any{"agentId": "plan-claude", "plan": true, "text": "done", "usage": map[string]any{"input": 100, "output": 50, "costUsd": 0.25}})
	log(SessionStarted, nil)
	log("iteration_started", map[string]any{"taskId": "t-1", "iteration": 1})
	log("iteration_started", map[string]any{"taskId": "t-2", "iteration": 1})
	log("iteration_started", map[string]any{"taskId": "t-3", "iteration": 1})
	log("agent_exited", map[string]any{"taskId": "t-2", "exitCode": 3})
	log("iteration_started", map[string]any{"taskId": "t-2", "iteration": 2, "after": "The agent process exited with code 3 before finishing."})
	log("quality", map[string]any{"taskId": "t-3", "name": "test", "passed": false})
	log("iteration_started", map[string]any{"taskId": "t-3", "iteration": 2})
	log(SessionStarted, nil) // the engine was killed; t-1 was running, its iteration given back
	log("iteration_started", map[string]any{"taskId": "t-1", "iteration": 1})
	log("agent_exited", map[string]any{"taskId": "t-1", "exitCode": 0})
	log("iteration_started", map[string]any{"taskId": "t-1", "iteration": 2})
	log("paused", map[string]any{"text": "autopilot paused: the agent CLI is missing"})
	log("resumed", map[string]any{"text": "claude is back"})
	reset := time.Now().Add(time.Hour).UTC()
	log("run_held", map[string]any{"taskId": "t-3", "text": "autopilot holds: usage limit", "hold": "usage-limit", "cause": "Claude usage limit reached", "until": reset.Add(-time.Minute), "resetKnown": true})
	log("run_probe", map[string]any{"taskId": "t-3", "text": "trying one agent"})
	log("alert", map[string]any{"taskId": "t-3", "text": "autopilot holds: usage limit", "hold": "usage-limit", "until": reset, "resetKnown": true})
	log("iteration_started", map[string]any{"taskId": "t-5", "iteration": 1})
	log("alert", map[string]any{"taskId": "t-5", "text": "uncommitted work saved as a WIP commit"})
	log("task_released", map[string]any{"taskId": "t-5", "text": "parked: the account's usage limit was reached"})
	log("resumed", map[string]any{"text": "autopilot resumes: a turn passed", "hold": "usage-limit"})
	log("iteration_started", map[string]any{"taskId": "t-5", "iteration": 1})
	log("task_failed", map[string]any{"taskId": "t-2", "text": "the agent failed 2 times in a row", "usage": map[string]any{"input": 10, "output": 5, "costUsd": 0.5}, "runtime": 30,
		"output": "line one\nline two\n\nPanic: boom\n", "ledger": ".chorus/ledgers/t-2.md"})
	log("task_blocked", map[string]any{"taskId": "t-4", "text": "needs a human: which database?"})
	log("task_completed", map[string]any{"taskId": "t-1", "usage": map[string]any{"input": 20, "output": 10, "costUsd": 1.0}, "runtime": 90})
	log("merge_conflict", map[string]any{"taskId": "t-1", "text": "conflict in 2 file(s) [a.go, b.go]"})
	log("merge_resolving", map[string]any{"taskId": "t-1"})
	log("merge_resolved", map[string]any{"taskId": "t-1", "text": "kept both changes"})
	log("merge_landed", map[string]any{"taskId": "t-1", "commit": "0123456789abcdef"})
	log("merge_paused", map[string]any{"text": "main moved outside Chorus"})
	tasks := []beads.Task{{ID: "t-1", Title: "one", Status: beads.StatusClosed}, {ID: "t-2", Title: "two", Status: beads.StatusBlocked, Labels: []string{beads.LabelFailed}},
		{ID: "t-4", Title: "four", Status: beads.StatusBlocked}}
	r, err := Build(d, tasks, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if r.From != FromLog || r.Sessions != 2 {
		t.Errorf("period from %q, %d sessions", r.From, r.Sessions)
	}
	if len(r.Landed) != 1 || r.Landed[0].Commit != "0123456789abcdef" || r.Landed[0].Title != "one" {
		t.Errorf("landed %+v", r.Landed)
	}
	if len(r.Failed) != 2 || r.Failed[0].Task != "t-2" || !strings.Contains(r.Failed[0].Next, "chorus task reopen t-2") || r.Failed[1].Kind != "blocked" {
		t.Errorf("failed %+v", r.Failed)
	}
	if len(r.Pauses) != 3 || r.Pauses[0].Scope != "autopilot" || r.Pauses[0].Cause != "autopilot paused: the agent CLI is missing" ||
		r.Pauses[0].Until.IsZero() || r.Pauses[0].Resumed != "claude is back" || r.Pauses[2].Scope != "merge queue" || !r.Pauses[2].Until.IsZero() {
		t.Errorf("pauses %+v", r.Pauses)
	}
	if w := r.Pauses[1]; w.Hold != "usage-limit" || w.Cause != "Claude usage limit reached" || !w.ResetAt.Equal(reset) || !w.ResetKnown || w.Probes != 1 ||
		w.Until.IsZero() || w.Resumed != "autopilot resumes: a turn passed" {
		t.Errorf("the usage window %+v", w)
	}
	if f := r.Failed[0]; f.Ledger != ".chorus/ledgers/t-2.md" || !strings.Contains(f.Output, "Panic: boom") {
		t.Errorf("failure evidence %+v", f)
	}
	if len(r.Conflicts) != 1 || r.Conflicts[0].Outcome != "resolved by an agent" || strings.Join(r.Conflicts[0].Files, ",") != "a.go,b.go" || r.Conflicts[0].Explanation != "kept both changes" {
		t.Errorf("conflicts %+v", r.Conflicts)
	}
	var got []string
	for _, x := range r.Retries {
		got = append(got, fmt.Sprintf("%s#%d: %s", x.Task, x.Iteration, x.Why))
	}
	want := []string{"t-2#2: The agent process exited with code 3 before finishing.", "t-3#2: quality check test failed",
		"t-1#1: Chorus stopped or died during the iteration (it was started again)", "t-1#2: the agent exited without signalling COMPLETE",
		"t-5#1: it was stopped and given back: parked: the account's usage limit was reached"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("retries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if r.Planning.Runs != 1 || r.Planning.Usage.CostUSD != 0.25 {
		t.Errorf("planning %+v", r.Planning)
	}
	if r.Total.CostUSD != 1.75 || r.Total.Tokens() != 195 {
		t.Errorf("total %+v", r.Total)
	}
	var one TaskCost
	for _, c := range r.Tasks {
		if c.Task == "t-1" {
			one = c
		}
	}
	if one.Runtime != 90*time.Second || one.Iterations != 2 || one.Outcome != "completed" {
		t.Errorf("t-1 cost %+v", one)
	}
	var waits []string
	for _, w := range r.Waiting {
		waits = append(waits, w.Task+": "+w.What)
	}
	if strings.Join(waits, "|") != "t-4: task blocked: needs a human: which database?" {
		t.Errorf("waiting %v", waits)
	}
	md := r.Markdown()
	for _, want := range []string{"(no report was produced before: everything in the log)", "2 start(s) of Chorus",
		"1 landed, 1 failed, 1 waiting for you, 3 pause(s), 5 iteration(s) retried, 1 conflict(s)",
		"held for the account's usage limit", "Claude usage limit reached (reset at " + reset.Local().Format("15:04:05") + ", as the CLI said), 1 probe(s)",
		"last output: line one / line two / Panic: boom", "ledger: `.chorus/ledgers/t-2.md`",
		"autopilot paused", "resumed", "merge queue paused", "still paused at the end",
		"`t-1` in a.go, b.go", "resolved by an agent: kept both changes",
		"`t-2` iteration 2", "quality check test failed",
		"| planning | 1 Plan Agent run(s) |", "| `t-1` | one | completed | 2 | 30 | $1.0000 | 1m30s |",
		"next: `chorus task show t-2; then chorus task label remove t-2 failed && chorus task reopen t-2`"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
}

// The default period starts where the last report read by a person ended;
// reports written at the end of runs do not move it; --since is not kept.
func TestPeriodSinceLastReport(t *testing.T) {
	d := chorusdir.At(t.TempDir())
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	log := logger(t, d)
	tasks := []beads.Task{}
	log("task_failed", map[string]any{"taskId": "first-night", "text": "x"})
	r, err := Build(d, tasks, time.Time{})
	if err != nil || len(r.Failed) != 1 {
		t.Fatalf("%v %+v", err, r.Failed)
	}
	if err := Record(d, r, true); err != nil { // read in the morning
		t.Fatal(err)
	}
	log(SessionStarted, nil)
	log("task_failed", map[string]any{"taskId": "run-1", "text": "x"})
	r, _ = Build(d, tasks, time.Time{})
	if r.From != FromReport || len(r.Failed) != 1 || r.Failed[0].Task != "run-1" || !strings.Contains(r.Period(), "since the last report") {
		t.Fatalf("after a read report: %s %+v", r.Period(), r.Failed)
	}
	if err := Record(d, r, false); err != nil { // written at run-1's end, nobody read it
		t.Fatal(err)
	}
	log(SessionStarted, nil)
	log("task_failed", map[string]any{"taskId": "run-2", "text": "x"})
	r, _ = Build(d, tasks, time.Time{})
	if r.From != FromUnread || len(r.Failed) != 2 {
		t.Fatalf("after an unread report both runs count: %s %+v", r.Period(), r.Failed)
	}
	if err := Record(d, r, true); err != nil {
		t.Fatal(err)
	}
	r, _ = Build(d, tasks, time.Time{})
	if len(r.Failed) != 0 || r.Sessions != 0 {
		t.Fatalf("nothing happened since: %+v", r)
	}
	// --since reads by time and is not recorded.
	r, _ = Build(d, tasks, time.Now().Add(-time.Hour))
	if r.From != FromSince || len(r.Failed) != 3 {
		t.Fatalf("--since an hour ago: %+v", r.Failed)
	}
	if err := Record(d, r, true); err != nil {
		t.Fatal(err)
	}
	if m, _, _ := LoadMark(d); m.Shown != true || m.UntilOffset == 0 {
		t.Fatalf("mark %+v", m)
	}
	r, _ = Build(d, tasks, time.Time{})
	if len(r.Failed) != 0 {
		t.Fatalf("a --since report moved the mark: %+v", r.Failed)
	}
	// Escapes from agents never reach the report.
	log("task_failed", map[string]any{"taskId": "t-9", "text": "reached maxIterations \x1b[31m(2)"})
	if md := mustBuild(t, d).Markdown(); strings.Contains(md, "\x1b") || !strings.Contains(md, "reached maxIterations (2)") {
		t.Errorf("markdown:\n%s", md)
	}
}

func mustBuild(t *testing.T, d chorusdir.Dir) Report {
	t.Helper()
	r, err := Build(d, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A claim released from an instance taken for dead is a line of its own.
func TestNightTeamRelease(t *testing.T) {
	d := chorusdir.At(t.TempDir())
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	log := logger(t, d)
	log(SessionStarted, nil)
	log("dead_instance_released", map[string]any{"taskId": "t-9", "instance": "box-1a2b3c4d",
		"text": "task back to open: instance box-1a2b3c4d (silent for 2m5s) is taken for dead"})
	r, err := Build(d, nil, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Released) != 1 || r.Released[0].Task != "t-9" || r.Released[0].Instance != "box-1a2b3c4d" {
		t.Fatalf("released: %+v", r.Released)
	}
	if md := r.Markdown(); !strings.Contains(md, "## Team") || !strings.Contains(md, "`t-9`") || !strings.Contains(md, "silent for 2m5s") {
		t.Fatalf("no team line in:\n%s", md)
	}
}
