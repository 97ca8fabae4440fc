package config

import (
	"os"
	"path/filepath"
	"testing"
)

// init makes .chorus/ private (it will hold transcripts and state) while
// the project's .agent/ files stay ordinary shared files.
func TestInstallModes(t *testing.T) {
	root := t.TempDir()
	if _, err := Install(root, Default()); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]os.FileMode{
		".chorus":                       0o700,
		".chorus/logs":                  0o700,
		".chorus/prompts":               0o700,
		".chorus/config.json":           0o600,
		".chorus/task-rules.md":         0o600,
		".chorus/prompts/impl-agent.md": 0o600,
		".agent":                        0o755,
		".agent/learnings.md":           0o644,
	} {
		st, err := os.Stat(filepath.Join(root, p))
		if err != nil {
			t.Fatal(err)
		}
		// The umask may take bits away from the shared files, never add.
		if got := st.Mode().Perm(); got != want && (want&0o077 == 0 || got&^want != 0) {
			t.Errorf("%s: mode %o, want %o", p, got, want)
		}
	}
}
