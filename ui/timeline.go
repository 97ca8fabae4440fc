package ui

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

// ovTimeline is the selected task's timeline overlay.
const ovTimeline = "timeline"

// showTimeline shows the states the selected task went through, with the
// time and tokens spent in each (session log and the task's ledger).
func (u *UI) showTimeline() {
	id, ok := u.needTask()
	if !ok {
		return
	}
	tv := textBox("TIMELINE " + present.Clean(id) + " (Esc closes)")
	tv.SetText("loading…")
	u.openOverlay(ovTimeline, tv, 110, 30, u.closeKeys('q', 'T'), nil)
	dir := u.o.Dir
	u.work(func(ctx context.Context) func() {
		stages, err := orchestrator.Timeline(dir, id)
		text := timelineText(id, stages, err, orchestrator.LedgerPath(dir.Path, id))
		return func() {
			u.pumpApply(func() {
				if u.over != nil && u.over.name == ovTimeline {
					tv.SetText(text)
				}
			})
		}
	})
}

// timelineText renders stages as breadcrumbs, one per line.
func timelineText(id string, stages []orchestrator.Stage, err error, ledger string) string {
	var b strings.Builder
	if err != nil {
		fmt.Fprintf(&b, "cannot read the timeline: %v\n\n", err)
	}
	if len(stages) == 0 {
		fmt.Fprintf(&b, "No recorded states for %s yet: no agent has worked on it.\n", id)
	}
	for i, s := range stages {
		arrow := "  "
		if i > 0 {
			arrow = "→ "
		}
		fmt.Fprintf(&b, "%s%s  %-12s %8s", arrow, s.At.Local().Format("15:04:05"), s.State, present.Duration(time.Duration(s.Seconds)*time.Second))
		if s.Tokens > 0 {
			fmt.Fprintf(&b, "  %d tokens", s.Tokens)
		}
		if s.Detail != "" {
			fmt.Fprintf(&b, "\n      %s", s.Detail)
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "\nLedger: %s\n", ledger)
	return present.Block(b.String())
}

// stuckMenu offers what a person can do about an agent the engine thinks
// is stuck: let it go on, give it another task, or stop it.
func (u *UI) stuckMenu(id, alert string) {
	u.choose("STUCK: "+alert, []choice{
		{key: 'c', label: "Continue", desc: "let it keep working; stuck alerts count again from now", run: func() {
			u.send(orchestrator.Command{Kind: orchestrator.CmdContinue, AgentID: id}, "continuing "+id, nil)
		}},
		{key: 'r', label: "Redirect", desc: "assign the agent to a different task", run: func() {
			u.selAgent = id
			u.redirect()
		}},
		{key: 'x', label: "Stop", desc: "stop the agent; its task goes back to open, its work kept", run: func() {
			u.selAgent = id
			u.stopAgent()
		}},
	})
}

// stuckAlert tells the engine's stuck-iterations alert from other alerts.
func stuckAlert(alert string) bool { return strings.Contains(alert, "may be stuck") }
