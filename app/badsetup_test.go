package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Each broken setup gets a message that says what is wrong and what to do,
// with the setup exit code.
func TestBadSetupMessages(t *testing.T) {
	t.Run("no git on PATH", func(t *testing.T) {
		dir := gitRepo(t)
		if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
			t.Fatal(r.stderr)
		}
		t.Setenv("PATH", t.TempDir())
		for _, args := range [][]string{{"--headless", "--autopilot"}, {"status"}} {
			r := chorus(t, dir, args...)
			if r.code != ExitSetup || !strings.Contains(r.stderr, "git was not found on PATH") || strings.Contains(r.stderr, "detached HEAD") {
				t.Errorf("%v: %d %s", args, r.code, r.stderr)
			}
		}
		r := chorus(t, dir, "doctor")
		if r.code == 0 || !strings.Contains(r.stdout+r.stderr, "git was not found on PATH") {
			t.Errorf("doctor: %d %s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("bare repository", func(t *testing.T) {
		dir := t.TempDir()
		if out, err := exec.Command("git", "init", "-q", "--bare", filepath.Join(dir, "b.git")).CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		r := chorus(t, filepath.Join(dir, "b.git"), "status")
		if r.code != ExitSetup || !strings.Contains(r.stderr, "bare repository") || !strings.Contains(r.stderr, "git clone") {
			t.Errorf("status: %d %s", r.code, r.stderr)
		}
		r = chorus(t, filepath.Join(dir, "b.git"), "doctor")
		if !strings.Contains(r.stdout+r.stderr, "bare repository") {
			t.Errorf("doctor: %d %s%s", r.code, r.stdout, r.stderr)
		}
	})
	t.Run("deleted directory", func(t *testing.T) {
		gone := filepath.Join(gitRepo(t), ".worktrees", "claude-ch-1")
		r := chorus(t, gone, "status")
		if r.code != ExitSetup || !strings.Contains(r.stderr, "does not exist") || strings.Contains(r.stderr, "fork/exec") {
			t.Errorf("status: %d %s", r.code, r.stderr)
		}
	})
}

// A start removes the temp files a killed run left in .chorus/.
func TestStartCleansTempFiles(t *testing.T) {
	dir := scriptedProject(t, "run \"echo done > out.txt\"\ncommit \"feat: work\"\nsignal COMPLETE\n", nil)
	if r := chorus(t, dir, "task", "create", "one"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	stale := []string{filepath.Join(dir, ".chorus", ".state.json.tmp4242")}
	for _, p := range stale {
		if err := os.WriteFile(p, []byte("{"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if r := chorus(t, dir, "--headless", "--autopilot"); r.code != 0 {
		t.Fatalf("%d %s %s", r.code, r.stdout, r.stderr)
	}
	for _, p := range stale {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s left: %v", p, err)
		}
	}
}
