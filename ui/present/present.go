// Package present turns engine snapshots and tasks into the rows and
// strings the TUI draws. It is pure: no tview, no tcell, no I/O, no clock
// of its own, so every screen can be computed off the UI goroutine and
// tested without a terminal.
package present

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// Class is the look of a piece of text; the UI maps it to a style (and,
// under NO_COLOR, to attributes only).
type Class int

// Classes.
const (
	Normal Class = iota
	Dim
	Bold
	Accent
	OK
	Warn
	Err
	P0
	P1
	P2
	P3
	P4
)

// Seg is a run of text in one class.
type Seg struct {
	Text  string
	Class Class
}

// Line is a row of segments.
type Line []Seg

// Text is the line without styling.
func (l Line) Text() string {
	var b strings.Builder
	for _, s := range l {
		b.WriteString(s.Text)
	}
	return b.String()
}

// Task status icons (the seed's status indicators).
const (
	IconOpen     = "→"
	IconRunning  = "●"
	IconClosed   = "✓"
	IconMerging  = "⇡" // closed, its merge not landed yet
	IconBlocked  = "⊗"
	IconFailed   = "✗"
	IconDeferred = "·"
)

// TaskState is how the task panel classifies a task.
type TaskState int

// Task states, in display order.
const (
	StateRunning TaskState = iota
	StateOpen
	StateBlocked
	StateFailed
	StateDeferred
	StateClosed
)

// TaskRow is one entry of the task panel: two lines, like the seed's layout.
type TaskRow struct {
	ID         string
	State      TaskState
	Selectable bool // deferred tasks are shown but never selected
	Agent      string
	Lines      [2]Line
}

// maxClosedRows keeps the finished tail of the list short.
const maxClosedRows = 10

// Icon returns the status icon of a state.
func (s TaskState) Icon() string {
	return [...]string{IconRunning, IconOpen, IconBlocked, IconFailed, IconDeferred, IconClosed}[s]
}

// Classify returns the panel state of t given the running agents and the
// statuses of other tasks (for blockers).
func Classify(t beads.Task, running bool, status map[string]string) TaskState {
	switch {
	case running || t.Status == beads.StatusInProgress:
		return StateRunning
	case t.Status == beads.StatusClosed:
		return StateClosed
	case t.HasLabel(beads.LabelFailed):
		return StateFailed
	case t.Status == beads.StatusDeferred || t.HasLabel(beads.LabelDeferred):
		return StateDeferred
	case t.Status == beads.StatusBlocked:
		return StateBlocked
	}
	if len(openBlockers(t, status)) > 0 {
		return StateBlocked
	}
	return StateOpen
}

func openBlockers(t beads.Task, status map[string]string) []string {
	var out []string
	for _, id := range t.BlockedBy() {
		if st, ok := status[id]; !ok || st != beads.StatusClosed {
			out = append(out, id)
		}
	}
	return out
}

// PriorityClass is the badge colour of a priority.
func PriorityClass(p int) Class {
	switch {
	case p <= 0:
		return P0
	case p >= 4:
		return P4
	}
	return P0 + Class(p)
}

// TaskRows builds the task panel: running first, then ready, blocked,
// failed, deferred and the most recently closed; by priority, then id.
func TaskRows(tasks []beads.Task, snap orchestrator.Snapshot, now time.Time) []TaskRow {
	status := make(map[string]string, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	agentOf := map[string]*orchestrator.AgentState{}
	for _, a := range snap.Agents {
		if cur, ok := agentOf[a.TaskID]; !ok || strings.HasPrefix(cur.ID, "resolver-") {
			agentOf[a.TaskID] = a
		}
	}
	type item struct {
		t  beads.Task
		st TaskState
	}
	items := make([]item, 0, len(tasks))
	for _, t := range tasks {
		if t.IssueType == "epic" {
			continue
		}
		_, running := agentOf[t.ID]
		items = append(items, item{t, Classify(t, running, status)})
	}
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i], items[j]
		if a.st != b.st {
			return a.st < b.st
		}
		if a.st == StateClosed {
			return closedAt(a.t).After(closedAt(b.t))
		}
		if a.t.Priority != b.t.Priority {
			return a.t.Priority < b.t.Priority
		}
		return a.t.ID < b.t.ID
	})
	rows := make([]TaskRow, 0, len(items))
	closed := 0
	for _, it := range items {
		if it.st == StateClosed {
			if closed >= maxClosedRows {
				continue
			}
			closed++
		}
		rows = append(rows, taskRow(it.t, it.st, agentOf[it.t.ID], status, snap, now))
	}
	return rows
}

