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

const ovDiff = "diff"

// showDiff shows what a task changed (the engine runs git) in a
// scrollable overlay; s toggles between the full diff and the summary.
func (u *UI) showDiff(taskID string) {
	if taskID == "" {
		u.setFlash("select a task or an agent to see its changes", present.Warn)
		return
	}
	tv := textBox("CHANGES OF " + present.Clean(taskID) + " (j/k scroll, s summary/full, Esc closes)")
	tv.SetDynamicColors(true).SetWrap(false)
	tv.SetText("looking up the changes of " + tview.Escape(present.Clean(taskID)) + "…")
	stat := false
	load := func() {}
	load = func() {
		st := stat
		u.work(func(ctx context.Context) func() {
			d, err := u.eng.TaskDiff(ctx, taskID, st)
			return func() {
				u.pumpApply(func() {
					if u.over == nil || u.over.name != ovDiff {
						return
					}
					if err != nil {
						tv.SetText(tview.Escape(present.Block(err.Error())))
						return
					}
					tv.SetText(diffMarkup(d)).ScrollToBeginning()
				})
			}
		})
	}
	u.openOverlay(ovDiff, tv, 140, 50, func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEsc || ev.Key() == tcell.KeyRune && ev.Rune() == 'q' {
			u.closeOverlay()
			return nil
		}
		if ev.Key() == tcell.KeyRune && ev.Rune() == 's' {
			stat = !stat
			load()
			return nil
		}
		return viKeys(ev)
	}, nil)
	load()
}

// diffMarkup colours a diff for a dynamic-colour text view. Every line is
// sanitised (no terminal escapes from file contents reach the screen) and
// escaped (a "[red]" in a file stays text), then coloured by its kind.
func diffMarkup(d orchestrator.TaskDiff) string {
	var b strings.Builder
	fmt.Fprintf(&b, "[::b]%s[::-]\n\n", tview.Escape(present.Clean(d.Source)))
	if strings.TrimSpace(d.Text) == "" {
		b.WriteString("(no changes)\n")
		return b.String()
	}
	for _, l := range strings.Split(d.Text, "\n") {
		l = tview.Escape(present.Clean(l))
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"), strings.HasPrefix(l, "diff --git"):
			fmt.Fprintf(&b, "[::b]%s[::-]\n", l)
		case strings.HasPrefix(l, "@@"):
			fmt.Fprintf(&b, "[teal]%s[-]\n", l)
		case strings.HasPrefix(l, "+"):
			fmt.Fprintf(&b, "[green]%s[-]\n", l)
		case strings.HasPrefix(l, "-"):
			fmt.Fprintf(&b, "[red]%s[-]\n", l)
		default:
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// answerOptions answers a question asked with `chorus ask`: its options
// are numbered; a number picks one, other text is a free answer.
func (u *UI) answerOptions(id string, a *orchestrator.AgentState) {
	var b strings.Builder
	fmt.Fprintf(&b, "%s asks: %s\n\n", id, a.Question)
	for i, o := range a.Options {
		fmt.Fprintf(&b, "  %d) %s\n", i+1, o)
	}
	b.WriteString("\nType an option's number, or your own answer.")
	body := tview.NewTextView().SetWrap(true).SetText(present.Block(b.String()))
	f := tview.NewForm()
	f.AddInputField("Answer", "", 0, nil, nil)
	submit := func() {
		text := strings.TrimSpace(f.GetFormItem(0).(*tview.InputField).GetText())
		u.closeOverlay()
		if text == "" {
			u.setFlash("empty answer not sent", present.Warn)
			return
		}
		u.send(orchestrator.Command{Kind: orchestrator.CmdAnswer, AgentID: id, Text: text}, "answer sent to "+id, nil)
	}
	f.AddButton("Send", submit).AddButton("Cancel", u.closeOverlay)
	f.SetCancelFunc(u.closeOverlay)
	flex := tview.NewFlex().SetDirection(tview.FlexRow).AddItem(body, 0, 1, false).AddItem(f, 5, 0, true)
	flex.SetBorder(true).SetTitle(" QUESTION (Esc cancels) ")
	u.openOverlay(ovPrompt, flex, 90, min(12+len(a.Options), 30), func(ev *tcell.EventKey) *tcell.EventKey {
		if ev.Key() == tcell.KeyEnter {
			if _, ok := u.app.GetFocus().(*tview.InputField); ok {
				submit()
				return nil
			}
		}
		return ev
	}, nil)
}
