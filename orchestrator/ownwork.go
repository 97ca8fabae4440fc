package orchestrator

import (
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/worktree"
)

// completeVerdict is what a COMPLETE gets, judged by what the branch holds
// of its own (worktree.Work).
type completeVerdict struct {
	gate     bool   // work of its own, all committed: on to the quality gate
	noChange string // nothing of its own and the agent says why: close with this reason
	refuse   string // not accepted: this is the agent's feedback
	alert    string // with refuse: the event's text
}

// maxListed bounds the files named in a refusal.
const maxListed = 20

// judgeComplete decides a COMPLETE. Chorus never commits for the agent:
// uncommitted files are named back to it, to commit what belongs to the
// task and delete the rest; a branch that adds nothing to the target is
// refused unless the agent says why nothing needs to change.
func judgeComplete(w worktree.Work, s signal.Signal, branch string) completeVerdict {
	if n := len(w.Uncommitted); n > 0 {
		list := w.Uncommitted[:min(n, maxListed)]
		more := ""
		if n > maxListed {
			more = fmt.Sprintf(" and %d more", n-maxListed)
		}
		return completeVerdict{
			refuse: fmt.Sprintf("COMPLETE was not accepted: %d file(s) in your worktree are not committed: %s%s. "+
				"Chorus does not commit for you. Commit the files that belong to the task, delete the rest (scratch files, "+
				"logs, build output).", n, strings.Join(list, ", "), more),
			alert: fmt.Sprintf("COMPLETE refused: %d uncommitted file(s): %s%s", n, strings.Join(list, ", "), more),
		}
	}
	if w.Committed {
		return completeVerdict{gate: true}
	}
	if why, ok := s.NoChange(); ok {
		return completeVerdict{noChange: signal.NothingToChange + ": " + why}
	}
	return completeVerdict{refuse: nothingToMerge(branch), alert: "COMPLETE refused: nothing to merge"}
}

// onComplete acts on a COMPLETE signal.
func (r *agentRun) onComplete(t beads.Task, wt worktree.Worktree, pp *agentProc, gen int, s signal.Signal) turnResult {
	w, err := r.e.wt.OwnWork(r.ctx, wt, r.e.verifiedTip())
	if err != nil {
		// Unread is not "nothing" and not "done": a branch whose commits
		// cannot be read may hold work the gate would merge as nothing.
		r.event(EvError, "looking for the agent's work: "+err.Error(), nil)
		alert := "COMPLETE refused: the worktree's git state could not be read"
		r.event(EvAlert, alert, nil)
		r.ledgerLine(t, alert)
		return turnResult{failure: unreadWork(err), end: EndRefused}
	}
	v := judgeComplete(w, s, wt.Branch)
	switch {
	case v.gate:
		return r.gate(t, wt, pp, gen)
	case v.noChange != "":
		return turnResult{done: r.closeUnchanged(t, wt, *pp, gen, v.noChange)}
	}
	fields := map[string]any{"nothingToMerge": w.Empty()}
	if len(w.Uncommitted) > 0 {
		fields["uncommitted"] = w.Uncommitted
	}
	r.event(EvAlert, v.alert, fields)
	r.ledgerLine(t, v.alert)
	return turnResult{failure: v.refuse, end: EndRefused}
}

// unreadWork is the agent's feedback when its branch could not be read.
func unreadWork(err error) string {
	return "COMPLETE was not accepted: Chorus could not read your worktree's commits (" + err.Error() + "). " +
		"Make sure `git status` and `git log` work in your worktree and your work is committed, then signal COMPLETE again."
}

// verifiedTip is the target tip the merge queue vouches for, "" without
// the merge service.
func (e *Engine) verifiedTip() string {
	if e.merge == nil {
		return ""
	}
	return e.merge.Snapshot().Stats.TargetTip
}
