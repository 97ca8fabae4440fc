package ui

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// overlay is the one dialog shown over the main view.
type overlay struct {
	name string
	// keys sees every key first; it returns the event to pass on to the
	// focused primitive, or nil when it handled it.
	keys func(ev *tcell.EventKey) *tcell.EventKey
	// refresh re-renders after a new snapshot.
	refresh func()
}

// Overlay names (tests look for them).
const (
	ovHelp         = "help"
	ovIntervention = "intervention"
	ovMerge        = "merge"
	ovLogs         = "logs"
	ovLearnings    = "learnings"
	ovRollback     = "rollback"
	ovNewTask      = "new-task"
	ovEditTask     = "edit-task"
	ovConfirm      = "confirm"
	ovChoose       = "choose"
	ovPrompt       = "prompt"
)

// openOverlay shows p centred, w×h at most, with focus.
func (u *UI) openOverlay(name string, p tview.Primitive, w, h int, keys func(*tcell.EventKey) *tcell.EventKey, refresh func()) {
	u.closeOverlay()
	if u.screen != nil {
		sw, sh := u.screen.Size()
		w, h = min(w, sw-2), min(h, sh-2)
	}
	box := tview.NewFlex().
		AddItem(nil, 0, 1, false).
		AddItem(tview.NewFlex().SetDirection(tview.FlexRow).
			AddItem(nil, 0, 1, false).
			AddItem(p, h, 0, true).
			AddItem(nil, 0, 1, false), w, 0, true).
		AddItem(nil, 0, 1, false)
	u.pages.AddPage("overlay", box, true, true)
	u.over = &overlay{name: name, keys: keys, refresh: refresh}
	u.app.SetFocus(p)
}

func (u *UI) closeOverlay() {
	if u.over == nil {
		return
	}
	u.over = nil
	u.pages.RemovePage("overlay")
	u.setPanel(u.focus)
}

// textBox is a bordered, scrollable text overlay body.
func textBox(title string) *tview.TextView {
	tv := tview.NewTextView().SetDynamicColors(false).SetWrap(true).SetScrollable(true)
	tv.SetBorder(true).SetTitle(" " + title + " ")
	return tv
}

// closeKeys closes the overlay on Esc or any of extra.
func (u *UI) closeKeys(extra ...rune) func(ev *tcell.EventKey) *tcell.EventKey {
	return func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			u.closeOverlay()
			return nil
		}
		if ev.Key() == tcell.KeyRune {
			for _, r := range extra {
				if ev.Rune() == r {
					u.closeOverlay()
					return nil
				}
			}
		}
		return viKeys(ev)
	}
}

// confirm asks before a dangerous action; y or the button confirms.
func (u *UI) confirm(question, yes string, run func()) {
	m := tview.NewModal().SetText(question).AddButtons([]string{yes, "Cancel"})
	m.SetDoneFunc(func(i int, _ string) {
		u.closeOverlay()
		if i == 0 {
			run()
		}
	})
	u.openOverlay(ovConfirm, m, 70, 9, func(ev *tcell.EventKey) *tcell.EventKey {
		switch {
		case ev.Key() == tcell.KeyRune && (ev.Rune() == 'y' || ev.Rune() == 'Y'):
			u.closeOverlay()
			run()
			return nil
		case ev.Key() == tcell.KeyEsc || ev.Key() == tcell.KeyRune && (ev.Rune() == 'n' || ev.Rune() == 'N'):
			u.closeOverlay()
			return nil
		}
		return ev
	}, nil)
}

// choice is one entry of a choose list.
type choice struct {
	key         rune // shortcut; 0 numbers the entry
	label, desc string
	run         func()
}

// choose shows a list; each entry has a shortcut key, Enter picks the
// highlighted one, Esc cancels.
func (u *UI) choose(title string, items []choice) {
	l := tview.NewList().ShowSecondaryText(true)
	l.SetBorder(true).SetTitle(" " + present.Clean(title) + " ")
	byKey := map[rune]func(){}
	for i, it := range items {
		it := it
		sc := it.key
		if sc == 0 && i < 9 {
			sc = rune('1' + i)
		}
		pick := func() {
			u.closeOverlay()
			it.run()
		}
		if sc != 0 {
			byKey[sc] = pick
		}
		l.AddItem(present.Clean(it.label), present.Clean(it.desc), sc, pick)
	}
	u.openOverlay(ovChoose, l, 80, min(4+2*len(items), 24), func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			u.closeOverlay()
			return nil
		}
		if ev.Key() == tcell.KeyRune {
			if pick := byKey[ev.Rune()]; pick != nil {
				pick()
				return nil
			}
		}
		return viKeys(ev)
	}, nil)
}

