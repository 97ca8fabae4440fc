// Task forms: new, edit, retry.

package ui

import (
	"strings"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// retryTask puts a failed or blocked task back to pending.
func (u *UI) retryTask() {
	id := u.selTask
	if u.focus == panelAgents {
		id = u.currentTask()
	}
	if id == "" {
		u.setFlash("no task selected", present.Warn)
		return
	}
	u.send(orchestrator.Command{Kind: orchestrator.CmdRetry, TaskID: id}, id+" back to pending", nil)
}

// taskForm is the new-task and edit-task form.
func (u *UI) taskForm(name, title string, t beads.Task, submit func(title, desc, acc string, prio int, deps []string)) {
	f := tview.NewForm()
	f.AddInputField("Title", t.Title, 0, nil, nil)
	f.AddTextArea("Description", t.Description, 0, 4, 0, nil)
	f.AddTextArea("Acceptance", t.AcceptanceCriteria, 0, 3, 0, nil)
	isNew := name == ovNewTask
	if isNew {
		f.AddDropDown("Priority", []string{"P0", "P1", "P2", "P3", "P4"}, 2, nil)
		f.AddInputField("Blocked by (ids)", "", 0, nil, nil)
	}
	save := func() {
		get := func(label string) string {
			switch it := f.GetFormItemByLabel(label).(type) {
			case *tview.InputField:
				return it.GetText()
			case *tview.TextArea:
				return it.GetText()
			}
			return ""
		}
		ti := strings.TrimSpace(get("Title"))
		if ti == "" {
			u.setFlash("a task needs a title", present.Warn)
			return
		}
		prio := 2
		var deps []string
		if isNew {
			prio, _ = f.GetFormItemByLabel("Priority").(*tview.DropDown).GetCurrentOption()
			deps = strings.FieldsFunc(get("Blocked by (ids)"), func(r rune) bool { return r == ',' || r == ' ' })
		}
		u.closeOverlay()
		submit(ti, get("Description"), get("Acceptance"), prio, deps)
	}
	f.AddButton("Save", save).AddButton("Cancel", u.closeOverlay)
	f.SetBorder(true).SetTitle(" " + present.Clean(title) + " (Esc cancels) ")
	f.SetCancelFunc(u.closeOverlay)
	u.openOverlay(name, f, 90, 22, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyCtrlS {
			save()
			return nil
		}
		return ev
	}, nil)
}

func (u *UI) newTask() {
	u.taskForm(ovNewTask, "New task", beads.Task{}, func(title, desc, acc string, prio int, deps []string) {
		u.createTask(title, beads.CreateOptions{Priority: prio, PrioritySet: true, Description: desc, Acceptance: acc, Deps: deps})
	})
}

func (u *UI) editTask() {
	id, ok := u.needTask()
	if !ok {
		return
	}
	old, ok := u.task(id)
	if !ok {
		u.setFlash(id+" is not loaded yet", present.Warn)
		return
	}
	u.taskForm(ovEditTask, "Edit "+id, old, func(title, desc, acc string, _ int, _ []string) {
		c := orchestrator.Command{Kind: orchestrator.CmdEdit, TaskID: id, Title: &title, Description: &desc, Acceptance: &acc}
		ot, od, oa := old.Title, old.Description, old.AcceptanceCriteria
		msg := "saved " + id
		if r, ok := u.taskRow(id); ok && r.State == present.StateRunning {
			msg += "; its agent restarts with the new text"
		}
		u.send(c, msg, func() {
			u.pushUndo(undoEntry{desc: "edit " + id, cmds: []orchestrator.Command{{Kind: orchestrator.CmdEdit, TaskID: id, Title: &ot, Description: &od, Acceptance: &oa}}})
		})
	})
}
