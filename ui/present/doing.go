package present

import (
	"fmt"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/orchestrator"
)

// resolverPrefix starts the id of an agent resolving a merge conflict.
const resolverPrefix = "resolver-"

// Doing says in words what an agent is at, when it is more than working
// on its task: resolving a merge conflict, running a quality check (with
// its name and time), or retrying after a failed check (with the failing
// command's last line).
func Doing(snap orchestrator.Snapshot, a orchestrator.AgentState, now time.Time) string {
	if strings.HasPrefix(a.ID, resolverPrefix) {
		if it, ok := mergeItem(snap, a.TaskID); ok && len(it.ConflictFiles) > 0 {
			return "resolving the conflict in " + Clean(strings.Join(it.ConflictFiles, ", "))
		}
		return "resolving a merge conflict"
	}
	if a.Status == orchestrator.AgentChecking && a.Check != "" {
		return fmt.Sprintf("checking: %s (%s)", Clean(a.Check), CheckElapsed(now.Sub(a.CheckStarted)))
	}
	if tr := snap.Tasks[a.TaskID]; tr != nil && tr.FailCheck != "" && a.Status != orchestrator.AgentChecking {
		s := "retry: " + Clean(tr.FailCheck) + " failed"
		if last := lastLine(tr.FailTail); last != "" {
			s += ": " + last
		}
		return s
	}
	return ""
}

func lastLine(s string) string {
	s = strings.TrimRight(s, "\n ")
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return Clean(strings.TrimSpace(s))
}

// CheckElapsed is a running check's time to the second: 12s, 1m12s, 1h02m.
func CheckElapsed(d time.Duration) string {
	d = max(d, 0)
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return Duration(d)
}

// TileTitle is TileLabel without what the snapshot adds.
func TileTitle(a orchestrator.AgentState, maxIter int, now time.Time) string {
	return TileLabel(orchestrator.Snapshot{}, a, maxIter, now)
}

// TileLabel is an agent tile's label: the agent and its task (a narrow
// tile, cut at the end, still names them), what needs attention or what
// it is doing (Doing), then iteration/max, elapsed and progress.
func TileLabel(snap orchestrator.Snapshot, a orchestrator.AgentState, maxIter int, now time.Time) string {
	s := fmt.Sprintf("%s (%s) ", strings.ToUpper(Clean(a.Type)), Clean(a.TaskID))
	doing := Doing(snap, a, now)
	if strings.HasPrefix(a.ID, resolverPrefix) {
		// What it resolves before the task: a narrow tile still says it.
		s = fmt.Sprintf("%s %s (%s) · ", strings.ToUpper(Clean(a.Type)), doing, Clean(a.TaskID))
		doing = ""
	}
	if a.Alert != "" {
		s += "⚠ "
	}
	switch a.Status {
	case orchestrator.AgentNeedsHelp:
		s += "NEEDS HELP · "
	case orchestrator.AgentNeedsHuman:
		s += "NEEDS HUMAN: " + Clean(a.Stuck) + " · "
	case orchestrator.AgentStopping:
		s += "stopping · "
	}
	if doing != "" {
		s += doing + " · "
	} else if a.Status == orchestrator.AgentChecking {
		s += "checking · "
	}
	s += fmt.Sprintf("iter %d/%d | %s", a.Iteration, maxIter, Elapsed(now.Sub(a.StartedAt)))
	if a.Progress > 0 {
		s += " | " + ProgressBar(a.Progress, 10)
	}
	if b := a.Usage.Brief(); b != "" {
		s += " | " + b
	}
	return s
}

// Tally is the end of an autopilot run in a few words: "8 closed, 8
// merged, 1 conflict resolved, 1 check retried"; failed and blocked tasks
// are named only when there are some.
func Tally(snap orchestrator.Snapshot) string {
	st := snap.Stats
	s := fmt.Sprintf("%d closed", st.TasksCompleted)
	if st.TasksFailed > 0 {
		s += fmt.Sprintf(", %d failed", st.TasksFailed)
	}
	if st.TasksBlocked > 0 {
		s += fmt.Sprintf(", %d blocked", st.TasksBlocked)
	}
	s += fmt.Sprintf(", %d merged", st.MergesAuto+st.MergesManual)
	if n := snap.Merge.Stats.Resolved; n > 0 {
		s += fmt.Sprintf(", %d %s resolved", n, plural(n, "conflict", "conflicts"))
	}
	if n := st.ChecksFailed; n > 0 {
		s += fmt.Sprintf(", %d %s retried", n, plural(n, "check", "checks"))
	}
	return s
}

// Story is what the end of a run says beyond the counts: conflicts an
// agent resolved and failed checks that were retried (", 1 conflict
// resolved by an agent, 1 failed check retried"), or "".
func Story(snap orchestrator.Snapshot) string {
	var b strings.Builder
	if n := snap.Merge.Stats.Resolved; n > 0 {
		fmt.Fprintf(&b, ", %d %s resolved by an agent", n, plural(n, "conflict", "conflicts"))
	}
	if n := snap.Stats.ChecksFailed; n > 0 {
		fmt.Fprintf(&b, ", %d failed %s retried", n, plural(n, "check", "checks"))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FinishedLabel is the title of the tile an agent leaves behind: its name,
// that it finished, and the iteration it reached.
func FinishedLabel(a orchestrator.AgentState, maxIter int) string {
	return fmt.Sprintf("%s (%s) finished · iter %d/%d", strings.ToUpper(Clean(a.Type)), Clean(a.TaskID), a.Iteration, maxIter)
}

// NarrowLabel fits a tile's label to w cells. When it fits it is kept;
// when it does not and it ends in progress (which a cut at the end would
// lose first), the progress moves up, as a short bar, right after the
// agent and task: "CLAUDE (ch-1) ▓▓░░░ 45% · iter 3/10 | 5m…". Then it is
// cut at the end.
func NarrowLabel(label string, progress, w int) string {
	if w <= 0 {
		return ""
	}
	if term.StringWidth(label) <= w {
		return label
	}
	bar := " | " + ProgressBar(progress, 10)
	i, head := strings.Index(label, bar), strings.Index(label, ") ")
	if progress <= 0 || i < 0 || head < 0 || head+2 > i {
		return term.Truncate(label, w, "…")
	}
	rest := label[:i] + label[i+len(bar):]
	h, tail := rest[:head+2], rest[head+2:]
	// The short bar when it fits beside the head, else the percent alone,
	// else the percent first.
	for _, p := range []string{ProgressBar(progress, 5), fmt.Sprintf("%d%%", progress)} {
		full, hw := h+p+" · "+tail, term.StringWidth(h+p)
		switch {
		case term.StringWidth(full) <= w:
			return full
		case hw < w: // room for the "…" that says more was cut
			return term.Truncate(full, w, "…")
		case hw == w:
			return h + p
		}
	}
	return term.Truncate(fmt.Sprintf("%d%% ", progress)+label[:i], w, "…")
}