// prompt asks for one line of text.
func (u *UI) prompt(title, label, initial, button string, done func(string)) {
	f := tview.NewForm()
	f.AddInputField(label, initial, 0, nil, nil)
	submit := func() {
		text := f.GetFormItem(0).(*tview.InputField).GetText()
		u.closeOverlay()
		done(text)
	}
	f.AddButton(button, submit).AddButton("Cancel", u.closeOverlay)
	f.SetBorder(true).SetTitle(" " + present.Clean(title) + " ")
	f.SetCancelFunc(u.closeOverlay)
	u.openOverlay(ovPrompt, f, 80, 7, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEnter {
			if _, ok := u.app.GetFocus().(*tview.InputField); ok {
				submit()
				return nil
			}
		}
		return ev
	}, nil)
}

// showHelp is the key table as text.
func (u *UI) showHelp() {
	tv := textBox("KEYBOARD SHORTCUTS (Esc closes)")
	text := helpText(u.keys.table, u.o.Config.TUI.PrefixKey)
	tv.SetText(text)
	// As tall as the text (the screen bounds it; the box scrolls).
	u.openOverlay(ovHelp, tv, 72, strings.Count(text, "\n")+3, u.closeKeys('?', 'q'), nil)
}

// showIntervention is the seed's intervention dialog.
func (u *UI) showIntervention() {
	tv := textBox("INTERVENTION (Esc closes)")
	render := func() {
		var b strings.Builder
		b.WriteString("Active agents:\n")
		if len(u.vm.agents) == 0 {
			b.WriteString("  (none)\n")
		}
		for i, id := range u.vm.agents {
			a := u.vm.snap.Agents[id]
			mark := "  "
			if id == u.selAgent {
				mark = "▶ "
			}
			fmt.Fprintf(&b, "%s%d. %s (%s) - iter %d/%d - %s %s", mark, i+1, a.Type, a.TaskID, a.Iteration,
				u.o.Config.Completion.MaxIterations, a.Status, present.Duration(u.vm.now.Sub(a.StartedAt)))
			if a.Question != "" {
				fmt.Fprintf(&b, "\n     NEEDS HELP: %s", a.Question)
				for i, o := range a.Options {
					fmt.Fprintf(&b, "\n       %d) %s", i+1, o)
				}
			}
			if a.Stuck != "" {
				fmt.Fprintf(&b, "\n     NEEDS HUMAN: %s\n     (focus it with its number and answer in its terminal)", a.Stuck)
			} else if a.Alert != "" {
				fmt.Fprintf(&b, "\n     ⚠ %s", a.Alert)
			}
			b.WriteString("\n")
		}
		pause := "Pause all      - no new agents; running ones finish their iteration"
		if u.vm.snap.Paused {
			pause = "Resume         - start agents again"
		}
		fmt.Fprintf(&b, "\nActions:\n  [p] %s\n  [1-9] Focus agent - view its full output\n", pause)
		b.WriteString("  [x] Stop agent     - the selected (▶) one\n  [r] Redirect       - assign it to a different task\n")
		b.WriteString("  [R] Rollback       - revert its commits\n  [a] Answer         - reply to its NEEDS_HELP question\n")
		b.WriteString("  [t] Retry task     - a failed or blocked task back to pending\n")
		if a := u.vm.snap.Agents[u.selAgent]; a != nil && stuckAlert(a.Alert) {
			b.WriteString("  [s] Stuck          - continue, redirect or stop the selected agent\n")
		}
		if m := u.vm.snap.Merge.Stats.Moved; m != nil {
			fmt.Fprintf(&b, "  [A] Accept target  - it moved outside Chorus (%.10s → %.10s); merges wait\n", m.From, m.To)
		}
		b.WriteString("  [Esc] Close\n")
		tv.SetText(present.Block(b.String()))
	}
	render()
	u.openOverlay(ovIntervention, tv, 90, 30, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			u.closeOverlay()
			return nil
		}
		if ev.Key() != tcell.KeyRune {
			return nil
		}
		switch r := ev.Rune(); {
		case r == 'p':
			u.closeOverlay()
			u.togglePause()
		case r >= '1' && r <= '9':
			if i := int(r - '1'); i < len(u.vm.agents) {
				u.selAgent = u.vm.agents[i]
				u.focus = panelAgents
				u.full = true
				u.closeOverlay()
			}
		case r == 'x', r == 'r', r == 'R', r == 'a':
			if u.selAgent == "" {
				u.setFlash("no agent to act on", present.Warn)
				return nil
			}
			u.focus = panelAgents
			u.closeOverlay()
			switch r {
			case 'x':
				u.stopAgent()
			case 'r':
				u.redirect()
			case 'R':
				u.showRollback()
			case 'a':
				u.answer()
			}
		case r == 's':
			if a := u.vm.snap.Agents[u.selAgent]; a != nil && stuckAlert(a.Alert) {
				u.closeOverlay()
				u.stuckMenu(a.ID, a.Alert)
			}
		case r == 't':
			u.closeOverlay()
			u.retryTask()
		case r == 'A':
			u.closeOverlay()
			u.acceptTarget()
		}
		return nil
	}, render)
}

