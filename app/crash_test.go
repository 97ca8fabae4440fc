package app

import (
	"bufio"
	"context"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
)

// TestCrashHarness kills Chorus with SIGKILL at random points of an
// autopilot batch, many times, restarting it each time. At the end every
// task is closed and merged exactly once, every agent commit is reachable,
// no agent process is left and no lock is held.
func TestCrashHarness(t *testing.T) {
	if testing.Short() {
		t.Skip("long")
	}
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > f-$CHORUS_TASK_ID.txt"
run "git add -A && git commit -q -m 'feat: crash work' || true"
print "between commit and signal"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": "true", "required": true, "order": 1}}
	})
	var ids []string
	for i := 0; i < 6; i++ {
		r := chorus(t, dir, "task", "create", "crash task "+string(rune('a'+i)))
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	kills := 0
	finished := false
	var last []string
	for run := 0; run < 40 && !finished; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--max-agents", "3")
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = cmd.Stdout
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		killAfter := 1 + rng.Intn(25) // output lines before the kill
		sc := bufio.NewScanner(out)
		lines := 0
		var transcript []string
		killed := false
		for sc.Scan() {
			lines++
			transcript = append(transcript, sc.Text())
			if run < 12 && lines == killAfter {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
				kills++
				break
			}
		}
		go func() {
			for sc.Scan() {
			}
		}()
		err := cmd.Wait()
		cancel()
		if !killed {
			if err != nil {
				// Tasks interrupted mid-merge may need one more run; anything
				// else is a failure.
				if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitUnfinished {
					t.Fatalf("run %d: %v\n%s\nholders: %s", run, err, strings.Join(transcript, "\n"), lockHolders(filepath.Join(dir, ".chorus/chorus.lock")))
				}
				last = transcript
				continue
			}
			finished = true
		}
	}
	if !finished {
		t.Fatalf("the batch never finished after %d kills; last run:\n%s", kills, strings.Join(last, "\n"))
	}
	t.Logf("%d kills", kills)
	mainLog, _ := exec.Command("git", "-C", dir, "log", "--format=%B", "main").Output()
	for _, id := range ids {
		r := chorus(t, dir, "task", "show", id, "--json")
		if !strings.Contains(r.stdout, `"status": "`+beads.StatusClosed+`"`) {
			t.Errorf("%s not closed: %s", id, r.stdout)
		}
		if n := strings.Count(string(mainLog), "Chorus-Task: "+id+"\n"); n != 1 {
			hist, _ := os.ReadFile(filepath.Join(dir, ".chorus/merge-history.jsonl"))
			state, _ := os.ReadFile(filepath.Join(dir, ".chorus/state.json"))
			events, _ := exec.Command("grep", id, filepath.Join(dir, ".chorus/session-log.jsonl")).Output()
			t.Errorf("%s merged %d times\nhistory: %s\nstate: %s\nevents:\n%s", id, n, hist, state, events)
		}
	}
	// Every agent commit is reachable from a ref. A commit killed after
	// writing its object but before moving the branch never happened for
	// git; its work is safe if a reachable commit holds the same tree (the
	// WIP commit recovery makes of the worktree).
	reachableTrees := map[string]bool{}
	trees, _ := exec.Command("git", "-C", dir, "log", "--all", "--format=%T").Output()
	for _, tr := range strings.Fields(string(trees)) {
		reachableTrees[tr] = true
	}
	unreachable, _ := exec.Command("git", "-C", dir, "fsck", "--no-reflogs", "--unreachable", "--no-progress").Output()
	for _, l := range strings.Split(string(unreachable), "\n") {
		f := strings.Fields(l)
		if len(f) == 3 && f[1] == "commit" {
			info, _ := exec.Command("git", "-C", dir, "log", "-1", "--format=%T %s", f[2]).Output()
			tree, msg, _ := strings.Cut(strings.TrimSpace(string(info)), " ")
			if (strings.HasPrefix(msg, "feat:") || strings.HasPrefix(msg, "wip(")) && !reachableTrees[tree] {
				t.Errorf("agent commit lost: %s %s", f[2], msg)
			}
		}
	}
	// No agent process is left: nothing runs with its cwd in the worktrees.
	procs, _ := filepath.Glob("/proc/[0-9]*/cwd")
	wtRoot := filepath.Join(dir, ".worktrees")
	for _, p := range procs {
		if cwd, err := os.Readlink(p); err == nil && strings.HasPrefix(cwd, wtRoot) {
			t.Errorf("process left running in %s (%s)", cwd, p)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ".chorus/chorus.lock")); !os.IsNotExist(err) {
		t.Errorf("lock file left: %v", err)
	}
}

// lockHolders names the processes with the lock file open, for failures.
func lockHolders(path string) string {
	var out []string
	fds, _ := filepath.Glob("/proc/[0-9]*/fd/*")
	for _, fd := range fds {
		if target, err := os.Readlink(fd); err == nil && target == path {
			pid := strings.Split(fd, "/")[2]
			cmd, _ := os.ReadFile("/proc/" + pid + "/cmdline")
			out = append(out, pid+": "+strings.ReplaceAll(string(cmd), "\x00", " "))
		}
	}
	return strings.Join(out, "; ")
}
