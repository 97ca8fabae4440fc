package ui

import (
	"fmt"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

	"github.com/chorus-dev/chorus/ui/present"
	"github.com/chorus-dev/chorus/ui/tile"
)

// theme maps present classes to styles. Without colour, meaning is kept
// with attributes alone (NO_COLOR).
type theme struct {
	noColor bool
	classes map[present.Class]tcell.Style
	sel     tcell.Style
}

func newTheme(noColor bool) theme {
	d := tcell.StyleDefault
	th := theme{noColor: noColor, sel: d.Reverse(true)}
	if noColor {
		th.classes = map[present.Class]tcell.Style{
			present.Normal: d, present.Dim: d.Dim(true), present.Bold: d.Bold(true), present.Accent: d.Bold(true),
			present.OK: d, present.Warn: d.Bold(true), present.Err: d.Bold(true).Underline(true),
			present.P0: d.Bold(true).Underline(true), present.P1: d.Bold(true), present.P2: d, present.P3: d, present.P4: d.Dim(true),
		}
		return th
	}
	fg := func(c tcell.Color) tcell.Style { return d.Foreground(c) }
	th.classes = map[present.Class]tcell.Style{
		present.Normal: d, present.Dim: fg(tcell.ColorGray), present.Bold: d.Bold(true), present.Accent: fg(tcell.ColorAqua),
		present.OK: fg(tcell.ColorGreen), present.Warn: fg(tcell.ColorYellow), present.Err: fg(tcell.ColorRed).Bold(true),
		present.P0: fg(tcell.ColorFuchsia).Bold(true), present.P1: fg(tcell.ColorRed), present.P2: fg(tcell.ColorOrange),
		present.P3: fg(tcell.ColorYellow), present.P4: fg(tcell.ColorBlue),
	}
	return th
}

func (th theme) style(c present.Class) tcell.Style { return th.classes[c] }

// border colours for tiles: selected, needs attention, normal.
func (th theme) tileBorder(selected, attention bool) (tcell.Color, tcell.Style) {
	switch {
	case th.noColor && attention:
		return tcell.ColorDefault, tcell.StyleDefault.Bold(true).Blink(true)
	case th.noColor && selected:
		return tcell.ColorDefault, tcell.StyleDefault.Bold(true)
	case attention:
		return tcell.ColorRed, tcell.StyleDefault.Foreground(tcell.ColorRed).Bold(true)
	case selected:
		return tcell.ColorAqua, tcell.StyleDefault.Foreground(tcell.ColorAqua).Bold(true)
	}
	return tcell.ColorGray, tcell.StyleDefault
}

// printLine draws l at (x, y) within w cells, cutting with "…" when it
// does not fit; it returns the cells used. Text reaching here is already
// sanitised. A non-default base keeps its background and reverse on
// every segment (the selected row).
func printLine(s tcell.Screen, x, y, w int, l present.Line, th theme, base tcell.Style, override bool) int {
	total := 0
	for _, seg := range l {
		total += term.StringWidth(seg.Text)
	}
	limit := w
	if total > w {
		limit = w - 1 // room for the ellipsis
	}
	used := 0
	var st tcell.Style
	for _, seg := range l {
		st = th.style(seg.Class)
		if override {
			st = base
		} else if base != tcell.StyleDefault {
			_, bg, attrs := base.Decompose()
			st = st.Background(bg).Reverse(attrs&tcell.AttrReverse != 0)
		}
		for _, r := range seg.Text {
			rw := term.RuneWidth(r)
			if rw == 0 {
				continue
			}
			if used+rw > limit {
				if total > w && used < w {
					s.SetContent(x+used, y, '…', nil, st)
					used++
				}
				return used
			}
			s.SetContent(x+used, y, r, nil, st)
			used += rw
		}
	}
	return used
}

// fill paints a row with a style.
func fill(s tcell.Screen, x, y, w int, st tcell.Style) {
	for i := 0; i < w; i++ {
		s.SetContent(x+i, y, ' ', nil, st)
	}
}

// lineView is a one-row bar (header, footer) drawn from a func so it
// always shows the current state.
type lineView struct {
	*tview.Box
	line func(w int) present.Line // fitted to w cells
	th   *theme
}

func newLineView(th *theme, line func(w int) present.Line) *lineView {
	return &lineView{Box: tview.NewBox(), line: line, th: th}
}

func (v *lineView) Draw(s tcell.Screen) {
	v.Box.DrawForSubclass(s, v)
	x, y, w, h := v.GetInnerRect()
	if h <= 0 {
		return
	}
	st := tcell.StyleDefault.Reverse(true)
	fill(s, x, y, w, st)
	printLine(s, x, y, w, v.line(w), *v.th, st, false)
}

// taskList is the task panel: two lines per task and a blank between,
// the selected task highlighted, deferred tasks dim and skipped.
type taskList struct {
	*tview.Box
	u      *UI
	offset int // first row shown
}

