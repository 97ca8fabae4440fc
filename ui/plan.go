package ui

import (
	"context"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// Planning stages a Planner reports.
const (
	PlanGoal      = "goal"      // no goal yet: the chat line asks for it
	PlanWriting   = "planning"  // the Plan Agent works; the chat line talks to it
	PlanReviewing = "reviewing" // the review loop runs
	PlanReview    = "review"    // violations remain: the person decides
	PlanChoose    = "choose"    // all tasks valid: pick a mode
	PlanDone      = "done"      // a mode was chosen: the implementation view
)

// Planner actions.
const (
	ActGoal   = "goal"   // Text: the goal
	ActApply  = "apply"  // hand the violations to the Plan Agent
	ActRules  = "rules"  // the rules file was edited: reload and validate
	ActReview = "review" // validate again
	ActBack   = "back"   // back to the chat with the Plan Agent
	ActMode   = "mode"   // Text: semi-auto | autopilot
)

// PlanView is the planning phase as the Planner sees it.
type PlanView struct {
	Stage      string
	Agent      string // the Plan Agent's id, once started
	Text       string // what happens, for the footer or the dialog
	Iteration  int
	Max        int
	Violations []string // one line each
	Tasks      int      // tasks in the plan (PlanChoose)
	// TasksChanged: only the task store changed; the stage stays.
	TasksChanged bool
}

// PlanAction is a person's decision, for the Planner.
type PlanAction struct{ Kind, Text string }

// Planner runs the planning phase outside the UI (the UI never runs the
// review loop or waits on the Plan Agent). The UI shows each PlanView it
// reads from Views and reloads the tasks then; Act must never block.
type Planner interface {
	Views() <-chan PlanView
	Act(PlanAction)
}

// Overlay names of the planning dialogs.
const (
	ovPlanReview = "plan-review"
	ovPlanMode   = "plan-mode"
)

// planning says the planning screen is up. Event goroutine.
func (u *UI) planning() bool {
	return u.o.Planner != nil && u.plan.Stage != PlanDone
}

// phase is the header's name for the planning stage: PLANNING while the
// goal is asked for and the Plan Agent writes, REVIEW while the tasks are
// validated and the person decides; "" once the implementation view is up.
// Event goroutine.
func (u *UI) phase() string {
	if !u.planning() {
		return ""
	}
	switch u.plan.Stage {
	case PlanReviewing, PlanReview:
		return "REVIEW"
	}
	return "PLANNING"
}

// setPlan shows a new planning stage. Event goroutine.
func (u *UI) setPlan(pv PlanView) {
	prev := u.plan.Stage
	u.plan = pv
	if pv.Agent != "" {
		u.selAgent = pv.Agent
	}
	if u.over != nil && (u.over.name == ovPlanReview || u.over.name == ovPlanMode) && pv.Stage != PlanReview && pv.Stage != PlanChoose {
		u.closeOverlay()
	}
	switch pv.Stage {
	case PlanGoal:
		u.chat.SetPlaceholder("What should be built? Type the goal, Enter starts the Plan Agent")
		u.openChat()
	case PlanWriting, PlanReviewing:
		u.chat.SetPlaceholder("Type to the Plan Agent; Enter sends")
		if pv.Text != "" {
			u.setFlash("plan: "+pv.Text, present.Normal)
		}
		if prev == PlanGoal || prev == "" {
			u.openChat()
		}
	case PlanReview:
		u.showPlanReview()
	case PlanChoose:
		u.showPlanMode()
	case PlanDone:
		u.chat.SetPlaceholder("")
		u.closeChat()
		u.setFlash(pv.Text, present.OK)
	}
}

// openChat gives the keyboard to the chat line.
func (u *UI) openChat() {
	if u.over != nil || u.passthrough != "" {
		return
	}
	u.chatOn = true
	u.app.SetFocus(u.chat)
}

// closeChat gives the keyboard back to the panels.
func (u *UI) closeChat() {
	u.chatOn = false
	u.setPanel(u.focus)
}

// chatKeys handles keys while the chat line has the keyboard.
func (u *UI) chatKeys(ev *tcell.EventKey) *tcell.EventKey {
	switch ev.Key() {
	case tcell.KeyEsc, tcell.KeyTab:
		u.closeChat()
		return nil
	case tcell.KeyEnter:
		text := strings.TrimSpace(u.chat.GetText())
		if text == "" {
			return nil
		}
		u.chat.SetText("")
		u.sendChat(text)
		return nil
	}
	// A copy: Ctrl-C here edits nothing and must not stop the app.
	return tcell.NewEventKey(ev.Key(), ev.Rune(), ev.Modifiers())
}

// sendChat sends a chat line: the goal while there is none, otherwise
// typed into the focused agent (the Plan Agent while planning).
func (u *UI) sendChat(text string) {
	if u.planning() && u.plan.Stage == PlanGoal {
		u.o.Planner.Act(PlanAction{Kind: ActGoal, Text: text})
		u.setFlash("plan: starting the Plan Agent", present.Normal)
		return
	}
	id := u.selAgent
	if u.planning() && u.plan.Agent != "" {
		id = u.plan.Agent
	} else if a := u.currentAgent(); a != "" {
		id = a
	}
	if id == "" {
		u.setFlash("no agent to send to: select one first", present.Warn)
		return
	}
	u.setFlash("sending to "+id+"…", present.Normal)
	u.work(func(ctx context.Context) func() {
		err := u.eng.Do(ctx, orchestrator.Command{Kind: orchestrator.CmdType, AgentID: id, Text: text})
		return func() {
			msg, class := "sent to "+id, present.OK
			if err != nil {
				msg, class = "not sent: "+err.Error(), present.Err
			}
			u.pumpApply(func() { u.setFlash(msg, class) })
		}
	})
}

// showPlanReview is the review dialog: what remains, and what to do.
func (u *UI) showPlanReview() {
	var b strings.Builder
	fmt.Fprintf(&b, "TASK REVIEW — iteration %d/%d\n\n", u.plan.Iteration, u.plan.Max)
	if u.plan.Text != "" {
		b.WriteString(u.plan.Text + "\n\n")
	}
	for _, v := range u.plan.Violations {
		b.WriteString("✗ " + v + "\n")
	}
	acts := []string{ActApply, ActRules, ActReview, ActBack}
	lines := strings.Split(b.String(), "\n")
	for i, l := range lines {
		lines[i] = present.Clean(l) // no control characters from task titles
	}
	m := tview.NewModal().SetText(strings.Join(lines, "\n")).AddButtons([]string{"Apply Fixes", "Edit Rules", "Review Again", "Back to Plan"})
	pick := func(i int) {
		if i < 0 || i >= len(acts) {
			return
		}
		u.closeOverlay()
		u.o.Planner.Act(PlanAction{Kind: acts[i]})
		if acts[i] == ActBack {
			u.plan.Stage = PlanWriting
			u.openChat()
		}
	}
	m.SetDoneFunc(func(i int, _ string) { pick(i) })
	keys := map[rune]int{'a': 0, 'e': 1, 'r': 2, 'b': 3}
	u.openOverlay(ovPlanReview, m, 100, 30, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			pick(3)
			return nil
		}
		if i, ok := keys[ev.Rune()]; ok && ev.Key() == tcell.KeyRune {
			pick(i)
			return nil
		}
		return ev
	}, nil)
}

