package app

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/report"
)

const planScript = `
@ prompt~1/3:
run "chorus task update $(cat vague.id) --acceptance 'GET /todos returns 200 and a JSON list'"
signal COMPLETE
exit 0
@ prompt~todo
run "A=$(chorus task create 'Add todo model' --acceptance 'go test ./model passes') && chorus task create 'Add list endpoint' --acceptance 'works correctly' --deps $A > vague.id"
signal COMPLETE
exit 0
`

func loadPlanState(t *testing.T, dir string) planning.State {
	t.Helper()
	st, err := planning.Load(filepath.Join(dir, ".chorus", "planning-state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// From a goal to a valid task graph: the Plan Agent creates two tasks,
// one with a vague criterion; the review hands it back, the agent fixes
// it, and the plan ends ready.
func TestPlanHeadless(t *testing.T) {
	dir := scriptedProject(t, planScript, nil)
	code, out := runBinary(t, dir, "plan", "--headless", "Build", "a", "todo", "API")
	if code != 0 {
		t.Fatalf("plan: %d\n%s", code, out)
	}
	for _, want := range []string{"review 1/3: 1 violation(s) handed to the Plan Agent", "2 task(s) valid", "The plan is ready: 2 task(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	st := loadPlanState(t, dir)
	if st.Status != planning.StatusReady || st.PlanSummary.UserGoal != "Build a todo API" || st.PlanSummary.EstimatedTasks != 2 ||
		len(st.ReviewIterations) != 1 || st.ReviewIterations[0] != (planning.Iteration{Iteration: 1, Issues: 1, Fixed: 1}) {
		t.Fatalf("planning state: %+v", st)
	}
	r := chorus(t, dir, "task", "list", "--json")
	var ts []struct {
		ID, Title    string
		Dependencies []struct {
			DependsOnID string `json:"depends_on_id"`
		}
	}
	json.Unmarshal([]byte(r.stdout), &ts)
	if len(ts) != 2 || len(ts[1].Dependencies) != 1 || ts[1].Dependencies[0].DependsOnID != ts[0].ID {
		t.Fatalf("tasks: %s", r.stdout)
	}
	if r := chorus(t, dir, "task", "validate"); r.code != 0 {
		t.Fatalf("validate after planning: %s", r.stdout)
	}
	// Ready: headless goes straight to implementation with the given mode,
	// and the choice is recorded.
	b, _ := os.ReadFile(filepath.Join(dir, ".chorus", "planning-state.json"))
	if !strings.Contains(string(b), `"chosenMode": null`) {
		t.Fatalf("chosenMode before a choice: %s", b)
	}
	// The morning report counts planning on a row of its own.
	var rep report.Report
	if r := chorus(t, dir, "report", "--json"); r.code != 0 || json.Unmarshal([]byte(r.stdout), &rep) != nil || rep.Planning.Runs < 1 {
		t.Errorf("report after planning: %+v\n%s%s", rep.Planning, r.stdout, r.stderr)
	}
	if r := chorus(t, dir, "report", "--since", "1h"); !strings.Contains(r.stdout, "| planning | ") {
		t.Errorf("no planning row:\n%s", r.stdout)
	}
}

// Violations the Plan Agent does not fix: exit 6 with the list, the state
// left reviewing; a later `chorus plan` resumes the review.
func TestPlanHeadlessUnfixed(t *testing.T) {
	script := `
@ prompt~todo
run "chorus task create 'Add list endpoint and write docs' --acceptance 'works' > \"$CHORUS_DIR/vague.id\""
signal COMPLETE
exit 0
@ *
print "I will not fix anything."
signal COMPLETE
exit 0
`
	dir := scriptedProject(t, script, func(cfg map[string]any) { cfg["planning"] = map[string]any{"maxReviewIterations": 1} })
	code, out := runBinary(t, dir, "plan", "--headless", "a todo API")
	if code != ExitUnfinished || !strings.Contains(out, "[vague_criteria]") || !strings.Contains(out, "[atomic]") ||
		!strings.Contains(out, "2 rule violation(s) remain after 1 review iteration(s)") {
		t.Fatalf("plan: %d\n%s", code, out)
	}
	st := loadPlanState(t, dir)
	if st.Status != planning.StatusReviewing || len(st.ReviewIterations) != 1 || st.ReviewIterations[0].Issues != 2 {
		t.Fatalf("state: %+v", st)
	}
	// Routing sends `chorus` back to planning while the review is open.
	if r := chorus(t, dir, "--headless"); r.code != 0 || !strings.Contains(r.stderr, "chorus plan") {
		t.Fatalf("chorus while reviewing: %d %s", r.code, r.stderr)
	}
	// The person fixes the task; `chorus plan` with no goal resumes the
	// review and finds it valid without starting the Plan Agent.
	id, _ := os.ReadFile(filepath.Join(dir, ".chorus", "vague.id"))
	if r := chorus(t, dir, "task", "update", strings.TrimSpace(string(id)), "--title", "Add list endpoint", "--acceptance", "GET /todos returns 200"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	code, out = runBinary(t, dir, "plan", "--headless")
	if code != 0 || !strings.Contains(out, "The plan is ready: 1 task(s)") || strings.Contains(out, "writing tasks") {
		t.Fatalf("resumed review: %d\n%s", code, out)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusReady || st.PlanSummary.UserGoal != "a todo API" {
		t.Fatalf("state after resume: %+v", st)
	}
}

func TestPlanBadInput(t *testing.T) {
	dir := initRepo(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"plan", "--headless"}, ExitUsage, "nothing to plan"},
		{[]string{"plan", "--headless", "--from", "nope.md"}, ExitUsage, "--from: "},
		{[]string{"plan", "--headless", "--agent", "nobody", "x"}, ExitUsage, `--agent: "nobody" is not valid`},
		{[]string{"plan", "x"}, ExitUsage, "needs a terminal; run with --headless"},
	} {
		if r := chorus(t, dir, tc.args...); r.code != tc.code || !strings.Contains(r.stderr, tc.want) {
			t.Errorf("%v: %d %q", tc.args, r.code, r.stderr)
		}
	}
}

// A ready plan run headless goes to implementation. A one-off --autopilot
// leaves the recorded choice alone; --mode records it (the mode rule).
func TestReadyPlanRecordsChosenMode(t *testing.T) {
	dir := scriptedProject(t, "signal COMPLETE\n", nil)
	for i, args := range [][]string{{"--autopilot"}, {"--mode", "autopilot"}} {
		if r := chorus(t, dir, "task", "create", fmt.Sprintf("Add a%d", i), "--acceptance", "a returns 1"); r.code != 0 {
			t.Fatal(r.stderr)
		}
		code, out := runBinary(t, dir, append([]string{"--headless"}, args...)...)
		if code != 0 && code != ExitUnfinished {
			t.Fatalf("run %v: %d\n%s", args, code, out)
		}
		st := loadPlanState(t, dir)
		want := map[int]string{0: "", 1: "autopilot"}[i]
		if st.Status != planning.StatusImplementation || st.Mode() != want {
			t.Fatalf("after %v: state %+v, want chosen mode %q", args, st, want)
		}
	}
}

// A plan clean at its first check still records a review iteration, and
// the session log carries planning's own events: tasks_generated (mode
// planning), the review's iteration_complete (mode review), and the Plan
// Agent's events under mode planning, never implementation.
func TestPlanCleanFirstPassRecorded(t *testing.T) {
	dir := scriptedProject(t, `
@ prompt~todo
run "chorus task create 'Add todo model' --acceptance 'go test ./model passes'"
signal COMPLETE
exit 0
`, nil)
	if st := loadPlanState(t, dir); st.Status != planning.StatusPlanning || !st.Unplanned() {
		t.Fatalf("after init --yes with no tasks: %+v", st)
	}
	code, out := runBinary(t, dir, "plan", "--headless", "Build", "a", "todo", "API")
	if code != 0 {
		t.Fatalf("plan: %d\n%s", code, out)
	}
	st := loadPlanState(t, dir)
	if st.Status != planning.StatusReady || len(st.ReviewIterations) != 1 || st.ReviewIterations[0] != (planning.Iteration{Iteration: 1}) {
		t.Fatalf("planning state: %+v", st)
	}
	entries, err := report.ReadLog(filepath.Join(dir, ".chorus", "session-log.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var generated, iterated, agentEvents bool
	for _, e := range entries {
		switch {
		case e.Event == planning.EvTasksGenerated:
			generated = e.Mode == planning.LogPlanning && fmt.Sprint(e.Details["count"]) == "1"
		case e.Event == planning.EvIterationComplete:
			iterated = e.Mode == planning.LogReview && fmt.Sprint(e.Details["iteration"]) == "1" && fmt.Sprint(e.Details["issues"]) == "0"
		case e.Details["taskId"] == "(plan)":
			if e.Mode != "planning" {
				t.Errorf("Plan Agent event logged as %q: %+v", e.Mode, e)
			}
			agentEvents = true
		}
	}
	if !generated || !iterated || !agentEvents {
		b, _ := os.ReadFile(filepath.Join(dir, ".chorus", "session-log.jsonl"))
		t.Fatalf("session log (generated %v, iteration %v, agent events %v):\n%s", generated, iterated, agentEvents, b)
	}
}

// Tasks created by hand after `init --yes` run headless: the fresh
// "planning" state (no goal) does not hold them back.
func TestInitNoTasksThenHandMadeTasksRun(t *testing.T) {
	dir := scriptedProject(t, "signal COMPLETE\nexit 0\n", nil)
	if st := loadPlanState(t, dir); st.Status != planning.StatusPlanning {
		t.Fatalf("after init --yes with no tasks: %+v", st)
	}
	if r := chorus(t, dir, "task", "create", "Add todo model", "--acceptance", "go test ./model passes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	code, out := runBinary(t, dir, "--headless")
	if strings.Contains(out, "still being written") {
		t.Fatalf("hand-made tasks held back: %d\n%s", code, out)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusImplementation {
		t.Fatalf("after a headless run: %+v\n%s", st, out)
	}
}