// answer sends a reply to the selected agent's NEEDS_HELP question.
func (u *UI) answer() {
	id := u.selAgent
	a := u.vm.snap.Agents[id]
	if a == nil || a.Status != orchestrator.AgentNeedsHelp {
		u.setFlash(id+" has not asked anything", present.Warn)
		return
	}
	if len(a.Options) > 0 {
		u.answerOptions(id, a)
		return
	}
	u.prompt(id+" asks: "+present.Clean(a.Question), "Answer", "", "Send", func(text string) {
		if strings.TrimSpace(text) == "" {
			u.setFlash("empty answer not sent", present.Warn)
			return
		}
		u.send(orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: id, Text: text}, "answer sent to "+id, nil)
	})
}

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

// showMerge is the merge queue: items, their status, and the actions a
// person can take on them.
func (u *UI) showMerge() {
	tv := textBox("MERGE QUEUE (Esc closes)")
	sel := 0
	render := func() {
		items := u.vm.snap.Merge.Items
		sel = max(0, min(sel, len(items)-1))
		var b strings.Builder
		st := u.vm.snap.Merge.Stats
		fmt.Fprintf(&b, "%d queued · %d auto merges · %d manual · %d conflicts (%d resolved by agents)", present.MergeQueued(u.vm.snap.Merge), st.MergesAuto, st.MergesManual, st.Conflicts, st.Resolved)
		if st.Paused {
			fmt.Fprintf(&b, " · PAUSED: %s", st.PauseReason)
		}
		if st.Moved != nil {
			fmt.Fprintf(&b, "\n[A] accept the target's new tip %.10s and resume merging", st.Moved.To)
		}
		b.WriteString("\n\n")
		if len(items) == 0 {
			b.WriteString("  (empty)\n")
		}
		for i, it := range items {
			mark := "  "
			if i == sel {
				mark = "▶ "
			}
			fmt.Fprintf(&b, "%s%-10s %-16s %s", mark, it.TaskID, it.Status, it.Title)
			if it.Retries > 0 {
				fmt.Fprintf(&b, " (retries %d)", it.Retries)
			}
			if it.TaskID == u.vm.snap.Merge.Current {
				b.WriteString(" ◀ working")
			}
			b.WriteString("\n")
			if i == sel {
				if it.LastError != "" {
					fmt.Fprintf(&b, "      error: %s\n", firstLines(it.LastError, 3))
				}
				if len(it.ConflictFiles) > 0 {
					fmt.Fprintf(&b, "      conflicts: %s\n", strings.Join(it.ConflictFiles, ", "))
				}
				if it.Explanation != "" {
					fmt.Fprintf(&b, "      resolver: %s\n", firstLines(it.Explanation, 3))
				}
				if it.Action != "" {
					fmt.Fprintf(&b, "      to do: %s\n", it.Action)
				}
			}
		}
		approval := "approval is not required (merge.requireApproval is off)"
		if u.o.Config.Merge.RequireApproval {
			approval = "approve the selected merge"
		}
		fmt.Fprintf(&b, "\n[j/k] select  [v] view its changes  [m] %s  [t] try again  [D] drop from the queue  [Esc] close\n", approval)
		tv.SetText(present.Block(b.String()))
	}
	render()
	current := func() (merge.Item, bool) {
		items := u.vm.snap.Merge.Items
		if sel < len(items) {
			return items[sel], true
		}
		return merge.Item{}, false
	}
	u.openOverlay(ovMerge, tv, 110, 30, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			u.closeOverlay()
			return nil
		}
		r := ev.Rune()
		switch {
		case ev.Key() == tcell.KeyDown || r == 'j':
			sel++
		case ev.Key() == tcell.KeyUp || r == 'k':
			sel--
		case r == 'm':
			it, ok := current()
			switch {
			case !ok:
			case !u.o.Config.Merge.RequireApproval:
				u.setFlash("merges land without approval here (merge.requireApproval is off)", present.Warn)
			case it.Status != merge.StatusWaitingApproval:
				u.setFlash(it.TaskID+" is not waiting for approval ("+string(it.Status)+")", present.Warn)
			default:
				u.send(orchestrator.Command{Kind: orchestrator.CmdApprove, TaskID: it.TaskID}, "approved "+it.TaskID, nil)
			}
		case r == 'A':
			u.acceptTarget()
			return nil
		case r == 'v':
			if it, ok := current(); ok {
				u.showDiff(it.TaskID)
			}
			return nil
		case r == 't':
			if it, ok := current(); ok {
				u.send(orchestrator.Command{Kind: orchestrator.CmdMergeRetry, TaskID: it.TaskID}, "merge of "+it.TaskID+" tried again", nil)
			}
		case r == 'D':
			if it, ok := current(); ok {
				u.confirm("Drop "+it.TaskID+" from the merge queue? Its branch stays.", "Drop", func() {
					u.send(orchestrator.Command{Kind: orchestrator.CmdMergeDrop, TaskID: it.TaskID}, "dropped "+it.TaskID+" from the queue", nil)
				})
				return nil
			}
		default:
			return nil
		}
		render()
		return nil
	}, render)
}

