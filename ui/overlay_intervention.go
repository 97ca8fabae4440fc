// Help, the intervention dialog and answering an agent.

package ui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// showHelp is the key table as text.
func (u *UI) showHelp() {
	tv := textBox("KEYBOARD SHORTCUTS (Esc closes)")
	text := helpText(u.keys.table, u.o.Config.TUI.PrefixKey)
	if u.attached {
		text += fmt.Sprintf("  %-7s Detach: the engine and its agents keep running (chorus attach comes back)\n", u.o.Config.TUI.PrefixKey+" d")
	}
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
		running := u.running()
		if len(running) == 0 {
			b.WriteString("  (none)\n")
		}
		for i, id := range running {
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
		if it, ok := u.approvable(); ok {
			fmt.Fprintf(&b, "  [m] Approve merge  - %s waits for approval\n", it.TaskID)
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
			if running := u.running(); int(r-'1') < len(running) {
				u.selAgent = running[r-'1']
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
		case r == 'm':
			if it, ok := u.approvable(); ok {
				u.closeOverlay()
				u.approveMerge(it)
			}
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
