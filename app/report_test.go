package app

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/report"
)

// TestMorningReportTellsTheNight runs the real binary through a night with
// the scripted agent: one task lands, one asks for a person, one keeps
// crashing until FAILED, one fails its check once and is retried. The
// report read in the morning covers the whole night (the report written at
// the run's end does not move its start), names the failure with its
// reason and command, the waiting task, the retried iterations and why,
// and cost and time per task; the next report starts where it ended.
func TestMorningReportTellsTheNight(t *testing.T) {
	dir := scriptedProject(t, `
@ prompt~asks-a-person
signal NEEDS_HELP "which database should I use?"
hang
@ prompt~always-crashes
exit 3
@ prompt~fails-check-once iteration=1
write bad.txt "bad"
commit "feat: bad"
signal COMPLETE
@ prompt~fails-check-once
run "git rm -q bad.txt && git commit -q -m 'fix: no bad.txt'"
write good.txt "good"
commit "feat: good"
signal COMPLETE
@ *
write $CHORUS_TASK_ID.txt "done"
commit "feat: done"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["completion"].(map[string]any)["maxConsecutiveErrors"] = 2
		cfg["qualityCommands"] = []map[string]any{{"name": "no-bad-file", "command": "test ! -f bad.txt", "required": true, "order": 1}}
	})
	ids := map[string]string{}
	for _, title := range []string{"lands", "asks-a-person", "always-crashes", "fails-check-once"} {
		r := chorus(t, dir, "task", "create", title)
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		ids[title] = strings.TrimSpace(r.stdout)
	}
	code, out := runBinary(t, dir, "--autopilot", "--headless", "--max-agents", "2")
	if code != ExitUnfinished || !strings.Contains(out, "report: ") {
		t.Fatalf("exit %d, want %d, and a report written:\n%s", code, ExitUnfinished, out)
	}
	code, js := runBinary(t, dir, "report", "--json")
	if code != 0 {
		t.Fatalf("report: exit %d\n%s", code, js)
	}
	var r report.Report
	if err := json.Unmarshal([]byte(js[strings.Index(js, "{"):]), &r); err != nil {
		t.Fatalf("%v\n%s", err, js)
	}
	if r.From != report.FromUnread || r.Sessions != 1 {
		t.Errorf("period from %q with %d sessions, want the unread run's", r.From, r.Sessions)
	}
	landed := map[string]bool{}
	for _, l := range r.Landed {
		landed[l.Task] = l.Commit != ""
	}
	if !landed[ids["lands"]] || !landed[ids["fails-check-once"]] || len(r.Landed) != 2 {
		t.Errorf("landed %+v", r.Landed)
	}
	var crash *report.Failed
	for i, f := range r.Failed {
		if f.Task == ids["always-crashes"] {
			crash = &r.Failed[i]
		}
	}
	if crash == nil || crash.Kind != "failed" || !strings.Contains(crash.Reason, "exited with code 3") || !strings.Contains(crash.Next, "chorus task reopen "+ids["always-crashes"]) {
		t.Errorf("the crasher: %+v in %+v", crash, r.Failed)
	}
	var waits []string
	for _, w := range r.Waiting {
		waits = append(waits, w.Task+": "+w.What+" → "+w.Next)
	}
	all := strings.Join(waits, "\n")
	if !strings.Contains(all, ids["asks-a-person"]+": task blocked: needs a human: which database should I use? → chorus task show "+ids["asks-a-person"]) {
		t.Errorf("the task waiting for a person is not told:\n%s", all)
	}
	var why []string
	for _, x := range r.Retries {
		if x.Task == ids["fails-check-once"] {
			why = append(why, x.Why)
		}
	}
	if len(why) == 0 || !strings.Contains(why[0], "no-bad-file") {
		t.Errorf("the retried iteration of fails-check-once: %q (all: %+v)", why, r.Retries)
	}
	costs := map[string]report.TaskCost{}
	for _, c := range r.Tasks {
		costs[c.Task] = c
	}
	if c := costs[ids["fails-check-once"]]; c.Iterations < 2 || c.Outcome != "completed" {
		t.Errorf("fails-check-once's row: %+v", c)
	}
	if c := costs[ids["always-crashes"]]; c.Iterations != 2 || c.Outcome != "failed" {
		t.Errorf("always-crashes's row: %+v", c)
	}

	// Read once, the night is told: the next report starts after it.
	code, md := runBinary(t, dir, "report")
	if code != 0 || !strings.Contains(md, "since the last report, produced") || !strings.Contains(md, "0 landed, 0 failed, 2 waiting for you") {
		t.Errorf("the report after the morning's:\n%s", md)
	}
}
