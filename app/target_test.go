package app

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/report"
)

func configTarget(t *testing.T, dir string) (string, bool) {
	t.Helper()
	var cfg struct {
		Merge map[string]any `json:"merge"`
	}
	b, err := os.ReadFile(filepath.Join(dir, ".chorus/config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	v, ok := cfg.Merge["targetBranch"].(string)
	return v, ok
}

// init records the target: the branch checked out (before its first
// commit too), or on a detached HEAD the repository's default branch.
func TestInitRecordsTarget(t *testing.T) {
	dir := gitRepo(t)
	gitOut(t, dir, "checkout", "-q", "-b", "trunk")
	r := chorus(t, dir, "init", "--yes")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got, _ := configTarget(t, dir); got != "trunk" {
		t.Errorf("unborn trunk: recorded %q", got)
	}
	if !strings.Contains(r.stderr, "target branch: trunk") {
		t.Errorf("init does not say the target:\n%s", r.stderr)
	}

	// init again on a config an older init left without a target.
	setTarget(t, dir, "")
	r = chorus(t, dir, "init", "--yes")
	if got, _ := configTarget(t, dir); r.code != 0 || got != "trunk" || !strings.Contains(r.stderr, `recorded merge.targetBranch "trunk"`) {
		t.Errorf("init again: exit %d, target %q\n%s", r.code, got, r.stderr)
	}

	dir = gitRepo(t)
	gitOut(t, dir, "commit", "-q", "--allow-empty", "-m", "first")
	gitOut(t, dir, "checkout", "-q", "-b", "feature")
	gitOut(t, dir, "checkout", "-q", "--detach")
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got, _ := configTarget(t, dir); got != "main" {
		t.Errorf("detached HEAD: recorded %q, want the default main", got)
	}
}

// setTarget rewrites merge.targetBranch as an older init left it.
func setTarget(t *testing.T, dir, target string) {
	t.Helper()
	path := filepath.Join(dir, ".chorus/config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["merge"].(map[string]any)["targetBranch"] = target
	b, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestTargetStaysAfterBranchSwitch: a config with no target (as init wrote
// before) gets the branch of the first run recorded, once, and said. The
// user then checks out a branch of their own in the main checkout while a
// run goes on; the engine is killed (SIGKILL) and restarted, and the
// restarted engine re-adopts the agent, which finishes the same turn (its
// prompt runs once). Every merge lands on the recorded target; the user's
// branch and checkout get nothing.
func TestTargetStaysAfterBranchSwitch(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "second-started")
	release := filepath.Join(t.TempDir(), "release")
	dir := scriptedProject(t, `
@ prompt~first-task
write a.txt "a"
commit "feat: a"
signal COMPLETE
@ prompt~second-task
run "[ -f b.txt ] || { echo b > b.txt && git add -A && git commit -q -m 'feat: b'; }"
run "if [ -f `+marker+` ]; then touch `+marker+`.again; else touch `+marker+`; fi"
signal PROGRESS 50
run "while [ ! -f `+release+` ]; do sleep 0.1; done"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["merge"].(map[string]any)["targetBranch"] = ""
	})
	if r := chorus(t, dir, "task", "create", "first-task"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	code, out := runBinary(t, dir, "--autopilot", "--headless", "--max-agents", "1")
	if code != 0 {
		t.Fatalf("first run: exit %d\n%s", code, out)
	}
	if got, _ := configTarget(t, dir); got != "main" {
		t.Fatalf("the first run recorded %q\n%s", got, out)
	}
	if !strings.Contains(out, `merge.targetBranch was empty: recorded "main"`) {
		t.Errorf("the recording was not said:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err != nil {
		t.Fatalf("a.txt did not land on the checked-out main: %v", err)
	}

	// The second task runs; mid-run the user moves to a branch of their own.
	if r := chorus(t, dir, "task", "create", "second-task"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless", "--max-agents", "1")
	pipe, _ := cmd.StdoutPipe()
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(pipe)
	var transcript []string
	for sc.Scan() {
		transcript = append(transcript, sc.Text())
		if strings.Contains(sc.Text(), "PROGRESS") {
			break
		}
	}
	if strings.Contains(strings.Join(transcript, "\n"), "merge.targetBranch was empty") {
		t.Errorf("the target was recorded twice:\n%s", strings.Join(transcript, "\n"))
	}
	gitOut(t, dir, "checkout", "-q", "-b", "mine")
	mine := gitOut(t, dir, "rev-parse", "mine")
	_ = cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for sc.Scan() {
		}
	}()
	_ = cmd.Wait()

	// The agent outlived the engine and waits; let it finish once the
	// restarted engine has it back.
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runBinary(t, dir, "--autopilot", "--headless", "--max-agents", "1")
	if code != 0 {
		t.Fatalf("run after the kill: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(marker + ".again"); err == nil {
		t.Errorf("the agent was started again instead of re-adopted:\n%s", out)
	}
	if !strings.Contains(out, "target branch main") {
		t.Errorf("the restarted run does not merge into main:\n%s", out)
	}
	if got := gitOut(t, dir, "rev-parse", "mine"); got != mine {
		t.Errorf("the user's branch moved: %s → %s\n%s", mine, got, out)
	}
	if got := gitOut(t, dir, "symbolic-ref", "--short", "HEAD"); got != "mine" {
		t.Errorf("the user's checkout was switched to %s", got)
	}
	if _, err := os.Stat(filepath.Join(dir, "b.txt")); err == nil {
		t.Error("b.txt appeared in the user's checkout")
	}
	if files := gitOut(t, dir, "ls-tree", "--name-only", "main"); !strings.Contains(files, "b.txt") || !strings.Contains(files, "a.txt") {
		t.Errorf("main lacks the work: %s\n%s", files, out)
	}
	if got, _ := configTarget(t, dir); got != "main" {
		t.Errorf("the target became %q", got)
	}
}

// accept-target names the branch it moves.
func TestAcceptTargetNamesBranch(t *testing.T) {
	dir := scriptedProject(t, "signal COMPLETE\n", nil)
	gitOut(t, dir, "checkout", "-q", "-b", "mine")
	r := chorus(t, dir, "merge", "accept-target")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "target accepted: the tip of branch main (merge.targetBranch)") {
		t.Errorf("accept-target does not name main:\n%s", r.stderr)
	}
}

// A config left empty by an older init, in a repository where Chorus
// merged into main before and the user has since checked out their own
// branch: the first start records main (from the session log), not the
// user's branch, and accept-target then names main.
func TestEmptyTargetTakesTheLastSessions(t *testing.T) {
	dir := scriptedProject(t, "signal COMPLETE\n", func(cfg map[string]any) {
		cfg["merge"].(map[string]any)["targetBranch"] = ""
	})
	if err := chorusdir.At(dir).AppendLog("implementation", report.SessionStarted, map[string]any{"target": "main"}); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "checkout", "-q", "-b", "mine")
	r := chorus(t, dir, "merge", "accept-target")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if got, _ := configTarget(t, dir); got != "main" {
		t.Errorf("recorded %q, want main\n%s", got, r.stderr)
	}
	if !strings.Contains(r.stderr, `recorded "main", the branch Chorus merged into last time`) || !strings.Contains(r.stderr, "the tip of branch main") {
		t.Errorf("messages:\n%s", r.stderr)
	}
}