func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, " / ")
}

// showLogs is the session log, newest last, filtered by what is typed.
func (u *UI) showLogs() {
	tv := textBox("SESSION LOG")
	tv.SetWrap(false)
	filter := tview.NewInputField().SetLabel("filter: ")
	flex := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(filter, 1, 0, true).AddItem(tv, 0, 1, false)
	flex.SetBorder(true).SetTitle(" LOGS (type to filter, Esc closes) ")
	var lines []string
	render := func() {
		f := strings.ToLower(filter.GetText())
		var b strings.Builder
		for _, l := range lines {
			if f == "" || strings.Contains(strings.ToLower(l), f) {
				b.WriteString(l)
				b.WriteByte('\n')
			}
		}
		tv.SetText(b.String())
		tv.ScrollToEnd()
	}
	filter.SetChangedFunc(func(string) { render() })
	u.logView = func(l string) {
		lines = append(lines, l)
		render()
	}
	u.openOverlay(ovLogs, flex, 140, 40, func(ev *tcell.EventKey) *tcell.EventKey {
		switch ev.Key() {
		case tcell.KeyEsc:
			u.closeOverlay()
			return nil
		case tcell.KeyUp, tcell.KeyDown, tcell.KeyPgUp, tcell.KeyPgDn, tcell.KeyHome, tcell.KeyEnd:
			tv.InputHandler()(ev, func(tview.Primitive) {})
			return nil
		}
		return ev
	}, nil)
	path := u.o.Dir.SessionLog()
	u.work(func(ctx context.Context) func() {
		got, err := readLogTail(path, 3000)
		return func() {
			u.pumpApply(func() {
				if u.over == nil || u.over.name != ovLogs {
					return
				}
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					got = append(got, "reading the session log: "+err.Error())
				}
				lines = append(got, lines...)
				render()
			})
		}
	})
}

// appendLog adds a live event line to the open log view.
func (u *UI) appendLog(line string) {
	if u.over != nil && u.over.name == ovLogs && u.logView != nil {
		u.logView(line)
	}
}

