package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/internal/clitest"
	"github.com/chorus-dev/chorus/internal/modelserver"
)

// The built binary, `--headless --autopilot`, with headless Claude Code:
// the task closes and the summary reports what it cost.
func TestHeadlessBinarySummaryShowsUsage(t *testing.T) {
	if skipWhy != "" {
		t.Skip(skipWhy)
	}
	srv, err := modelserver.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	git(t, dir, "config", "user.email", "t@example.com")
	git(t, dir, "config", "user.name", "T")
	os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644)
	git(t, dir, "add", ".")
	git(t, dir, "commit", "-q", "-m", "init")
	run := func(args ...string) (string, int) {
		cmd := exec.Command(chorusBin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "CHORUS_AGENTS_DEFAULT=claude-headless")
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		out := stdout.String() + stderr.String()
		if len(args) > 0 && args[0] == "task" {
			out = stdout.String() // the new task's id
		}
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), code
	}
	if out, code := run("init", "--yes"); code != 0 {
		t.Fatalf("init: %s", out)
	}
	env, err := clitest.ClaudeHome(t.TempDir(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, ".chorus", "config.json")
	var cfg map[string]any
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	agents := cfg["agents"].(map[string]any)
	agents["available"].(map[string]any)["claude-headless"] = map[string]any{
		"command": tools.Claude, "args": []string{"--dangerously-skip-permissions", "--output-format", "stream-json", "--verbose", "-p"},
		"prompt": "arg", "format": "claude-stream-json", "env": env,
	}
	agents["default"] = "claude-headless"
	cfg["qualityCommands"] = []any{}
	b, _ = json.MarshalIndent(cfg, "", "  ")
	os.WriteFile(path, b, 0o644)
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-q", "-m", "chorus setup")
	out, code := run("task", "create", "say hello", "-p", "1")
	if code != 0 {
		t.Fatalf("task create: %s", out)
	}
	id := strings.TrimSpace(out)
	srv.Add(modelserver.Script{Match: []string{id}, Turns: []modelserver.Turn{
		{Tools: []modelserver.Tool{modelserver.Bash("echo hello > hello.txt && " + commit("feat: hello", id))}, Usage: modelserver.Usage{Input: 12000, Output: 300}},
		{Text: "<chorus>COMPLETE</chorus>", Usage: modelserver.Usage{Input: 12500, Output: 20}},
	}})
	out, code = run("--headless", "--autopilot")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	var usage, task bool
	for _, l := range strings.Split(out, "\n") {
		usage = usage || strings.HasPrefix(l, "  usage: 25k tokens")
		task = task || (strings.Contains(l, id+": 25k tokens") && strings.Contains(l, "$"))
	}
	if !usage || !task {
		t.Fatalf("no usage in the summary:\n%s", out)
	}
}
