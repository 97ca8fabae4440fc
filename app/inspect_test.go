package app

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// headlessRun starts `chorus --headless` with args in dir and streams its
// output lines; wait returns its exit code and everything it printed.
func headlessRun(t *testing.T, dir string, args ...string) (lines <-chan string, wait func() (int, string)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	cmd := exec.CommandContext(ctx, chorusBinary(t), append([]string{"-C", dir, "--headless"}, args...)...)
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	var all strings.Builder
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(ch)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			all.WriteString(sc.Text() + "\n")
			select {
			case ch <- sc.Text():
			default: // nobody reads any more; all keeps it
			}
		}
	}()
	t.Cleanup(cancel)
	return ch, func() (int, string) {
		<-done
		err := cmd.Wait()
		cancel()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, all.String()
	}
}

// waitLine reads lines until one contains want.
func waitLine(t *testing.T, lines <-chan string, want string, wait func() (int, string)) string {
	t.Helper()
	for l := range lines {
		if strings.Contains(l, want) {
			return l
		}
	}
	code, out := wait()
	t.Fatalf("no line with %q; exit %d:\n%s", want, code, out)
	return ""
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	b, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v %s", args, err, b)
	}
	return strings.TrimSpace(string(b))
}

// A question with options, answered with `chorus answer` from another
// process while Chorus runs: the agent's `chorus ask` prints the chosen
// option, the agent commits it, and the task lands.
func TestAskAnsweredFromAnotherProcess(t *testing.T) {
	dir := scriptedProject(t, `
run "chorus ask 'Which database?' --option PostgreSQL --option 'SQLite, file based' | tee choice.txt"
commit "feat: database chosen"
signal COMPLETE
`, nil)
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "pick a database").stdout)
	lines, wait := headlessRun(t, dir, "--autopilot")
	waitLine(t, lines, "needs_help: Which database?", wait)
	waitLine(t, lines, "answer with: chorus answer "+id, wait)

	// status --json lists the pending question with its options. The
	// event goes out as the engine records the question; its snapshot
	// follows once the batch is written, so ask until it is there.
	var st statusReport
	for deadline := time.Now().Add(30 * time.Second); ; {
		r := chorus(t, dir, "status", "--json")
		st = statusReport{}
		if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
			t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
		}
		if len(st.Questions) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(st.Questions) != 1 || st.Questions[0].Task != id || st.Questions[0].Question != "Which database?" ||
		strings.Join(st.Questions[0].Options, "|") != "PostgreSQL|SQLite, file based" {
		t.Fatalf("questions = %+v", st.Questions)
	}
	if r := chorus(t, dir, "answer", id, "3"); r.code == 0 || !strings.Contains(r.stderr, "choose 1 to 2") {
		t.Fatalf("an option that does not exist was accepted: %+v", r)
	}
	if r := chorus(t, dir, "answer", id, "2"); r.code != 0 || !strings.Contains(r.stdout, "answered "+id+": SQLite, file based") {
		t.Fatalf("answer: %+v", r)
	}
	waitLine(t, lines, "question_answered: SQLite, file based", wait)
	code, out := wait()
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if got := gitOut(t, dir, "show", "main:choice.txt"); got != "SQLite, file based" {
		t.Fatalf("the agent printed %q, want the chosen option\n%s", got, out)
	}
	// Answered, the question is gone; a second answer has nothing to answer.
	if r := chorus(t, dir, "answer", id, "1"); r.code == 0 {
		t.Fatalf("a second answer was accepted: %+v", r)
	}
}

