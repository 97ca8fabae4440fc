package app

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/claudetrust"
)

// With the default interactive Claude profile, init and doctor say when
// Claude Code has not trusted the repository (every new worktree would
// stop at its trust dialog) and how to fix it; once the user trusted the
// repository, doctor says its worktrees inherit that trust.
func TestInitAndDoctorSayClaudeTrust(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("CLAUDE_CONFIG_DIR", "")
	fakeAgents(t, "claude", "codex", "opencode")
	dir := gitRepo(t)
	r := chorus(t, dir, "init", "--yes", "--prefix", "ch")
	if r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	for _, want := range []string{"Claude Code has not trusted", "Run `claude` once in", "trustWorktrees"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("init does not say %q:\n%s", want, r.stderr)
		}
	}
	r = chorus(t, dir, "doctor")
	if !strings.Contains(r.stdout, "agent claude trust") || !strings.Contains(r.stdout, "has not trusted") {
		t.Fatalf("doctor says nothing of the trust dialog:\n%s", r.stdout)
	}
	root := strings.TrimSpace(git(t, dir, "rev-parse", "--show-toplevel"))
	if err := claudetrust.Trust(filepath.Join(home, ".claude.json"), root); err != nil {
		t.Fatal(err)
	}
	r = chorus(t, dir, "doctor")
	if strings.Contains(r.stdout, "has not trusted") || !strings.Contains(r.stdout, "its worktrees are trusted for each run") {
		t.Fatalf("doctor with the repository trusted:\n%s", r.stdout)
	}
}
