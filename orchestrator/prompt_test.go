package orchestrator

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// The prompt names chorus by a command that works in a login shell (which
// rebuilds PATH), even from a folder whose name a shell would split.
func TestPromptNamesChorusForALoginShell(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my tools's bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "chorus")
	b, err := os.ReadFile(testkit.Chorus(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, b, 0o755); err != nil {
		t.Fatal(err)
	}
	d := dirs{prompts: t.TempDir(), chorus: exe} // no prompt file: the built-in template
	prompt, err := buildPrompt(d, config.Default(), config.AgentProfile{}, "codex", beads.Task{ID: "t-1", Title: "x"}, "agent/codex/t-1")
	if err != nil {
		t.Fatal(err)
	}
	quoted := chorusCommand(exe)
	if !strings.Contains(prompt, "`"+quoted+" signal COMPLETE`") || !strings.Contains(prompt, "nothing to change") {
		t.Fatalf("prompt:\n%s", prompt)
	}
	// Run as the prompt says, in a login shell without chorus on PATH:
	// it is found, and answers that it runs outside Chorus (exit 2).
	out, err := exec.Command("bash", "-lc", quoted+" signal COMPLETE").CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), "not running under Chorus") {
		t.Fatalf("%s in a login shell: %v\n%s", quoted, err, out)
	}
	if got := chorusCommand("/usr/local/bin/chorus"); got != "/usr/local/bin/chorus" {
		t.Errorf("plain path quoted: %s", got)
	}
	if got := chorusCommand(""); got != "chorus" {
		t.Errorf("unknown executable: %s", got)
	}
}

// A prompt file written before {{.Chorus}} existed still gets the path.
func TestOldPromptGetsChorusPath(t *testing.T) {
	d := dirs{prompts: t.TempDir(), chorus: "/opt/chorus/bin/chorus"}
	os.WriteFile(filepath.Join(d.prompts, "impl-agent.md"), []byte("# {{.TaskID}}\nRun `chorus signal COMPLETE`.\n"), 0o644)
	prompt, err := buildPrompt(d, config.Default(), config.AgentProfile{}, "codex", beads.Task{ID: "t-1", Title: "x"}, "b")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(prompt, "Run `/opt/chorus/bin/chorus signal COMPLETE`.") {
		t.Fatalf("prompt:\n%s", prompt)
	}
}
