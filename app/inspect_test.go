package app

import (
	"bufio"
	"context"
	"encoding/json"
	"os/exec"
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

	// status --json lists the pending question with its options.
	r := chorus(t, dir, "status", "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
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
