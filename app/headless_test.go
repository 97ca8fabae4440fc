package app

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/report"
)

// chorusBinary is the real command, built once per test run.
func chorusBinary(t testing.TB) string { return testkit.Chorus(t) }

// scriptedProject is an initialised repository whose default agent is the
// scripted agent running script, with one commit on main.
func scriptedProject(t *testing.T, script string, mutate func(cfg map[string]any)) string {
	t.Helper()
	bin := chorusBinary(t)
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	path := filepath.Join(dir, ".chorus/config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(path)
	json.Unmarshal(b, &cfg)
	agents := cfg["agents"].(map[string]any)
	agents["available"].(map[string]any)["script"] = map[string]any{"command": bin, "args": []string{"scripted-agent", "--script", "agent.script"}}
	agents["default"] = "script"
	cfg["completion"].(map[string]any)["stopGraceSeconds"] = 2
	if mutate != nil {
		mutate(cfg)
	}
	b, _ = json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, b, 0o644)
	os.WriteFile(filepath.Join(dir, "agent.script"), []byte(script), 0o644)
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "chorus setup"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
	}
	return dir
}

func runBinary(t *testing.T, dir string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chorusBinary(t), append([]string{"-C", dir}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String()
}

func TestHeadlessAutopilotEndToEnd(t *testing.T) {
	dir := scriptedProject(t, `
run "echo $CHORUS_TASK_ID > done-$CHORUS_TASK_ID.txt"
commit "feat: task work"
signal COMPLETE
`, func(cfg map[string]any) {
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": "ls done-*.txt", "required": true, "order": 1}}
	})
	var ids []string
	for _, title := range []string{"one", "two", "three"} {
		r := chorus(t, dir, "task", "create", title)
		ids = append(ids, strings.TrimSpace(r.stdout))
	}
	code, out := runBinary(t, dir, "--autopilot", "--headless", "--max-agents", "2")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !strings.Contains(out, "summary: 3 closed, 0 failed") || !strings.Contains(out, "3 merges") {
		t.Fatalf("summary missing:\n%s", out)
	}
	for _, id := range ids {
		r := chorus(t, dir, "task", "show", id, "--json")
		var tk beads.Task
		json.Unmarshal([]byte(r.stdout), &tk)
		if tk.Status != beads.StatusClosed {
			t.Errorf("%s: %s", id, tk.Status)
		}
		if b, err := exec.Command("git", "-C", dir, "show", "main:done-"+id+".txt").Output(); err != nil || strings.TrimSpace(string(b)) != id {
			t.Errorf("%s not on main: %v %q", id, err, b)
		}
	}
	// The agents' `chorus` (their signals went through it) was
	// chorus-signal, installed beside the binary.
	if link, err := os.Readlink(filepath.Join(dir, ".chorus/bin/chorus")); err != nil || link != filepath.Join(filepath.Dir(chorusBinary(t)), "chorus-signal") {
		t.Errorf("agents' chorus is %q (%v), want chorus-signal", link, err)
	}
	// Nothing of the run is left behind: no lock, no agent processes.
	if _, err := os.Stat(filepath.Join(dir, ".chorus/chorus.lock")); !os.IsNotExist(err) {
		t.Errorf("lock left behind: %v", err)
	}
	// The diagnostic log tells the session's story at the default level.
	diag, err := os.ReadFile(filepath.Join(dir, ".chorus/logs/chorus.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`msg="session started"`, "mode=autopilot", "config=" + filepath.Join(dir, ".chorus/config.json"),
		"kind=agent_started", "kind=agent_finished", "kind=merge_landed", `msg="session ended"`} {
		if !strings.Contains(string(diag), want) {
			t.Errorf("chorus.log lacks %q:\n%s", want, diag)
		}
	}
	if strings.Contains(string(diag), "level=DEBUG") {
		t.Errorf("debug records at the default level:\n%s", diag)
	}
}

func TestHeadlessFailureExitsNonZero(t *testing.T) {
	dir := scriptedProject(t, "signal BLOCKED \"needs credentials\"\n", nil)
	chorus(t, dir, "task", "create", "blocked task")
	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitUnfinished || !strings.Contains(out, "1 blocked") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}

func TestSecondChorusIsRefused(t *testing.T) {
	dir := scriptedProject(t, "hang\n", nil)
	chorus(t, dir, "task", "create", "long")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	first := exec.CommandContext(ctx, chorusBinary(t), "-C", dir, "--autopilot", "--headless")
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	first.Stderr = first.Stdout
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait until the first one has its agent running.
	buf := make([]byte, 4096)
	var seen strings.Builder
	for !strings.Contains(seen.String(), "agent_started") {
		n, err := stdout.Read(buf)
		if err != nil {
			t.Fatalf("first chorus ended: %v\n%s", err, seen.String())
		}
		seen.Write(buf[:n])
	}
	code, msg := runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitLocked || !strings.Contains(msg, fmt.Sprintf("pid %d", first.Process.Pid)) {
		t.Fatalf("second chorus: %d %s", code, msg)
	}
	first.Process.Signal(os.Interrupt)
	go func() {
		for {
			if _, err := stdout.Read(buf); err != nil {
				return
			}
		}
	}()
	err = first.Wait()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != ExitInterrupted {
		t.Fatalf("first chorus after interrupt: %v", err)
	}
	// Interrupted: the task is open again with its work kept.
	r := chorus(t, dir, "task", "list", "--json")
	if !strings.Contains(r.stdout, `"status":"open"`) {
		t.Fatalf("task not released: %s", r.stdout)
	}
}

func TestMergeUserBranch(t *testing.T) {
	dir := scriptedProject(t, "hang\n", func(cfg map[string]any) {
		cfg["qualityCommands"] = []map[string]any{{"name": "no-broken", "command": "! test -f broken.txt", "required": true, "order": 1}}
		cfg["merge"].(map[string]any)["agentResolve"] = false // a failing user branch goes straight to its owner
	})
	gitIn := func(args ...string) string {
		out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	gitIn("checkout", "-q", "-b", "feature")
	os.WriteFile(filepath.Join(dir, "feature.txt"), []byte("mine\n"), 0o644)
	gitIn("add", "feature.txt")
	gitIn("commit", "-q", "-m", "my feature")
	gitIn("checkout", "-q", "-b", "bad", "main")
	os.WriteFile(filepath.Join(dir, "broken.txt"), []byte("x\n"), 0o644)
	gitIn("add", "broken.txt")
	gitIn("commit", "-q", "-m", "breaks the checks")
	gitIn("checkout", "-q", "main")
	code, out := runBinary(t, dir, "merge-user", "feature")
	if code != 0 {
		t.Fatalf("merge-user feature: %d\n%s", code, out)
	}
	if gitIn("show", "main:feature.txt") != "mine" || gitIn("rev-parse", "--verify", "feature") == "" {
		t.Fatalf("not landed or branch gone")
	}
	before := gitIn("rev-parse", "main")
	code, out = runBinary(t, dir, "merge-user", "bad")
	if code != ExitUnfinished || !strings.Contains(out, "waits for you") {
		t.Fatalf("merge-user bad: %d\n%s", code, out)
	}
	if gitIn("rev-parse", "main") != before {
		t.Fatal("main moved although the quality command failed")
	}
	if code, out := runBinary(t, dir, "merge-user", "no-such-branch"); code != ExitFailure || !strings.Contains(out, "no local branch") {
		t.Fatalf("unknown branch: %d %s", code, out)
	}
}

// The README's first command, headless: every task closed, the conflict
// resolved by an agent, one task fixed on its second iteration, main green.
func TestDemoHeadless(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "demo")
	code, out := runBinary(t, t.TempDir(), "demo", "--headless", "--fast", "--dir", dir)
	if code != 0 {
		t.Fatalf("demo: %d\n%s", code, out)
	}
	for _, want := range []string{"summary: 8 closed, 0 failed", "8 merges", "merge_resolved", "quality: tests failed", "The demo repository is " + dir,
		", 1 conflict resolved by an agent, 1 failed check retried", " -C " + dir + " task list"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
	test := exec.Command("sh", "tests/run.sh")
	test.Dir = dir
	if b, err := test.CombinedOutput(); err != nil {
		t.Fatalf("main is not green: %v\n%s", err, b)
	}
	if b, _ := exec.Command("sh", filepath.Join(dir, "greet.sh"), "-f", "Ada").Output(); strings.TrimSpace(string(b)) != "Bonjour, Ada." {
		t.Fatalf("both sides of the conflict not kept: %q", b)
	}
	// What the run wrote is git-ignored: only the setup the demo committed
	// and the task store, which the run changes, show in git status.
	porcelain := testkit.Git(t, dir, "status", "--porcelain", "--untracked-files=all")
	for _, l := range strings.Split(porcelain, "\n") {
		if l == "" {
			continue
		}
		f := strings.Fields(l) // the output is trimmed: a first " M" loses its space
		if p := f[len(f)-1]; p != ".beads/issues.jsonl" && p != ".chorus/config.json" {
			t.Errorf("runtime file not ignored: %q", l)
		}
	}
	// The morning report tells the conflict the agent resolved and the
	// iteration retried, with why.
	code, js := runBinary(t, dir, "report", "--json")
	var rep report.Report
	if code != 0 || json.Unmarshal([]byte(js), &rep) != nil {
		t.Fatalf("report: %d\n%s", code, js)
	}
	// (A loaded machine may add a retry or a conflict: each told is checked
	// for the one the demo makes.)
	resolved, testsRetry := false, false
	for _, c := range rep.Conflicts {
		resolved = resolved || c.Outcome == "resolved by an agent" && len(c.Files) > 0
	}
	for _, x := range rep.Retries {
		testsRetry = testsRetry || strings.Contains(x.Why, `"tests"`)
	}
	if !resolved || !testsRetry {
		t.Errorf("conflicts: %+v\nretries: %+v", rep.Conflicts, rep.Retries)
	}
	if len(rep.Landed) != 8 || len(rep.Tasks) != 8 {
		t.Errorf("%d landed, %d task rows", len(rep.Landed), len(rep.Tasks))
	}
}

// An interactive agent whose screen shows it cannot go on (here the shape
// of Claude Code's "Not logged in" screen) gets its task blocked with that
// cause in a headless run, in seconds rather than at the task timeout.
func TestHeadlessStuckAgentBlocksWithCause(t *testing.T) {
	dir := scriptedProject(t, `
print "❯ say hello please"
print "  ⎿  Not logged in · Please run /login"
print "────────────────────────────────────────"
print "❯ Once fixed, resend your message"
print "────────────────────────────────────────"
print "  ⏵⏵ bypass permissions on"
hang
`, nil)
	r := chorus(t, dir, "task", "create", "say hello")
	if r.code != 0 {
		t.Fatal(r.stderr)
	}
	id := strings.TrimSpace(r.stdout)
	_, out := runBinary(t, dir, "--headless", "--autopilot")
	for _, want := range []string{
		"needs_human: not logged in: Not logged in · Please run /login",
		"needs a human: " + id + ": not logged in: Not logged in · Please run /login",
	} {
		if !strings.Contains(out, want) {
			t.Fatalf("no %q in:\n%s", want, out)
		}
	}
	show := chorus(t, dir, "task", "show", id)
	if !strings.Contains(show.stdout, "blocked") || !strings.Contains(show.stdout, "Not logged in") {
		t.Fatalf("task after the run:\n%s%s", show.stdout, show.stderr)
	}
}