// showPlanMode asks how to work through a valid plan.
func (u *UI) showPlanMode() {
	head := fmt.Sprintf("The plan is ready: %d task(s), all valid.", u.plan.Tasks)
	if u.plan.Text != "" {
		head = present.Clean(u.plan.Text) // a remark from the Planner: violations left, or a refused choice
	}
	text := head + "\n\nSemi-Auto: you assign tasks to agents.\nAutopilot: agents work through the ready queue alone."
	modes := []string{"semi-auto", "autopilot"}
	m := tview.NewModal().SetText(text).AddButtons([]string{"Semi-Auto", "Autopilot"})
	pick := func(i int) {
		u.closeOverlay()
		u.o.Planner.Act(PlanAction{Kind: ActMode, Text: modes[i]})
		u.setFlash("starting "+modes[i]+"…", present.Normal)
	}
	m.SetDoneFunc(func(i int, _ string) {
		if i >= 0 && i < len(modes) {
			pick(i)
		}
	})
	u.openOverlay(ovPlanMode, m, 80, 12, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyRune && (ev.Rune() == 's' || ev.Rune() == 'a') {
			pick(map[rune]int{'s': 0, 'a': 1}[ev.Rune()])
			return nil
		}
		if ev.Key() == tcell.KeyEsc {
			return nil // a mode has to be chosen; q still quits from the main view
		}
		return ev
	}, nil)
}