// readLogTail reads the last n entries of the session log as text.
func readLogTail(path string, n int) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	const maxRead = 2 << 20
	if len(b) > maxRead {
		b = b[len(b)-maxRead:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e chorusdir.Entry
		if json.Unmarshal(sc.Bytes(), &e) != nil {
			continue
		}
		ev := orchestrator.Event{Time: e.TS, Kind: orchestrator.EventKind(e.Event)}
		ev.Agent, _ = e.Details["agentId"].(string)
		ev.Task, _ = e.Details["taskId"].(string)
		ev.Text, _ = e.Details["text"].(string)
		out = append(out, formatEvent(ev))
	}
	if len(out) > n {
		out = out[len(out)-n:]
	}
	return out, sc.Err()
}

// showLearnings shows .agent/learnings.md and .chorus/PATTERNS.md.
func (u *UI) showLearnings() {
	tv := textBox("LEARNINGS (Esc closes)")
	tv.SetText("loading…")
	u.openOverlay(ovLearnings, tv, 110, 40, u.closeKeys('q', 'L'), nil)
	paths := []string{u.o.Dir.Learnings(), u.o.Dir.Patterns()}
	u.work(func(ctx context.Context) func() {
		var b strings.Builder
		for _, p := range paths {
			data, err := os.ReadFile(p)
			fmt.Fprintf(&b, "── %s ──\n", p)
			switch {
			case errors.Is(err, os.ErrNotExist):
				b.WriteString("(none yet)\n\n")
			case err != nil:
				fmt.Fprintf(&b, "(cannot read: %v)\n\n", err)
			default:
				b.WriteString(present.Block(string(data)))
				b.WriteString("\n\n")
			}
		}
		text := b.String()
		return func() {
			u.pumpApply(func() {
				if u.over != nil && u.over.name == ovLearnings {
					tv.SetText(text)
				}
			})
		}
	})
}

