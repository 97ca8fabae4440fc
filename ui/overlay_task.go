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

// failedSelected reports whether the task panel's selection is a FAILED
// task.
func (u *UI) failedSelected() bool {
	if u.focus != panelTasks || u.selTask == "" {
		return false
	}
	r, ok := u.taskRow(u.selTask)
	return ok && r.State == present.StateFailed
}

// redirectOrRetry is r: on a failed task in the task panel it sends the
// task back to pending (worktree kept); elsewhere it redirects the agent.
func (u *UI) redirectOrRetry() {
	if u.failedSelected() {
		u.retryTask()
		return
	}
	u.redirect()
}

// taskEdit is what the task form gives back.
type taskEdit struct {
	title, desc, acc string
	prio             int
	labels, deps     []string
}

// taskForm is the new-task and edit-task form.
func (u *UI) taskForm(name, title string, t beads.Task, submit func(taskEdit)) {
	f := tview.NewForm()
	f.AddInputField("Title", t.Title, 0, nil, nil)
	f.AddTextArea("Description", t.Description, 0, 4, 0, nil)
	f.AddTextArea("Acceptance", t.AcceptanceCriteria, 0, 3, 0, nil)
	prio := 2
	if name == ovEditTask {
		prio = min(max(t.Priority, 0), 4)
	}
	f.AddDropDown("Priority", []string{"P0", "P1", "P2", "P3", "P4"}, prio, nil)
	f.AddInputField("Labels", strings.Join(t.Labels, " "), 0, nil, nil)
	f.AddInputField("Blocked by (ids)", strings.Join(t.BlockedBy(), " "), 0, nil, nil)
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
		words := func(label string) []string {
			return strings.FieldsFunc(get(label), func(r rune) bool { return r == ',' || r == ' ' })
		}
		ti := strings.TrimSpace(get("Title"))
		if ti == "" {
			u.setFlash("a task needs a title", present.Warn)
			return
		}
		p, _ := f.GetFormItemByLabel("Priority").(*tview.DropDown).GetCurrentOption()
		u.closeOverlay()
		submit(taskEdit{title: ti, desc: get("Description"), acc: get("Acceptance"), prio: p, labels: words("Labels"), deps: words("Blocked by (ids)")})
	}
	f.AddButton("Save", save).AddButton("Cancel", u.closeOverlay)
	f.SetBorder(true).SetTitle(" " + present.Clean(title) + " (Esc cancels) ")
	f.SetCancelFunc(u.closeOverlay)
	u.openOverlay(name, f, 90, 26, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyCtrlS {
			save()
			return nil
		}
		return ev
	}, nil)
}

func (u *UI) newTask() {
	u.taskForm(ovNewTask, "New task", beads.Task{}, func(e taskEdit) {
		u.createTask(e.title, beads.CreateOptions{Priority: e.prio, PrioritySet: true, Description: e.desc, Acceptance: e.acc, Labels: e.labels, Deps: e.deps})
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
	u.taskForm(ovEditTask, "Edit "+id, old, func(e taskEdit) {
		labels, deps := e.labels, e.deps
		if labels == nil {
			labels = []string{}
		}
		if deps == nil {
			deps = []string{}
		}
		c := orchestrator.Command{Kind: orchestrator.CmdEdit, TaskID: id, Title: &e.title, Description: &e.desc, Acceptance: &e.acc,
			Priority: &e.prio, Labels: &labels, Deps: &deps}
		ot, od, oa, op := old.Title, old.Description, old.AcceptanceCriteria, old.Priority
		ol, odeps := append([]string{}, old.Labels...), append([]string{}, old.BlockedBy()...)
		msg := "saved " + id
		if r, ok := u.taskRow(id); ok && r.State == present.StateRunning {
			msg += "; its agent restarts with the new text"
		}
		cmds := []orchestrator.Command{c}
		if r, ok := u.taskRow(id); ok && r.State == present.StateFailed {
			// e on a failed task: edit, then retry with the new text.
			cmds, msg = append(cmds, orchestrator.Command{Kind: orchestrator.CmdRetry, TaskID: id}), msg+"; back to pending"
		}
		u.sendUndoable(cmds, msg, undoEntry{desc: "edit " + id, cmds: []orchestrator.Command{{Kind: orchestrator.CmdEdit, TaskID: id, Title: &ot, Description: &od, Acceptance: &oa,
			Priority: &op, Labels: &ol, Deps: &odeps}}})
	})
}