func (l *taskList) Draw(s tcell.Screen) {
	u := l.u
	title := fmt.Sprintf(" TASKS (%d) ", len(u.vm.rows))
	if !u.vm.loaded {
		title = " TASKS (loading…) "
	}
	l.SetTitle(title)
	l.SetBorderColor(borderColor(u, u.focus == panelTasks && !u.full))
	l.Box.DrawForSubclass(s, l)
	x, y, w, h := l.GetInnerRect()
	if w <= 0 || h <= 0 {
		return
	}
	per := 3
	if h < 12 {
		per = 2
	}
	visible := max(1, (h+1)/per)
	sel := u.selectedRow()
	if sel >= 0 {
		if sel < l.offset {
			l.offset = sel
		}
		if sel >= l.offset+visible {
			l.offset = sel - visible + 1
		}
	}
	l.offset = max(0, min(l.offset, len(u.vm.rows)-1))
	for i := l.offset; i < len(u.vm.rows); i++ {
		row := u.vm.rows[i]
		ry := y + (i-l.offset)*per
		if ry+1 >= y+h+1 {
			break
		}
		base := tcell.StyleDefault
		if i == sel {
			base = u.theme.sel
			fill(s, x, ry, w, base)
		}
		printLine(s, x, ry, w, row.Lines[0], u.theme, base, false)
		if ry+1 < y+h {
			printLine(s, x, ry+1, w, row.Lines[1], u.theme, tcell.StyleDefault, false)
		}
	}
	if len(u.vm.rows) == 0 && u.vm.loaded {
		printLine(s, x, y, w, present.Line{{Text: "no tasks; n creates one", Class: present.Dim}}, u.theme, tcell.StyleDefault, false)
	}
}

func (l *taskList) MouseHandler() func(action tview.MouseAction, event *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
	return l.WrapMouseHandler(func(action tview.MouseAction, ev *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
		mx, my := ev.Position()
		if !l.InRect(mx, my) {
			return false, nil
		}
		u := l.u
		_, y, _, h := l.GetInnerRect()
		per := 3
		if h < 12 {
			per = 2
		}
		switch action {
		case tview.MouseLeftDown:
			i := l.offset + (my-y)/per
			if my >= y && i < len(u.vm.rows) && u.vm.rows[i].Selectable {
				u.selTask = u.vm.rows[i].ID
			}
			u.setPanel(panelTasks)
			return true, nil
		case tview.MouseScrollUp:
			u.moveTask(-1)
			return true, nil
		case tview.MouseScrollDown:
			u.moveTask(1)
			return true, nil
		}
		return false, nil
	})
}

func borderColor(u *UI, focused bool) tcell.Color {
	if u.theme.noColor {
		return tcell.ColorDefault
	}
	if focused {
		return tcell.ColorAqua
	}
	return tcell.ColorGray
}

// gridView lays out the agent tiles and empty slots.
type gridView struct {
	*tview.Box
	u     *UI
	shown map[string]bool // tiles placed in the last Draw (mouse hit-testing)
}

// layout returns the grid for the current size and selection.
func (g *gridView) layout() present.Grid {
	u := g.u
	_, _, w, h := g.GetInnerRect()
	termW := w
	if u.screen != nil {
		termW, _ = u.screen.Size()
	}
	if u.full {
		return present.Layout("1x1", termW, w, h, len(u.vm.agents), 1, max(0, u.agentIndex(u.selAgent)))
	}
	return present.Layout(u.gridSpec, termW, w, h, len(u.vm.agents), u.vm.snap.MaxParallel, max(0, u.agentIndex(u.selAgent)))
}

func (g *gridView) Draw(s tcell.Screen) {
	u := g.u
	title := fmt.Sprintf(" AGENTS %d/%d ", len(u.vm.agents)-len(u.vm.done), u.vm.snap.MaxParallel)
	if u.full {
		title = " AGENT (full screen: f returns) "
	} else if u.gridSpec != "auto" {
		title += "[" + u.gridSpec + "] "
	}
	g.SetTitle(title)
	g.SetBorderColor(borderColor(u, u.focus == panelAgents))
	g.Box.DrawForSubclass(s, g)
	x0, y0, w, h := g.GetInnerRect()
	if w <= 0 || h <= 0 {
		return
	}
	grid := g.layout()
	g.shown = map[string]bool{}
	for i, c := range grid.Cells {
		slot := grid.First + i
		x, y := x0+c.X, y0+c.Y
		if slot < len(u.vm.agents) {
			id := u.vm.agents[slot]
			t := u.vm.tiles[id]
			if t == nil {
				drawSlot(s, x, y, c.W, c.H, "starting "+id+"…", u.theme)
				continue
			}
			a := u.vm.snap.Agents[id]
			attention := a != nil && present.Attention(*a)
			bc, ts := u.theme.tileBorder(id == u.selAgent, attention)
			if u.vm.done[id] {
				ts = ts.Dim(true)
			}
			label := u.vm.labels[id]
			if id == u.passthrough {
				label = "⌨ " + label
			}
			progress := 0
			if a != nil && !u.vm.done[id] && !attention {
				progress = a.Progress
			}
			// Cut the end, not tview's centred cut of both sides; in a
			// narrow tile the progress moves up so the cut keeps it,
			// unless what needs a person must come first.
			t.SetLabel(present.NarrowLabel(label, progress, max(0, c.W-4)))
			t.SetBorderColor(bc)
			t.SetTitleColor(tsColor(ts))
			t.SetBorderAttributes(tsAttrs(ts))
			t.SetRect(x, y, c.W, c.H)
			t.Draw(s)
			g.shown[id] = true
			continue
		}
		drawSlot(s, x, y, c.W, c.H, "[empty slot]", u.theme)
	}
	if grid.First > 0 || grid.First+len(grid.Cells) < len(u.vm.agents) {
		pages := fmt.Sprintf(" page %d/%d ", grid.First/max(1, grid.Cols*grid.Rows)+1, (len(u.vm.agents)+grid.Cols*grid.Rows-1)/max(1, grid.Cols*grid.Rows))
		tview.Print(s, pages, x0, y0+h, w, tview.AlignRight, tcell.ColorDefault)
	}
}

