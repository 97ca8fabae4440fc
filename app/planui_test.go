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

	"github.com/chorus-dev/chorus/beads"
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

// simRun is a screen-driven session on a simulation screen.
type simRun struct {
	t    *testing.T
	sc   simScreen
	done chan error
}

const simLimit = 3 * time.Minute

// startSim runs session on a simulation screen.
func startSim(t *testing.T, session func(tcell.Screen) error) *simRun {
	t.Helper()
	r := &simRun{t: t, sc: simScreen{SimulationScreen: tcell.NewSimulationScreen("UTF-8"), w: 160, h: 45, shown: make(chan struct{}, 1), ready: make(chan struct{}), once: &sync.Once{}},
		done: make(chan error, 1)}
	go func() { r.done <- session(r.sc) }()
	return r
}

// wait returns the screen once it shows want.
func (r *simRun) wait(want string) string {
	r.t.Helper()
	return r.waitAll(want)
}

// waitAll waits for one screen that shows every one of want.
func (r *simRun) waitAll(want ...string) string {
	r.t.Helper()
	deadline := time.After(simLimit)
	select {
	case <-r.sc.ready:
	case <-deadline:
		r.t.Fatal("the screen was never initialised")
	}
	for {
		txt := r.sc.text()
		all := true
		for _, w := range want {
			all = all && strings.Contains(txt, w)
		}
		if all {
			return txt
		}
		select {
		case <-r.sc.shown:
		case err := <-r.done:
			r.t.Fatalf("the session ended (%v) before showing %q:\n%s", err, want, r.sc.text())
		case <-deadline:
			r.t.Fatalf("the screen never showed %q:\n%s", want, r.sc.text())
		}
	}
}

func (r *simRun) typeText(text string) {
	for _, c := range text {
		r.sc.InjectKey(tcell.KeyRune, c, 0)
	}
}

// end cancels the session and waits for it to end as interrupted.
func (r *simRun) end(cancel context.CancelFunc) {
	r.t.Helper()
	cancel()
	select {
	case err := <-r.done:
		var ee *exitError
		if err != nil && !(errors.As(err, &ee) && ee.code == ExitInterrupted) {
			r.t.Fatalf("ended with %v", err)
		}
	case <-time.After(simLimit):
		r.t.Fatal("the session did not end")
	}
}

// headerLine is the screen's first row.
func headerLine(txt string) string { return strings.SplitN(txt, "\n", 2)[0] }

