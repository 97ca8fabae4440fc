package app

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestNight is an unattended night end to end, with the real binary, real
// git and the scripted agent: five normal tasks, one whose agent always
// crashes, one that needs a person, maxIterations 2, the engine killed
// with SIGKILL twice and the user switching the main checkout to a branch
// of their own in between. The five land on the target, the crasher is
// FAILED with its exit reason while the run went on, the person's task
// waits, the user's branch gets nothing, the report names the failure and
// the waiting task with the commands that move them on, and the last run
// exits 6.
func TestNight(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	dir := scriptedProject(t, "", func(cfg map[string]any) {
		cfg["completion"].(map[string]any)["maxIterations"] = 2
		cfg["agents"].(map[string]any)["maxParallel"] = 3
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": "true", "required": true, "order": 1}}
	})
	create := func(title string) string {
		r := chorus(t, dir, "task", "create", title)
		if r.code != 0 {
			t.Fatal(r.stderr)
		}
		return strings.TrimSpace(r.stdout)
	}
	var normal []string
	for i := 1; i <= 5; i++ {
		normal = append(normal, create(fmt.Sprintf("normal task %d", i)))
	}
	crasher, person := create("the crasher"), create("needs a person")
	// The normal agents' work is idempotent: an agent started again after
	// a kill finds its commit there and signals again.
	script := fmt.Sprintf(`@ task=%s
print "panic: the agent crashed"
exit 3
@ task=%s
signal BLOCKED "needs the production API key from a person"
@ *
run "echo $CHORUS_TASK_ID > f-$CHORUS_TASK_ID.txt"
sleep 300ms
run "git add -A && git commit -q -m 'feat: night work' || true"
signal COMPLETE
`, crasher, person)
	if err := os.WriteFile(filepath.Join(dir, "agent.script"), []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "tonight's script"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	start := time.Now()
	var timeline []string
	stamp := func(format string, a ...any) {
		timeline = append(timeline, fmt.Sprintf("%6.1fs ", time.Since(start).Seconds())+fmt.Sprintf(format, a...))
	}
	// run starts a headless autopilot run; with kill set it is killed with
	// SIGKILL at the first output line containing it.
	run := func(kill string) (int, []string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless")
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var lines []string
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines = append(lines, sc.Text())
			if kill != "" && strings.Contains(sc.Text(), kill) {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				stamp("kill -9 of chorus at: %s", sc.Text())
				break
			}
		}
		go func() {
			for sc.Scan() {
			}
		}()
		err := cmd.Wait()
		if ee, ok := err.(*exec.ExitError); ok {
			return ee.ExitCode(), lines
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, lines
	}
	note := func(lines []string) {
		for _, l := range lines {
			for _, k := range []string{"task_failed", "task_blocked", "task_completed", "recovered", "run_held", "summary:", "failed:"} {
				if strings.Contains(l, k) {
					stamp("%s", l)
					break
				}
			}
		}
	}
	stamp("run 1 starts")
	_, lines := run("agent_started")
	note(lines)
	// The user takes the main checkout for their own work.
	git := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("switch", "-q", "-c", "mine")
	mine := git("rev-parse", "mine")
	stamp("the user switched the checkout to branch mine")
	stamp("run 2 starts")
	_, lines = run("signal: COMPLETE")
	note(lines)
	stamp("run 3 starts")
	code, lines := run("")
	note(lines)
	stamp("run 3 exited %d", code)
	for _, l := range timeline {
		t.Log(l)
	}
	if code != ExitUnfinished {
		t.Fatalf("last run exited %d, want %d\n%s", code, ExitUnfinished, strings.Join(lines, "\n"))
	}
	for _, id := range normal {
		if got := git("show", "main:f-"+id+".txt"); got != id {
			t.Errorf("%s did not land on main: %q", id, got)
		}
		if r := chorus(t, dir, "task", "show", id); !strings.Contains(r.stdout, "status: closed") {
			t.Errorf("%s: %s", id, r.stdout)
		}
	}
	if got := git("rev-parse", "mine"); got != mine {
		t.Errorf("the user's branch moved: %s → %s", mine, got)
	}
	r := chorus(t, dir, "task", "show", crasher)
	if !strings.Contains(r.stdout, "status: failed") || !strings.Contains(r.stdout, "exited with code 3") {
		t.Errorf("crasher:\n%s", r.stdout)
	}
	if r := chorus(t, dir, "task", "show", person); !strings.Contains(r.stdout, "status: blocked") {
		t.Errorf("the person's task:\n%s", r.stdout)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "failed: "+crasher) {
		t.Errorf("the last summary does not list the crasher:\n%s", strings.Join(lines, "\n"))
	}
	// The run went on: the normal tasks were not held behind the crasher,
	// and nothing of theirs failed for want of iterations.
	log, _ := os.ReadFile(filepath.Join(dir, ".chorus/session-log.jsonl"))
	for _, l := range strings.Split(string(log), "\n") {
		if strings.Contains(l, `"task_failed"`) && !strings.Contains(l, crasher) {
			t.Errorf("a normal task failed: %s", l)
		}
		// Iterations the kills ended were given back: every normal task
		// finished within its first.
		if strings.Contains(l, `"iteration_started"`) && !strings.Contains(l, crasher) && !strings.Contains(l, `"iteration":1,`) && !strings.Contains(l, `"iteration":1}`) {
			t.Errorf("a normal task spent a second iteration: %s", l)
		}
		if strings.Contains(l, `"run_held"`) || strings.Contains(l, "autopilot paused") {
			t.Errorf("the run held or paused for one task: %s", l)
		}
	}
	rep := chorus(t, dir, "report", "--markdown")
	for _, want := range []string{crasher, person, "reopen " + crasher} {
		if !strings.Contains(rep.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, rep.stdout)
		}
	}
}