// showRollback is the rollback menu: the four levels, each with what it
// would revert for the current selection.
func (u *UI) showRollback() {
	tv := textBox("ROLLBACK (Esc closes)")
	agentID := u.currentAgent()
	if agentID == "" {
		agentID = u.selAgent
	}
	taskID := u.currentTask()
	var (
		deps     []string
		depsErr  error
		cps      []merge.Checkpoint
		cpsErr   error
		loaded   bool
		cpSel    int
		landedOf = map[string]bool{}
	)
	for _, it := range u.vm.snap.Merge.Items {
		if it.Status == merge.StatusLanded {
			landedOf[it.TaskID] = true
		}
	}
	render := func() {
		var b strings.Builder
		b.WriteString("Choose a level (1-4); each asks before it acts.\n\n")
		a := u.vm.snap.Agents[agentID]
		if a != nil {
			base := ""
			if tr := u.vm.snap.Tasks[a.TaskID]; tr != nil && tr.IterationBase != "" {
				base = " (commit " + short(tr.IterationBase) + ")"
			}
			fmt.Fprintf(&b, "[1] SINGLE ITERATION\n    %s on %s: reset its worktree to where iteration %d started%s;\n    the agent retries the same task.\n\n", agentID, a.TaskID, a.Iteration, base)
		} else {
			b.WriteString("[1] SINGLE ITERATION\n    (select a running agent first)\n\n")
		}
		if taskID != "" {
			landed := ""
			if !landedOf[taskID] {
				landed = " (not landed in this session's queue; only merged commits are reverted)"
			}
			fmt.Fprintf(&b, "[2] SINGLE TASK\n    revert every merged commit of %s on the target branch; %s → pending%s.\n\n", taskID, taskID, landed)
			fmt.Fprintf(&b, "[3] TASK + DEPENDENTS\n    revert %s", taskID)
			switch {
			case !loaded:
				b.WriteString(" and its dependents (looking them up…)")
			case depsErr != nil:
				fmt.Fprintf(&b, " (dependents unknown: %v)", depsErr)
			case len(deps) == 0:
				b.WriteString(" (no dependents landed)")
			default:
				fmt.Fprintf(&b, " and, newest first, %s", strings.Join(deps, ", "))
			}
			b.WriteString("; all → pending.\n\n")
		} else {
			b.WriteString("[2] SINGLE TASK\n    (select a task first)\n\n[3] TASK + DEPENDENTS\n    (select a task first)\n\n")
		}
		b.WriteString("[4] FULL SESSION\n    reset the target branch to a checkpoint; every task landed since → pending.\n")
		switch {
		case !loaded:
			b.WriteString("    (listing checkpoints…)\n")
		case cpsErr != nil:
			fmt.Fprintf(&b, "    (checkpoints unavailable: %v)\n", cpsErr)
		case len(cps) == 0:
			b.WriteString("    (no checkpoints yet; c creates one)\n")
		default:
			for i, c := range cps {
				mark := "  "
				if i == cpSel {
					mark = "▶ "
				}
				fmt.Fprintf(&b, "    %s%s  %s  %s\n", mark, c.Time.Local().Format("2006-01-02 15:04"), short(c.Commit), strings.TrimPrefix(c.Ref, merge.CheckpointPrefix))
			}
			b.WriteString("    (j/k picks the checkpoint)\n")
		}
		tv.SetText(present.Block(b.String()))
	}
	render()
	rollback := func(level int) {
		c := orchestrator.Command{Kind: orchestrator.CmdRollback, Level: level}
		var what string
		switch level {
		case 1:
			if u.vm.snap.Agents[agentID] == nil {
				u.setFlash("no running agent selected", present.Warn)
				return
			}
			c.AgentID, what = agentID, "the current iteration of "+agentID
		case 2, 3:
			if taskID == "" {
				u.setFlash("no task selected", present.Warn)
				return
			}
			c.TaskID, what = taskID, taskID
			if level == 3 {
				what += " and its dependents"
			}
		case 4:
			if cpSel >= len(cps) {
				u.setFlash("no checkpoint to go back to", present.Warn)
				return
			}
			c.Text, what = cps[cpSel].Ref, "the target branch to "+cps[cpSel].Ref
		}
		u.confirm(fmt.Sprintf("Roll back %s (level %d)?", what, level), "Roll back", func() {
			u.send(c, fmt.Sprintf("rollback level %d done", level), nil)
		})
	}
	u.openOverlay(ovRollback, tv, 100, 30, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc {
			u.closeOverlay()
			return nil
		}
		switch r := ev.Rune(); {
		case ev.Key() == tcell.KeyDown || r == 'j':
			cpSel = min(cpSel+1, max(0, len(cps)-1))
			render()
		case ev.Key() == tcell.KeyUp || r == 'k':
			cpSel = max(cpSel-1, 0)
			render()
		case r >= '1' && r <= '4':
			rollback(int(r - '0'))
		}
		return nil
	}, nil)
	u.work(func(ctx context.Context) func() {
		var d []string
		var derr error
		if taskID != "" {
			d, derr = u.eng.Dependents(ctx, taskID)
		}
		c, cerr := u.eng.Checkpoints(ctx)
		return func() {
			u.pumpApply(func() {
				deps, depsErr, cps, cpsErr, loaded = d, derr, c, cerr, true
				if u.over != nil && u.over.name == ovRollback {
					render()
				}
			})
		}
	})
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
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

// startQuitWait begins "wait for the agents": quit when none runs, or
// when the grace period ends. Pump only.
func (u *UI) startQuitWait(grace time.Duration) {
	if u.snap.Running == 0 {
		u.quit()
		return
	}
	u.waitQuit = time.After(grace)
}

// viKeys turns j and k into down and up, for lists in overlays.
func viKeys(ev *tcell.EventKey) *tcell.EventKey {
	if ev.Key() == tcell.KeyRune {
		switch ev.Rune() {
		case 'j':
			return tcell.NewEventKey(tcell.KeyDown, 0, tcell.ModNone)
		case 'k':
			return tcell.NewEventKey(tcell.KeyUp, 0, tcell.ModNone)
		}
	}
	return ev
}

// acceptTarget releases a merge queue held because the target branch moved
// outside Chorus, after the user confirms the tip they accept.
func (u *UI) acceptTarget() {
	m := u.vm.snap.Merge.Stats.Moved
	if m == nil {
		u.setFlash("the merge queue is not held for a moved target", present.Warn)
		return
	}
	to := m.To
	u.confirm(fmt.Sprintf("Accept the target's new tip %.10s (moved from %.10s outside Chorus) and land merges on it?", to, m.From), "Accept", func() {
		u.send(orchestrator.Command{Kind: orchestrator.CmdMergeAcceptTarget, Text: to}, "target accepted; merges resume", nil)
	})
}
