package ui

import (
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/rivo/tview"

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
