package report

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
)

// The report covers the last session by default; a task that failed and
// later completed is not a failure; usage is the latest total per task.
func TestBuildFromLog(t *testing.T) {
	d := chorusdir.At(t.TempDir())
	if err := os.MkdirAll(d.Path, 0o755); err != nil {
		t.Fatal(err)
	}
	log := func(event string, details map[string]any) {
		if err := d.AppendLog("implementation", event, details); err != nil {
			t.Fatal(err)
		}
	}
	log("task_failed", map[string]any{"taskId": "old-1", "text": "an earlier session"})
	log(SessionStarted, nil)
	log("task_failed", map[string]any{"taskId": "t-1", "text": "quality failed", "usage": map[string]any{"input": 10, "output": 5, "costUsd": 0.5}})
	log("task_completed", map[string]any{"taskId": "t-1", "usage": map[string]any{"input": 20, "output": 10, "costUsd": 1.0}, "runtime": 90})
	log("merge_landed", map[string]any{"taskId": "t-1", "commit": "0123456789abcdef"})
	log("task_failed", map[string]any{"taskId": "t-2", "text": "reached maxIterations \x1b[31m(2)"})
	tasks := []beads.Task{{ID: "t-1", Title: "one", Status: beads.StatusClosed}, {ID: "t-2", Title: "two", Status: beads.StatusOpen, Labels: []string{beads.LabelFailed}}}
	r, err := Build(d, tasks, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Landed) != 1 || r.Landed[0].Commit != "0123456789abcdef" || r.Landed[0].Title != "one" {
		t.Errorf("landed %+v", r.Landed)
	}
	if len(r.Failed) != 1 || r.Failed[0].Task != "t-2" {
		t.Errorf("failed %+v", r.Failed)
	}
	if r.Total.Tokens() != 30 || r.Total.CostUSD != 1.0 || len(r.Tasks) != 1 || r.Tasks[0].Runtime != 90*time.Second {
		t.Errorf("cost %+v %+v", r.Total, r.Tasks)
	}
	if len(r.Waiting) != 1 || !strings.Contains(r.Waiting[0].Next, "chorus task reopen t-2") {
		t.Errorf("waiting %+v", r.Waiting)
	}
	md := r.Markdown()
	for _, want := range []string{"1 landed, 1 failed", "`t-1` one — commit `0123456789ab`", "`t-2` two — failed: reached maxIterations (2)", "| **total** | | 30 | $1.0000 |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "\x1b") || strings.Contains(md, "old-1") {
		t.Errorf("escape or an earlier session in the report:\n%s", md)
	}
	// --since before everything brings the earlier session back.
	r, _ = Build(d, tasks, time.Now().Add(-time.Hour))
	if len(r.Failed) != 2 {
		t.Errorf("since an hour ago: %+v", r.Failed)
	}
}