func closedAt(t beads.Task) time.Time {
	if t.ClosedAt != nil {
		return *t.ClosedAt
	}
	return t.UpdatedAt
}

func taskRow(t beads.Task, st TaskState, a *orchestrator.AgentState, status map[string]string, snap orchestrator.Snapshot, now time.Time) TaskRow {
	r := TaskRow{ID: t.ID, State: st, Selectable: st != StateDeferred}
	iconClass := map[TaskState]Class{StateRunning: Accent, StateOpen: Normal, StateBlocked: Warn, StateFailed: Err, StateDeferred: Dim, StateClosed: OK}[st]
	title := Clean(t.Title)
	badge := Seg{fmt.Sprintf("[P%d]", clampP(t.Priority)), PriorityClass(t.Priority)}
	titleClass := Normal
	if st == StateDeferred || st == StateClosed {
		titleClass = Dim
		if st == StateDeferred {
			badge.Class = Dim
		}
	}
	r.Lines[0] = Line{{st.Icon(), iconClass}, {" " + Clean(t.ID) + " ", titleClass}, badge, {" " + title, titleClass}}
	var sub Line
	switch st {
	case StateRunning:
		if a != nil {
			r.Agent = a.ID
			text := fmt.Sprintf("%s %s | iter %d", IconRunning, a.Type, a.Iteration)
			if doing := Doing(snap, *a, now); doing != "" {
				// The panel is narrow: what it is doing says more than the
				// agent's name (its tile has both).
				text = IconRunning + " " + doing
			}
			if a.Status == orchestrator.AgentNeedsHelp {
				sub = Line{{text, Accent}, {" | NEEDS HELP", Err}}
			} else if a.Stuck != "" {
				sub = Line{{text, Accent}, {" | NEEDS HUMAN: " + Clean(a.Stuck), Err}}
			} else {
				sub = Line{{text, Accent}}
			}
		} else {
			sub = Line{{"in progress (" + Clean(t.Assignee) + ")", Dim}}
		}
	case StateOpen:
		sub = Line{{"pending", Dim}}
	case StateBlocked:
		if bl := openBlockers(t, status); len(bl) > 0 {
			sub = Line{{"blocked by " + Clean(strings.Join(bl, ", ")), Warn}}
		} else if why := lastNote(t.Notes); why != "" {
			// The reason it was blocked with (by an agent, a budget, a person).
			sub = Line{{"blocked: " + why, Warn}}
		} else {
			sub = Line{{"blocked", Warn}}
		}
	case StateFailed:
		// The reason recorded when it failed, not the last iteration's
		// feedback, which may be older than the failure.
		sub = Line{{"failed: needs attention", Err}}
		if why := lastNote(t.Notes); why != "" {
			sub = Line{{"failed: " + strings.TrimPrefix(why, "FAILED: "), Err}}
		} else if tr := snap.Tasks[t.ID]; tr != nil && tr.LastFailure != "" {
			sub = Line{{"failed: " + firstLine(Clean(tr.LastFailure)), Err}}
		}
	case StateDeferred:
		sub = Line{{"deferred", Dim}}
	case StateClosed:
		sub = Line{{"closed " + Ago(now.Sub(closedAt(t))), Dim}}
		if it, ok := mergeItem(snap, t.ID); ok && it.Status != merge.StatusLanded {
			sub = mergeLine(it)
			// Not done until its work is on the target: no ✓ yet.
			r.Lines[0][0] = Seg{IconMerging, sub[0].Class}
		}
	}
	if tr := snap.Tasks[t.ID]; tr != nil && st != StateClosed {
		if b := tr.Usage.Brief(); b != "" {
			sub = append(sub, Seg{" | " + b, Dim})
		}
	}
	r.Lines[1] = append(Line{{"  ", Normal}}, sub...)
	return r
}

func clampP(p int) int { return min(max(p, 0), 4) }

// lastNote is the last line of a task's notes (where a block or failure
// reason is appended), cleaned for display.
func lastNote(notes string) string {
	notes = strings.TrimRight(notes, "\n ")
	if i := strings.LastIndexByte(notes, '\n'); i >= 0 {
		notes = notes[i+1:]
	}
	return Clean(strings.TrimSpace(notes))
}

// mergeItem is the task's newest merge queue entry.
func mergeItem(snap orchestrator.Snapshot, id string) (merge.Item, bool) {
	var found merge.Item
	ok := false
	for _, it := range snap.Merge.Items {
		if it.TaskID == id && (!ok || it.Seq > found.Seq) {
			found, ok = it, true
		}
	}
	return found, ok
}