func tsColor(st tcell.Style) tcell.Color {
	fg, _, _ := st.Decompose()
	return fg
}

func tsAttrs(st tcell.Style) tcell.AttrMask {
	_, _, a := st.Decompose()
	return a
}

// drawSlot draws an empty (or not yet started) slot.
func drawSlot(s tcell.Screen, x, y, w, h int, text string, th theme) {
	if w < 2 || h < 2 {
		return
	}
	st := th.style(present.Dim)
	for i := x + 1; i < x+w-1; i++ {
		s.SetContent(i, y, tview.BoxDrawingsLightHorizontal, nil, st)
		s.SetContent(i, y+h-1, tview.BoxDrawingsLightHorizontal, nil, st)
	}
	for j := y + 1; j < y+h-1; j++ {
		s.SetContent(x, j, tview.BoxDrawingsLightVertical, nil, st)
		s.SetContent(x+w-1, j, tview.BoxDrawingsLightVertical, nil, st)
	}
	s.SetContent(x, y, tview.BoxDrawingsLightDownAndRight, nil, st)
	s.SetContent(x+w-1, y, tview.BoxDrawingsLightDownAndLeft, nil, st)
	s.SetContent(x, y+h-1, tview.BoxDrawingsLightUpAndRight, nil, st)
	s.SetContent(x+w-1, y+h-1, tview.BoxDrawingsLightUpAndLeft, nil, st)
	if h > 2 {
		printLine(s, x+2, y+1, w-4, present.Line{{Text: text, Class: present.Dim}}, th, tcell.StyleDefault, false)
	}
}

// MouseHandler: a click selects a tile (and focuses it for typing while
// keys pass through); the wheel scrolls its scrollback.
func (g *gridView) MouseHandler() func(action tview.MouseAction, event *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
	return g.WrapMouseHandler(func(action tview.MouseAction, ev *tcell.EventMouse, setFocus func(p tview.Primitive)) (bool, tview.Primitive) {
		mx, my := ev.Position()
		if !g.InRect(mx, my) {
			return false, nil
		}
		u := g.u
		for id := range g.shown {
			t := u.vm.tiles[id]
			if t == nil || !t.InRect(mx, my) {
				continue
			}
			switch action {
			case tview.MouseLeftDown:
				if u.passthrough != "" && u.passthrough != id {
					u.endPassthrough()
				}
				u.selAgent = id
				u.setPanel(panelAgents)
				if u.passthrough == id {
					return t.MouseHandler()(action, ev, setFocus)
				}
				return true, nil
			case tview.MouseScrollUp, tview.MouseScrollDown:
				return t.MouseHandler()(action, ev, setFocus)
			default:
				if u.passthrough == id {
					return t.MouseHandler()(action, ev, setFocus)
				}
			}
			return true, nil
		}
		if action == tview.MouseLeftDown {
			u.setPanel(panelAgents)
			return true, nil
		}
		return false, nil
	})
}

// tileFor returns the tile of an agent, if it has one yet.
func (u *UI) tileFor(id string) *tile.Tile { return u.vm.tiles[id] }

// typingTile is the tile keys pass through to, when it has focus.
func (g *gridView) typingTile() *tile.Tile {
	if t := g.u.tileFor(g.u.passthrough); t != nil && t.HasFocus() {
		return t
	}
	return nil
}

// HasFocus includes the tile being typed into: tiles are drawn by the
// grid, not tview children, so the focus chain goes through here.
func (g *gridView) HasFocus() bool {
	return g.typingTile() != nil || g.Box.HasFocus()
}

// InputHandler hands pass-through keys to the tile being typed into.
func (g *gridView) InputHandler() func(event *tcell.EventKey, setFocus func(p tview.Primitive)) {
	return g.WrapInputHandler(func(ev *tcell.EventKey, setFocus func(p tview.Primitive)) {
		if t := g.typingTile(); t != nil {
			t.InputHandler()(ev, setFocus)
		}
	})
}

// PasteHandler hands pastes to the tile being typed into.
func (g *gridView) PasteHandler() func(text string, setFocus func(p tview.Primitive)) {
	return g.WrapPasteHandler(func(text string, setFocus func(p tview.Primitive)) {
		if t := g.typingTile(); t != nil {
			t.PasteHandler()(text, setFocus)
		}
	})
}
