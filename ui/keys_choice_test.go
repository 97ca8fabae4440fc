package ui

import (
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Enter on a task in a dependency cycle warns with the cycle and sends no
// assignment (the engine could only take the task and release it again).
func TestEnterOnCycleWarns(t *testing.T) {
	f, st, o := fixture()
	dep := func(id, on string) []beads.Dependency {
		return []beads.Dependency{{IssueID: id, DependsOnID: on, Type: "blocks"}}
	}
	st.tasks = append(st.tasks,
		beads.Task{ID: "ch-cy1", Title: "Loop one", Status: beads.StatusOpen, Priority: 1, Dependencies: dep("ch-cy1", "ch-cy2")},
		beads.Task{ID: "ch-cy2", Title: "Loop two", Status: beads.StatusOpen, Priority: 1, Dependencies: dep("ch-cy2", "ch-cy1")})
	d := startUI(t, o, 200, 45)
	d.ui(func() { d.u.focus, d.u.selTask = panelTasks, "ch-cy1" })
	d.press("<Enter>")
	var flash string
	d.ui(func() { flash = d.u.flash.Text })
	if !strings.Contains(flash, "ch-cy1 is in a dependency cycle (ch-cy1 → ch-cy2 → ch-cy1)") || !strings.Contains(flash, "chorus task dep remove ch-cy1 ch-cy2") {
		t.Fatalf("flash %q", flash)
	}
	for _, c := range f.commands() {
		if c.Kind == orchestrator.CmdAssign {
			t.Fatalf("assignment sent for a task on a cycle: %+v", c)
		}
	}
	// A task merely waiting (not on a cycle) is still sent.
	d.ui(func() { d.u.selTask = "ch-wk8" })
	d.press("<Enter>")
	sent := false
	for _, c := range f.commands() {
		sent = sent || (c.Kind == orchestrator.CmdAssign && c.TaskID == "ch-wk8")
	}
	if !sent {
		t.Fatalf("no assignment for ch-wk8: %+v", f.commands())
	}
}

// m is the mode in the main view, and approval inside the intervention
// menu (and the merge queue view); r on a failed task retries it. ?
// says so.
func TestKeyChoicesMAndR(t *testing.T) {
	f, _, o := fixture()
	o.Config.Merge.RequireApproval = true
	d := startUI(t, o, 200, 50)
	d.press("?")
	if d.overlay() != ovHelp {
		t.Fatalf("? opened %q", d.overlay())
	}
	var help string
	d.ui(func() { help = helpText(d.u.keys.table, d.u.o.Config.TUI.PrefixKey) }) // what ? shows
	for _, want := range []string{"approve the merge", "in the main view m is always the mode", "On a failed task (task panel): retry it"} {
		if !strings.Contains(help, want) {
			t.Errorf("help lacks %q:\n%s", want, help)
		}
	}
	d.press("<Esc>")
	d.press("i")
	d.expect("[m] Approve merge  - ch-mpl waits for approval")
	d.press("m")
	var approved bool
	for _, c := range f.commands() {
		approved = approved || (c.Kind == orchestrator.CmdApprove && c.TaskID == "ch-mpl")
		if c.Kind == orchestrator.CmdMode {
			t.Fatalf("m in the intervention menu changed the mode: %+v", c)
		}
	}
	if !approved {
		t.Fatalf("no approval sent: %+v", f.commands())
	}
	d.press("m")
	var mode bool
	for _, c := range f.commands() {
		mode = mode || c.Kind == orchestrator.CmdMode
	}
	if !mode {
		t.Fatalf("m in the main view sent no mode change: %+v", f.commands())
	}
	d.ui(func() { d.u.focus, d.u.selTask = panelTasks, "ch-bad" })
	d.press("r")
	var retried bool
	for _, c := range f.commands() {
		retried = retried || (c.TaskID == "ch-bad" && c.Kind != orchestrator.CmdApprove)
	}
	if !retried {
		t.Fatalf("r on the failed task sent nothing for it: %+v", f.commands())
	}
}
