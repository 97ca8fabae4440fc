package planning

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/taskrules"
)

func TestStateRoundTripAndErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "planning-state.json")
	if st, err := Load(path); err != nil || st.Status != StatusReady || st.Mode() != "" {
		t.Fatalf("missing file: %+v %v", st, err)
	}
	mode := "autopilot"
	want := State{Status: StatusReviewing, ChosenMode: &mode, PlanSummary: Summary{UserGoal: "g", EstimatedTasks: 4},
		ReviewIterations: []Iteration{{1, 3, 2}}}
	if err := Save(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Load(path)
	if err != nil || got.Status != want.Status || got.Mode() != "autopilot" || got.ReviewIterations[0] != want.ReviewIterations[0] {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	// The template's file (null mode, empty list) loads.
	b, _ := os.ReadFile(filepath.Join("..", ".chorus-template", "planning-state.json"))
	os.WriteFile(path, b, 0o644)
	if st, err := Load(path); err != nil || st.Status != StatusReady || st.ChosenMode != nil {
		t.Fatalf("template: %+v %v", st, err)
	}
	for body, msg := range map[string]string{
		`{"status":"thinking"}`:                   `status "thinking" is not valid`,
		`{"status":"ready","chosenMode":"turbo"}`: `chosenMode "turbo" is not valid`,
		`{"status":`: "fix the JSON or delete the file",
	} {
		os.WriteFile(path, []byte(body), 0o644)
		if _, err := Load(path); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%s: %v", body, err)
		}
	}
	if err := Save(path, State{Status: "x"}); err == nil {
		t.Error("invalid state saved")
	}
}

func TestPrompt(t *testing.T) {
	p := Prompt("# Plan Agent", taskrules.Default(), "", Request{Goal: "Build it", SpecPath: "SPEC.md", Spec: "line\n"})
	for _, want := range []string{"# Plan Agent", "At most 10 acceptance criteria", "Build it", "<spec>\nline\n</spec>", "chorus signal COMPLETE"} {
		if !strings.Contains(p, want) {
			t.Errorf("prompt lacks %q:\n%s", want, p)
		}
	}
	long := strings.Repeat("x\n", 1200)
	p = Prompt("", taskrules.Default(), "", Request{SpecPath: "SPEC.md", Spec: long})
	if !strings.Contains(p, "SPEC.md has 1200 lines") || !strings.Contains(p, "Part 1/3 (lines 1-500)") || strings.Count(p, "x\n") != 500 {
		t.Errorf("long spec prompt:\n%s", p)
	}
	r := ReviewPrompt([]taskrules.Violation{{TaskID: "ch-1", Rule: "atomic", Message: "two jobs"}}, 2, 3)
	if !strings.Contains(r, "Task review 2/3") || !strings.Contains(r, "- ch-1 [atomic] two jobs") {
		t.Errorf("review prompt:\n%s", r)
	}
}
