// The merge queue view: items, their state, and what a person can do with them.

package ui

import (
	"fmt"
	"strings"

	"github.com/gdamore/tcell/v2"

	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/ui/present"
)

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
			if it, ok := current(); ok {
				u.approveMerge(it)
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

// approveMerge is m in the merge queue view and the intervention menu
// (docs/keys.md): the item lands once approved.
func (u *UI) approveMerge(it merge.Item) {
	switch {
	case !u.o.Config.Merge.RequireApproval:
		u.setFlash("merges land without approval here (merge.requireApproval is off)", present.Warn)
	case it.Status != merge.StatusWaitingApproval:
		u.setFlash(it.TaskID+" is not waiting for approval ("+string(it.Status)+")", present.Warn)
	default:
		u.send(orchestrator.Command{Kind: orchestrator.CmdApprove, TaskID: it.TaskID}, "approved "+it.TaskID, nil)
	}
}

// approvable is the merge m approves from the intervention menu: the
// selected task's when it waits for approval, else the first waiting.
func (u *UI) approvable() (merge.Item, bool) {
	var first *merge.Item
	for i, it := range u.vm.snap.Merge.Items {
		if it.Status != merge.StatusWaitingApproval {
			continue
		}
		if it.TaskID == u.currentTask() {
			return it, true
		}
		if first == nil {
			first = &u.vm.snap.Merge.Items[i]
		}
	}
	if first == nil {
		return merge.Item{}, false
	}
	return *first, true
}