// mergeLine says where a closed task's merge is: a closed task whose work
// has not landed is not done.
func mergeLine(it merge.Item) Line {
	switch it.Status {
	case merge.StatusWaitingHuman, merge.StatusWaitingApproval, merge.StatusHeld:
		what := "merge waits for you"
		if it.Status == merge.StatusWaitingApproval {
			what = "merge waits for approval"
		}
		if it.Action != "" {
			what += ": " + firstLine(Clean(it.Action))
		} else if it.LastError != "" {
			what += ": " + firstLine(Clean(it.LastError))
		}
		return Line{{what, Warn}}
	case merge.StatusFailed:
		return Line{{"merge failed: " + firstLine(Clean(it.LastError)), Err}}
	case merge.StatusReverted:
		return Line{{"merge rolled back", Warn}}
	}
	return Line{{"closed, merge " + string(it.Status), Accent}}
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// Clean strips control and escape sequences (task text and agent output
// reach the screen only through it) and folds newlines and tabs to spaces.
func Clean(s string) string {
	s = beads.SanitizeText(s)
	return strings.NewReplacer("\n", " ", "\t", " ").Replace(s)
}

// Block sanitises multi-line text (newlines and tabs kept).
func Block(s string) string { return beads.SanitizeText(s) }

// Ago is a short age: "now", "5m ago", "2h ago", "3d ago".
func Ago(d time.Duration) string {
	if d < time.Minute {
		return "just now"
	}
	return Duration(d) + " ago"
}

// Duration is a short duration: 45s, 12m, 1h05m, 2d3h.
func Duration(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
	}
	return fmt.Sprintf("%dd%dh", int(d.Hours())/24, int(d.Hours())%24)
}

// Elapsed is Duration at minute resolution ("<1m", "12m", "1h05m"), for
// times shown on the main view: an idle screen then changes once a
// minute, not every second.
func Elapsed(d time.Duration) string {
	if d < time.Minute {
		return "<1m"
	}
	return Duration(d)
}

// ElapsedChangesIn is how long after d Elapsed shows something else, so
// a screen of elapsed times can sleep until then.
func ElapsedChangesIn(d time.Duration) time.Duration {
	if d < 0 {
		return time.Minute - d
	}
	step := time.Minute
	if d >= 24*time.Hour {
		step = time.Hour // Duration drops the minutes there
	}
	return step - d%step
}

// ProgressBar is the seed's "▓▓▓▓░░░░░░ 35%".
func ProgressBar(pct, width int) string {
	pct = min(max(pct, 0), 100)
	full := pct * width / 100
	return strings.Repeat("▓", full) + strings.Repeat("░", width-full) + fmt.Sprintf(" %d%%", pct)
}

// Header is the top bar. phase, when set (PLANNING, REVIEW), stands where
// the mode is: no mode applies before the plan is done.
func Header(version string, snap orchestrator.Snapshot, tasks int, passthrough, phase string) Line {
	mode := snap.Mode
	if mode == "" {
		mode = "semi-auto"
	}
	if phase != "" {
		mode = phase
	}
	dot := Seg{"○", Dim}
	if snap.Running > 0 {
		dot = Seg{"●", OK}
	}
	l := Line{{" CHORUS " + Clean(version), Bold}, {" │ ", Dim}, {mode, Accent}, {" │ ", Dim},
		dot, {fmt.Sprintf(" %d/%d agents", snap.Running, snap.MaxParallel), Normal}, {" │ ", Dim},
		{fmt.Sprintf("%d tasks", tasks), Normal}}
	if snap.Paused {
		l = append(l, Seg{" │ ", Dim}, Seg{"⏸ PAUSED", Warn})
	}
	if h := snap.Hold; h != nil {
		l = append(l, Seg{" │ ", Dim}, Seg{HoldText(h), Warn})
	}
	if b := snap.Usage.Brief(); b != "" {
		l = append(l, Seg{" │ ", Dim}, Seg{b, Normal})
	}
	if passthrough != "" {
		l = append(l, Seg{" │ ", Dim}, Seg{"keys → " + Clean(passthrough), Err})
	}
	return l
}

// Counts are the footer's per-state counts.
type Counts struct {
	Closed, Running, Open, Blocked, Failed, Deferred int
}