// openProject loads an initialised project and its task store.
func openProject(t *testing.T, ctx context.Context, dir string) (*project, beads.Store) {
	t.Helper()
	bin := chorusBinary(t)
	old := selfExe
	selfExe = func() string { return bin }
	t.Cleanup(func() { selfExe = old })
	p, err := (&globals{dir: dir}).loadProject(ctx, io.Discard, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := p.store(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return p, s
}

// From a goal typed in the chat line to agents at work, with the
// scripted agent as the Plan Agent: it creates two tasks, one with a
// vague criterion; the review dialog shows it at once, at iteration 1/1,
// before any iteration was spent; Apply Fixes hands it back and the agent
// leaves it; the dialog says the iterations are spent, Apply Fixes hands
// it over again and the agent fixes it; the plan is valid, Autopilot is
// picked, and an implementation agent starts on a task. The header says
// PLANNING, then REVIEW, then the mode.
func TestPlanScreen(t *testing.T) {
	script := `
@ prompt~Protocol
print "implementation agent at work"
hang
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	p, s := openProject(t, ctx, dir)
	rules, err := p.loadRules()
	if err != nil {
		t.Fatal(err)
	}
	r := startSim(t, func(sc tcell.Screen) error {
		return runPlanScreen(ctx, p, s, planStart{prompt: p.planPrompt(rules), uiOptions: func(o *ui.Options) { o.Screen = sc }}, io.Discard)
	})
	txt := r.wait("What should be built?")
	if h := headerLine(txt); !strings.Contains(h, "PLANNING") || strings.Contains(h, "semi-auto") {
		t.Fatalf("header while planning: %q", h)
	}
	r.typeText("Build a todo API")
	r.wait("> Build a todo API")
	r.sc.InjectKey(tcell.KeyEnter, 0, 0)
	r.wait("Add todo model")
	r.wait("Add list endpoint")
	txt = r.wait("TASK REVIEW — iteration 1/1")
	for _, want := range []string{"vague_criteria", "Apply Fixes", "Edit Rules", "Review Again", "Back to Plan", "Apply Fixes hands them to the Plan Agent"} {
		if !strings.Contains(txt, want) {
			t.Fatalf("review dialog lacks %q:\n%s", want, txt)
		}
	}
	if h := headerLine(txt); !strings.Contains(h, "REVIEW") {
		t.Fatalf("header during the review: %q", h)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusReviewing || len(st.ReviewIterations) != 0 || st.PlanSummary.UserGoal != "Build a todo API" || strings.Contains(txt, "leaving it as it is") {
		t.Fatalf("state at the first review: %+v", st)
	}
	r.sc.InjectKey(tcell.KeyEnter, 0, 0) // Apply Fixes has the focus
	r.wait("leaving it as it is")
	// The dialog itself: the footer says the same words first, while the
	// chat line still has the keyboard.
	r.waitAll("1 violation(s) remain after 1 review iteration(s)", "Apply Fixes")
	if st := loadPlanState(t, dir); st.Status != planning.StatusReviewing || len(st.ReviewIterations) != 1 {
		t.Fatalf("state at the review: %+v", st)
	}
	r.sc.InjectKey(tcell.KeyEnter, 0, 0)
	txt = r.wait("The plan is ready: 2 task(s)")
	if !strings.Contains(txt, "Semi-Auto") || !strings.Contains(txt, "Autopilot") {
		t.Fatalf("mode dialog:\n%s", txt)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusReady || len(st.ReviewIterations) != 2 {
		t.Fatalf("state when valid: %+v", st)
	}
	r.typeText("a") // Autopilot
	r.wait("implementation agent at work")
	txt = r.wait("│ autopilot │") // the header, once the planning screen gave way
	if strings.Contains(txt, "TASK REVIEW") || strings.Contains(txt, "Autopilot:") || !strings.Contains(txt, "TASKS (2)") {
		t.Fatalf("implementation view:\n%s", txt)
	}
	if st := loadPlanState(t, dir); st.Status != planning.StatusImplementation || st.Mode() != "autopilot" {
		t.Fatalf("state after the choice: %+v", st)
	}
	r.end(cancel)
}

// A ready plan (init leaves an empty project's plan unplanned; tasks were
// then created by hand) opens on the mode dialog, which says what still breaks
// the rules; the choice is recorded and starts the implementation view in
// that mode.
func TestModeChoiceScreen(t *testing.T) {
	for _, c := range []struct {
		name, acceptance, remark, key, mode, then string
	}{
		{"valid, autopilot", "GET /a returns 200", "The plan is ready: 1 task(s), all valid.", "a", "autopilot", "implementation agent at work"},
		{"violations, semi-auto", "works correctly", "1 rule violation(s) remain", "s", "semi-auto", "semi-auto mode"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := scriptedProject(t, "@ prompt~Protocol\nprint \"implementation agent at work\"\nhang\n", nil)
			if r := chorus(t, dir, "task", "create", "Add a", "--acceptance", c.acceptance); r.code != 0 {
				t.Fatal(r.stderr)
			}
			if st := loadPlanState(t, dir); !st.Unplanned() || st.Mode() != "" {
				t.Fatalf("state before: %+v", st)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			p, s := openProject(t, ctx, dir)
			r := startSim(t, func(sc tcell.Screen) error {
				return chooseModeScreen(ctx, p, s, io.Discard, func(o *ui.Options) { o.Screen = sc }, nil)
			})
			txt := r.wait("Semi-Auto: you assign tasks")
			if !strings.Contains(txt, c.remark) {
				t.Fatalf("mode dialog lacks %q:\n%s", c.remark, txt)
			}
			r.typeText(c.key)
			r.wait(c.then)
			if h := headerLine(r.wait("│ " + c.mode + " │")); strings.Contains(h, "PLANNING") {
				t.Fatalf("header: %q", h)
			}
			if st := loadPlanState(t, dir); st.Status != planning.StatusImplementation || st.Mode() != c.mode {
				t.Fatalf("state after the choice: %+v", st)
			}
			r.end(cancel)
		})
	}
}
