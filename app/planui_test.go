package app

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/planning"
	"github.com/chorus-dev/chorus/ui"
)

// simScreen is a simulation screen of a fixed size that tells the test
// each time a frame reaches it.
type simScreen struct {
	tcell.SimulationScreen
	w, h  int
	shown chan struct{}
	ready chan struct{} // closed once initialised: reading it before races Init
	once  *sync.Once
}

// Init sizes the screen: tview's SetScreen resets a simulation screen.
func (s simScreen) Init() error {
	err := s.SimulationScreen.Init()
	s.SetSize(s.w, s.h)
	s.once.Do(func() { close(s.ready) })
	return err
}

func (s simScreen) Show() {
	s.SimulationScreen.Show()
	select {
	case s.shown <- struct{}{}:
	default:
	}
}

// text is the screen as text, copied under the screen's lock.
func (s simScreen) text() string {
	cells, w, h := s.GetContents() // the live buffer: copied under its lock
	l := s.SimulationScreen.(sync.Locker)
	l.Lock()
	cells = append([]tcell.SimCell(nil), cells...)
	l.Unlock()
	var b strings.Builder
	for y := 0; y < h; y++ {
		var row strings.Builder
		for x := 0; x < w; x++ {
			if c := cells[y*w+x]; len(c.Runes) > 0 {
				row.WriteString(string(c.Runes))
			} else {
				row.WriteByte(' ')
			}
		}
		b.WriteString(strings.TrimRight(row.String(), " ") + "\n")
	}
	return b.String()
}

// From a goal typed in the chat line to the implementation view, with
// the scripted agent as the Plan Agent: it creates two tasks, one with a
// vague criterion; the configured review (one iteration) hands it back
// and the agent leaves it; the review dialog shows it, Apply Fixes hands
// it over again and the agent fixes it; the plan is valid, Semi-Auto is
// picked, and the implementation view shows the tasks.
func TestPlanScreen(t *testing.T) {
	script := `
@ prompt~2/2:
run "chorus task update $(cat vague.id) --acceptance 'GET /todos returns 200 and a JSON list'"
signal COMPLETE
exit 0
@ prompt~1/1:
print "leaving it as it is"
signal COMPLETE
exit 0
@ prompt~todo
run "A=$(chorus task create 'Add todo model' --acceptance 'go test ./model passes') && chorus task create 'Add list endpoint' --acceptance 'works correctly' --deps $A > vague.id"
signal COMPLETE
exit 0
`
	dir := scriptedProject(t, script, func(cfg map[string]any) { cfg["planning"] = map[string]any{"maxReviewIterations": 1} })
	bin := chorusBinary(t)
	old := selfExe
	selfExe = func() string { return bin }
	t.Cleanup(func() { selfExe = old })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, err := (&globals{dir: dir}).loadProject(ctx, io.Discard, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rules, err := p.loadRules()
	if err != nil {
		t.Fatal(err)
	}
	sc := simScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), w: 160, h: 45, shown: make(chan struct{}, 1), ready: make(chan struct{}), once: &sync.Once{}}
	done := make(chan error, 1)
	go func() {
		done <- runPlanScreen(ctx, p, s, planStart{prompt: p.planPrompt(rules), uiOptions: func(o *ui.Options) { o.Screen = sc }}, io.Discard)
	}()
	const limit = 3 * time.Minute
	waitShown := func(want string) string {
		t.Helper()
		deadline := time.After(limit)
		select {
		case <-sc.ready:
		case <-deadline:
			t.Fatal("the screen was never initialised")
		}
		for {
			if txt := sc.text(); strings.Contains(txt, want) {
				return txt
			}
			select {
			case <-sc.shown:
			case err := <-done:
				t.Fatalf("the planning screen ended (%v) before showing %q:\n%s", err, want, sc.text())
			case <-deadline:
				t.Fatalf("the screen never showed %q:\n%s", want, sc.text())
			}
		}
	}
	typeText := func(text string) {
		for _, r := range text {
			sc.InjectKey(tcell.KeyRune, r, 0)
		}
	}

	waitShown("What should be built?")
	typeText("Build a todo API")
	waitShown("> Build a todo API")
	sc.InjectKey(tcell.KeyEnter, 0, 0)
	waitShown("Add todo model")
	waitShown("Add list endpoint")
	txt := waitShown("TASK REVIEW")
	for _, want := range []string{"vague_criteria", "Apply Fixes", "Edit Rules", "Review Again", "Back to Plan"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("review dialog lacks %q:\n%s", want, txt)
		}
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusReviewing || len(st.ReviewIterations) != 1 || st.PlanSummary.UserGoal != "Build a todo API" {
		t.Fatalf("state at the review: %+v", st)
	}
	sc.InjectKey(tcell.KeyEnter, 0, 0) // Apply Fixes has the focus
	txt = waitShown("The plan is ready: 2 task(s)")
	if !strings.Contains(txt, "Semi-Auto") || !strings.Contains(txt, "Autopilot") {
		t.Fatalf("mode dialog:\n%s", txt)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusReady || len(st.ReviewIterations) != 2 {
		t.Fatalf("state when valid: %+v", st)
	}
	sc.InjectKey(tcell.KeyEnter, 0, 0) // Semi-Auto
	txt = waitShown("semi-auto mode")
	if strings.Contains(txt, "TASK REVIEW") || strings.Contains(txt, "Autopilot:") || !strings.Contains(txt, "TASKS (2)") {
		t.Fatalf("implementation view:\n%s", txt)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusImplementation || st.Mode() != "semi-auto" {
		t.Fatalf("state after the choice: %+v", st)
	}
	cancel()
	select {
	case err := <-done:
		var ee *exitError
		if err != nil && !(errors.As(err, &ee) && ee.code == ExitInterrupted) {
			t.Fatalf("ended with %v", err)
		}
	case <-time.After(limit):
		t.Fatal("the session did not end")
	}
}