// Count tallies task rows by state (over all tasks, not only the rows
// shown).
func Count(tasks []beads.Task, snap orchestrator.Snapshot) Counts {
	status := make(map[string]string, len(tasks))
	for _, t := range tasks {
		status[t.ID] = t.Status
	}
	running := map[string]bool{}
	for _, a := range snap.Agents {
		running[a.TaskID] = true
	}
	var c Counts
	for _, t := range tasks {
		if t.IssueType == "epic" {
			continue
		}
		switch Classify(t, running[t.ID], status) {
		case StateClosed:
			c.Closed++
		case StateRunning:
			c.Running++
		case StateOpen:
			c.Open++
		case StateBlocked:
			c.Blocked++
		case StateFailed:
			c.Failed++
		case StateDeferred:
			c.Deferred++
		}
	}
	return c
}

// MergeQueued counts queue items that are not finished.
func MergeQueued(m merge.Snapshot) int {
	n := 0
	for _, it := range m.Items {
		switch it.Status {
		case merge.StatusLanded, merge.StatusReverted, merge.StatusFailed:
		default:
			n++
		}
	}
	return n
}

// MergeWaiting counts items waiting for a person.
func MergeWaiting(m merge.Snapshot) int {
	n := 0
	for _, it := range m.Items {
		if it.Status == merge.StatusWaitingApproval || it.Status == merge.StatusWaitingHuman || it.Status == merge.StatusHeld {
			n++
		}
	}
	return n
}

// Footer is the bottom bar: counts, merge queue and runtime; FooterBar
// adds the message and the key hints.
func Footer(c Counts, snap orchestrator.Snapshot, runtime time.Duration) Line {
	l := Line{
		{" " + IconClosed + fmt.Sprint(c.Closed), OK}, {" " + IconRunning + fmt.Sprint(c.Running), Accent},
		{" " + IconOpen + fmt.Sprint(c.Open), Normal}, {" " + IconBlocked + fmt.Sprint(c.Blocked), Warn},
		{" " + IconFailed + fmt.Sprint(c.Failed), Err},
		{" │ ", Dim}, {fmt.Sprintf("Merge: %d queued", MergeQueued(snap.Merge)), Normal},
	}
	if w := MergeWaiting(snap.Merge); w > 0 {
		l = append(l, Seg{fmt.Sprintf(" (%d waiting)", w), Warn})
	}
	l = append(l, Seg{" │ ", Dim}, Seg{"Runtime: " + Elapsed(runtime), Normal})
	return l
}

// FooterBar fits the footer in w cells: status, the message, then the key
// hints, pinned first. When it is too wide the optional hints go first,
// then the message is cut, then the status; pinned ("? help") never is.
func FooterBar(status Line, msg Seg, optional, pinned string, w int) Line {
	var m, o, p Line
	if msg.Text != "" {
		m = Line{{" │ ", Dim}, {Clean(msg.Text), msg.Class}}
	}
	if pinned != "" {
		p = Line{{" │ ", Dim}, {pinned, Dim}}
	}
	// Optional hints go whole, last first: never a hint cut mid-word.
	for optional != "" {
		o = Line{{" · ", Dim}, {optional, Dim}}
		if status.Width()+m.Width()+p.Width()+o.Width() <= w {
			break
		}
		i := strings.LastIndex(optional, " · ")
		optional, o = optional[:max(i, 0)], nil
	}
	// A message keeps 24 cells while the status is cut, then goes too.
	return Fit(w, []Line{status, m, p, o}, Cut{3, 0}, Cut{1, 24}, Cut{0, 16}, Cut{1, 0})
}

// AgentIDs returns the snapshot's agents in a stable order: by start
// time, then id.
func AgentIDs(snap orchestrator.Snapshot) []string {
	ids := make([]string, 0, len(snap.Agents))
	for id := range snap.Agents {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := snap.Agents[ids[i]], snap.Agents[ids[j]]
		if !a.StartedAt.Equal(b.StartedAt) {
			return a.StartedAt.Before(b.StartedAt)
		}
		return ids[i] < ids[j]
	})
	return ids
}

// Attention reports whether an agent should be highlighted: it asked for
// help or raised an alert.
func Attention(a orchestrator.AgentState) bool {
	return a.Status == orchestrator.AgentNeedsHelp || a.Status == orchestrator.AgentNeedsHuman || a.Alert != ""
}

// HoldText says why autopilot starts no agents and until when: the reset
// time a usage limit gave, or the next probe of an outage.
func HoldText(h *orchestrator.Hold) string {
	at := h.Until.Local().Format("15:04")
	if h.Kind == orchestrator.HoldUsage {
		if h.ResetKnown {
			return "⏳ usage limit · resets " + at
		}
		return "⏳ usage limit · retry " + at
	}
	return "⏳ HELD: " + Clean(h.Cause) + " · retry " + at
}