// An autopilot run with one task that lands and one that fails: the run
// writes the morning report and points to it; `chorus report` lists the
// landed task with its merge commit and the failed one with its reason
// and the command that retries it; `chorus task diff` shows the landed
// task's change.
func TestReportAndDiffAfterRun(t *testing.T) {
	dir := scriptedProject(t, `
@ prompt~doomed
print "giving up"
@ *
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["completion"].(map[string]any)["maxIterations"] = 2
	})
	good := strings.TrimSpace(chorus(t, dir, "task", "create", "good work").stdout)
	bad := strings.TrimSpace(chorus(t, dir, "task", "create", "doomed work").stdout)
	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code == 0 {
		t.Fatalf("a run with a failed task exited 0:\n%s", out)
	}
	i := strings.Index(out, "report: ")
	if i < 0 {
		t.Fatalf("the summary does not point to the report:\n%s", out)
	}
	path, _, _ := strings.Cut(out[i+len("report: "):], " ")
	written, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(path, filepath.Join(dir, ".chorus", "reports")) {
		t.Fatalf("report %q: %v\n%s", path, err, out)
	}
	merged := gitOut(t, dir, "log", "-1", "--format=%H", "--grep=Chorus-Task: "+good, "main")
	if merged == "" {
		t.Fatalf("%s did not land:\n%s", good, out)
	}
	r := chorus(t, dir, "report")
	if r.code != 0 {
		t.Fatalf("report: %+v", r)
	}
	for _, want := range []string{
		"1 landed, 1 failed",
		"`" + good + "` good work — commit `" + merged[:12] + "`",
		"`" + bad + "` doomed work — failed: ",
		"reached maxIterations (2) without completing; last: The agent exited without signalling COMPLETE.",
		"chorus task label remove " + bad + " failed && chorus task reopen " + bad,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(string(written), "`"+good+"` good work — commit `"+merged[:12]) || !strings.Contains(string(written), "`"+bad+"` doomed work — failed: ") {
		t.Errorf("the written report differs:\n%s", written)
	}
	var rep struct {
		Landed []struct{ Task, Commit string }
		Failed []struct{ Task, Kind, Reason string }
	}
	// The report just read moved the default period's start: ask for the run.
	if r := chorus(t, dir, "report", "--json", "--since", "1h"); json.Unmarshal([]byte(r.stdout), &rep) != nil ||
		len(rep.Landed) != 1 || rep.Landed[0].Commit != merged || len(rep.Failed) != 1 || rep.Failed[0].Task != bad {
		t.Errorf("report --json: %+v\n%s", rep, r.stdout)
	}

	d := chorus(t, dir, "task", "diff", good)
	if d.code != 0 || !strings.Contains(d.stdout, "+++ b/done-"+good+".txt") || !strings.Contains(d.stdout, "+"+good) ||
		!strings.Contains(d.stderr, "merge commit "+merged[:12]) {
		t.Fatalf("task diff: %+v", d)
	}
	if d := chorus(t, dir, "task", "diff", good, "--stat"); d.code != 0 || !strings.Contains(d.stdout, "done-"+good+".txt | 1 +") {
		t.Fatalf("task diff --stat: %+v", d)
	}
	// The failed task never committed: there is nothing to show, and it says so.
	if d := chorus(t, dir, "task", "diff", bad); d.code == 0 || !strings.Contains(d.stderr, bad) {
		t.Fatalf("task diff of a task without work: %+v", d)
	}
}

// A merge waiting for approval is shown with `chorus task diff` (the
// branch against the target) and landed with `chorus merge approve`;
// another is taken out of the queue with `chorus merge drop`.
func TestMergeApproveFromTheCommandLine(t *testing.T) {
	dir := scriptedProject(t, `
run "echo approved > $CHORUS_TASK_ID.txt"
commit "feat: needs approval"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["merge"].(map[string]any)["requireApproval"] = true
	})
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "careful change").stdout)
	other := strings.TrimSpace(chorus(t, dir, "task", "create", "unwanted change").stdout)
	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code == 0 || !strings.Contains(out, "waiting-approval") {
		t.Fatalf("exit %d, want a merge waiting for approval:\n%s", code, out)
	}
	if !strings.Contains(out, "chorus merge approve "+id) {
		t.Errorf("the report does not say how to approve:\n%s", out)
	}
	d := chorus(t, dir, "task", "diff", id)
	if d.code != 0 || !strings.Contains(d.stdout, "+approved") || !strings.Contains(d.stderr, "against its merge base with main") {
		t.Fatalf("task diff of the waiting branch: %+v", d)
	}
	if r := chorus(t, dir, "report"); !strings.Contains(r.stdout, "chorus merge approve "+id) {
		t.Errorf("report lacks the approve command:\n%s", r.stdout)
	}
	code, out = runBinary(t, dir, "merge", "drop", other)
	if !strings.Contains(out, "dropped "+other) || strings.Contains(out, "merge of "+other+" waits") {
		t.Fatalf("merge drop: exit %d\n%s", code, out)
	}
	code, out = runBinary(t, dir, "merge", "approve", id)
	if code != 0 {
		t.Fatalf("merge approve: exit %d\n%s", code, out)
	}
	if got := gitOut(t, dir, "show", "main:"+id+".txt"); got != "approved" {
		t.Fatalf("not landed: %q\n%s", got, out)
	}
	if b, err := exec.Command("git", "-C", dir, "show", "main:"+other+".txt").CombinedOutput(); err == nil {
		t.Fatalf("the dropped merge landed: %s", b)
	}
}
