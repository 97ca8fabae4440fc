package ui

import (
	"fmt"
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"
	"unicode/utf8"

	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// build creates the main view. Event goroutine (or before Run).
func (u *UI) build() {
	// The host terminal's colours show through everywhere.
	tview.Styles.PrimitiveBackgroundColor = tcell.ColorDefault
	tview.Styles.ContrastBackgroundColor = tcell.ColorDefault
	tview.Styles.MoreContrastBackgroundColor = tcell.ColorDefault
	if u.theme.noColor {
		tview.Styles.BorderColor = tcell.ColorDefault
		tview.Styles.TitleColor = tcell.ColorDefault
		tview.Styles.PrimaryTextColor = tcell.ColorDefault
		tview.Styles.SecondaryTextColor = tcell.ColorDefault
		tview.Styles.TertiaryTextColor = tcell.ColorDefault
		tview.Styles.GraphicsColor = tcell.ColorDefault
	}
	pinned, optional := hints(u.keys.table, u.o.Config.TUI.PrefixKey)
	u.header = newLineView(&u.theme, func(w int) present.Line {
		head := present.Header(u.o.Version, u.vm.snap, len(u.vm.tasks), u.passthrough, u.phase())
		return present.Fit(w, []present.Line{head, present.HeaderTail()}, present.Cut{})
	})
	// "? help" is never cut: the optional hints go first, then a message.
	u.footer = newLineView(&u.theme, func(w int) present.Line {
		status := present.Footer(u.vm.counts, u.vm.snap, u.vm.runtime)
		if u.passthrough != "" {
			return present.FooterBar(status, u.flash, "", "keys go to "+u.passthrough+"; "+u.o.Config.TUI.PrefixKey+" gives them back", w)
		}
		return present.FooterBar(status, u.flash, optional, pinned, w)
	})
	// tview's every draw clears the screen first: boxes of the main view
	// do not fill their area with the same blanks again (clearBox).
	u.taskList = &taskList{Box: clearBox(), u: u}
	u.taskList.SetBorder(true)
	u.grid = &gridView{Box: quietBox(), u: u}
	u.grid.SetBorder(true)
	u.body = tview.NewFlex().
		AddItem(u.taskList, 0, 0, false).
		AddItem(u.grid, 0, 1, true)
	u.chat = tview.NewInputField().SetLabel("> ")
	u.chat.SetFieldBackgroundColor(tcell.ColorDefault)
	u.main = tview.NewFlex().SetDirection(tview.FlexRow).
		AddItem(u.header, 1, 0, false).
		AddItem(u.body, 0, 1, true).
		AddItem(u.chat, 0, 0, false).
		AddItem(u.footer, 1, 0, false)
	u.pages = tview.NewPages()
	u.pages.Box = clearBox()
	u.pages.AddPage("main", u.main, true, true)
	u.app.SetRoot(u.pages, true)
	u.app.SetBeforeDrawFunc(func(s tcell.Screen) bool {
		if u.painter != nil {
			// tview sized the root from the screen as this draw began.
			_, _, w, h := u.pages.GetRect()
			u.painter.Drawn(w, h)
		}
		u.sizeBody(s)
		return false
	})
	u.app.SetFocus(u.taskList)
}

// sizeBody gives the task panel a third of the width (at most 48 columns)
// and hides it while an agent is full screen.
func (u *UI) sizeBody(s tcell.Screen) {
	w, _ := s.Size()
	tw := min(48, max(28, w/3))
	if u.full || w < 60 {
		tw = 0
	}
	u.body.ResizeItem(u.taskList, tw, 0)
	// The chat line shows while it is in use and all through planning.
	ch := 0
	if u.chatOn || u.planning() {
		ch = 1
	}
	u.main.ResizeItem(u.chat, ch, 0)
}

// setModel installs a view model from the pump. Event goroutine.
func (u *UI) setModel(vm viewModel) {
	u.vm = vm
	// Keep selections valid: agents that left, tasks that moved.
	if u.selAgent != "" && u.agentIndex(u.selAgent) < 0 {
		u.selAgent = ""
	}
	if u.selAgent == "" && len(vm.agents) > 0 {
		u.selAgent = vm.agents[0]
	}
	if u.passthrough != "" && (vm.tiles[u.passthrough] == nil || vm.done[u.passthrough]) {
		u.endPassthrough()
		u.setFlash("the agent you were typing to has finished", present.Warn)
	}
	if u.selectedRow() < 0 {
		u.selTask = ""
		for _, r := range vm.rows {
			if r.Selectable {
				u.selTask = r.ID
				break
			}
		}
	}
	u.clearAnswered()
	if u.over != nil && u.over.refresh != nil {
		u.over.refresh()
	}
}

func (u *UI) setFlash(text string, c present.Class) {
	u.flash, u.flashNeeds = present.Seg{Text: text, Class: c}, ""
}

// clearAnswered drops a NEEDS HELP / NEEDS HUMAN message once no agent of
// its task waits for a person any more (answered, cleared, gone).
func (u *UI) clearAnswered() {
	if u.flashNeeds == "" {
		return
	}
	for _, a := range u.vm.snap.Agents {
		if a.TaskID == u.flashNeeds && (a.Status == orchestrator.AgentNeedsHelp || a.Status == orchestrator.AgentNeedsHuman || a.Stuck != "") {
			return
		}
	}
	u.setFlash("", present.Normal)
}

// capture is the application's key hook: the key after the prefix key,
// pass-through, the prefix key itself (from every screen: overlays and
// the chat line give way to it), then overlays, the chat line and the key
// table.
func (u *UI) capture(ev *tcell.EventKey) *tcell.EventKey {
	u.keySeq.Add(1)
	if u.keyDone != nil {
		defer func() { u.keyDone <- struct{}{} }()
	}
	isPrefix := specOf(ev) == u.prefix
	if u.copying != "" {
		if t := u.tileFor(u.copying); t != nil && t.InCopy() && !isPrefix {
			if !t.CopyKey(ev) {
				u.copying = ""
			}
			return nil
		} else if t != nil {
			t.LeaveCopy()
		}
		u.copying = ""
	}
	if to := u.prefixTo; to != "" {
		// As in tmux, the prefix key then [ is copy mode.
		u.prefixTo = ""
		if isCopyKey(ev) && u.passthrough == to {
			u.endPassthrough()
			u.enterCopy(to)
			return nil
		}
	}
	if from := u.prefixFrom; from != "" {
		// The prefix key just ended typing into from: as in tmux, the
		// prefix again is for the agent, d asks whether to detach.
		u.prefixFrom = ""
		if isPrefix && u.tileFor(from) != nil {
			u.selAgent = from
			u.startPassthrough()
			return tcell.NewEventKey(ev.Key(), ev.Rune(), ev.Modifiers())
		}
		if isCopyKey(ev) && u.tileFor(from) != nil {
			u.enterCopy(from)
			return nil
		}
		if u.attached && u.over == nil && ev.Key() == tcell.KeyRune && ev.Rune() == 'd' && ev.Modifiers()&tcell.ModAlt == 0 {
			u.askQuitAttached()
			return nil
		}
	}
	if u.passthrough != "" {
		if isPrefix {
			u.prefixFrom = u.passthrough
			u.endPassthrough()
			return nil
		}
		// A copy, so that tview's own Ctrl-C handling (which compares
		// with the original event) never stops the app: Ctrl-C belongs to
		// the agent here.
		return tcell.NewEventKey(ev.Key(), ev.Rune(), ev.Modifiers())
	}
	if isPrefix {
		u.closeOverlay()
		if u.chatOn {
			u.closeChat()
		}
		u.startPassthrough()
		u.prefixTo = u.passthrough
		return nil
	}
	if u.over == nil && u.chatOn {
		return u.chatKeys(ev)
	}
	if u.over != nil {
		if ev.Key() == tcell.KeyCtrlC {
			u.closeOverlay()
			return nil
		}
		if u.over.keys != nil {
			if ev = u.over.keys(ev); ev == nil {
				return nil
			}
		}
		return tcell.NewEventKey(ev.Key(), ev.Rune(), ev.Modifiers())
	}
	if a := u.keys.lookup(ev); a != nil {
		u.flash = present.Seg{}
		a.Run(u, ev)
	}
	return nil
}

// Selection helpers. Event goroutine.

// running is the grid's agents without the finished ones kept on view.
func (u *UI) running() []string {
	ids := make([]string, 0, len(u.vm.agents))
	for _, id := range u.vm.agents {
		if !u.vm.done[id] {
			ids = append(ids, id)
		}
	}
	return ids
}

func (u *UI) agentIndex(id string) int {
	for i, a := range u.vm.agents {
		if a == id {
			return i
		}
	}
	return -1
}

func (u *UI) selectedRow() int {
	for i, r := range u.vm.rows {
		if r.ID == u.selTask {
			return i
		}
	}
	return -1
}

func (u *UI) setPanel(p panel) {
	u.focus = p
	if u.chatOn {
		u.app.SetFocus(u.chat)
	} else if p == panelTasks {
		u.app.SetFocus(u.taskList)
	} else if u.passthrough == "" {
		u.app.SetFocus(u.grid)
	}
}

func (u *UI) togglePanel() {
	if u.focus == panelTasks {
		u.setPanel(panelAgents)
	} else {
		u.setPanel(panelTasks)
	}
}

func (u *UI) move(d int) {
	if u.focus == panelAgents || u.full {
		i := u.agentIndex(u.selAgent) + d
		if i >= 0 && i < len(u.vm.agents) {
			u.selAgent = u.vm.agents[i]
		}
		return
	}
	u.moveTask(d)
}

// moveTask moves the task selection, skipping rows that cannot be
// selected (deferred tasks).
func (u *UI) moveTask(d int) {
	i := u.selectedRow()
	for j := i + d; j >= 0 && j < len(u.vm.rows); j += d {
		if u.vm.rows[j].Selectable {
			u.selTask = u.vm.rows[j].ID
			return
		}
	}
}

func (u *UI) quickSelect(n int) {
	if u.focus == panelAgents || u.full {
		if n < len(u.vm.agents) {
			u.selAgent = u.vm.agents[n]
		}
		return
	}
	k := 0
	for _, r := range u.vm.rows {
		if !r.Selectable {
			continue
		}
		if k == n {
			u.selTask = r.ID
			return
		}
		k++
	}
}

// currentAgent is the agent keys act on: the selected tile in the agent
// panel, or the agent of the selected task in the task panel.
func (u *UI) currentAgent() string {
	if u.focus == panelTasks && !u.full {
		if r := u.selectedRow(); r >= 0 {
			return u.vm.rows[r].Agent
		}
		return ""
	}
	return u.selAgent
}

// currentTask is the task keys act on: the selected task, or the task of
// the selected agent in the agent panel.
func (u *UI) currentTask() string {
	if u.focus == panelAgents || u.full {
		if a := u.vm.snap.Agents[u.selAgent]; a != nil {
			return a.TaskID
		}
		return ""
	}
	return u.selTask
}

func (u *UI) startPassthrough() {
	id := u.currentAgent()
	if id == "" {
		id = u.selAgent
	}
	t := u.tileFor(id)
	if t == nil {
		u.setFlash("no agent selected to type to", present.Warn)
		return
	}
	if u.vm.done[id] {
		u.selAgent = id
		u.setFlash(id+" has finished: [ reads its screen, X closes its tile", present.Warn)
		return
	}
	u.selAgent = id
	u.focus = panelAgents
	u.passthrough = id
	u.app.SetFocus(t)
}

func (u *UI) endPassthrough() {
	u.passthrough = ""
	u.app.SetFocus(u.grid)
}

func (u *UI) toggleFull() {
	if len(u.vm.agents) == 0 {
		u.setFlash("no agent to show", present.Warn)
		return
	}
	if id := u.currentAgent(); id != "" {
		u.selAgent = id
	}
	u.full = !u.full
	if u.full {
		u.focus = panelAgents
	}
}

// scrollAgent reads the selected agent's history from the keyboard
// (PgUp back, PgDn forward; any key typed to it returns to live output).
func (u *UI) scrollAgent(k tcell.Key) {
	id := u.currentAgent()
	if id == "" {
		id = u.selAgent
	}
	t := u.tileFor(id)
	if t == nil {
		u.setFlash("no agent selected to scroll", present.Warn)
		return
	}
	u.selAgent = id
	if k == tcell.KeyPgUp {
		t.Scroll(1)
	} else {
		t.Scroll(-1)
	}
}

// isCopyKey reports whether ev is [, the key (after the prefix key) that
// starts copy mode.
func isCopyKey(ev *tcell.EventKey) bool {
	return ev.Key() == tcell.KeyRune && ev.Rune() == '[' && ev.Modifiers()&tcell.ModAlt == 0
}

// enterCopy puts agent id's tile in copy mode: its history read, searched
// and selected from the keyboard, the selection copied to the clipboard
// with OSC 52 (through tcell, which owns the terminal).
func (u *UI) enterCopy(id string) {
	if id == "" {
		id = u.currentAgent()
	}
	if id == "" {
		id = u.selAgent
	}
	t := u.tileFor(id)
	if t == nil {
		u.setFlash("no agent selected to copy from", present.Warn)
		return
	}
	u.closeOverlay()
	if u.chatOn {
		u.closeChat()
	}
	u.selAgent = id
	u.copying = id
	t.EnterCopy(func(text string) {
		u.screen.SetClipboard([]byte(text))
		u.setFlash(fmt.Sprintf("copied %d characters to the clipboard", utf8.RuneCountInString(text)), present.Normal)
	})
	u.setFlash("copy mode: ↑↓ PgUp/PgDn g/G move · / ? search, n/N next · v select · Enter copy · q leave", present.Normal)
}

// closeFinished closes the selected finished agent's tile.
func (u *UI) closeFinished() {
	id := u.selAgent
	if !u.vm.done[id] {
		u.setFlash("X closes a finished agent's tile; the selected agent is running", present.Warn)
		return
	}
	u.toPump(func() { u.dismissFinished(id) })
}

func (u *UI) cycleGrid() {
	u.full = false
	u.gridSpec = present.NextGrid(u.gridSpec)
	u.setFlash("grid: "+u.gridSpec, present.Normal)
}

// clearBox is a box that leaves its area as the screen's clear left it:
// a tview box fills it with blanks cell by cell, each through tcell's
// grapheme parsing, and the pages' box over the whole screen was over a
// quarter of an attach's first draw (perf, 8 agents on 200x60). Only for
// what is drawn on the cleared screen, never over something (an
// overlay). (tview sets no-clear only on its containers, so one of their
// boxes is borrowed.)
func clearBox() *tview.Box { return tview.NewFlex().Box }

// quietBox is a bordered box that does not paint its background: the
// grid and the tiles cover every cell themselves, and painting each cell
// two or three times per frame was most of the drawing cost with busy
// tiles.
func quietBox() *tview.Box {
	b := tview.NewFlex().Box
	b.SetBorder(true)
	return b
}
