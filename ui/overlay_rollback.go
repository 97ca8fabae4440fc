// The rollback dialog: checkpoints and the levels of undo.

package ui

import (
	"context"
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

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
				at := ""
				if c.AtTip {
					at = "  (the current tip: nothing to roll back)"
				}
				fmt.Fprintf(&b, "    %s%s  %s  %s%s\n", mark, c.Time.Local().Format("2006-01-02 15:04"), short(c.Commit), strings.TrimPrefix(c.Ref, merge.CheckpointPrefix), at)
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
				cpSel = defaultCheckpoint(cps)
				if u.over != nil && u.over.name == ovRollback {
					render()
				}
			})
		}
	})
}

// defaultCheckpoint is the one level 4 offers first: the newest that is
// not the target's current tip (going back there would change nothing).
func defaultCheckpoint(cps []merge.Checkpoint) int {
	for i, c := range cps {
		if !c.AtTip {
			return i
		}
	}
	return 0
}

func short(h string) string {
	if len(h) > 8 {
		return h[:8]
	}
	return h
}
