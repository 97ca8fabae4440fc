package ptyproc

import (
	"os"
	"path/filepath"
	"testing"
)

// An agent's transcript holds whatever it printed: readable by its user
// only.
func TestLogPrivate(t *testing.T) {
	logPath := filepath.Join(t.TempDir(), "agent.log")
	p := start(t, Spec{Argv: []string{"sh", "-c", "echo secret"}, LogPath: logPath})
	c := collect(p)
	if code, _ := p.Wait(); code != 0 {
		t.Fatalf("exit %d", code)
	}
	c.waitClosed(t)
	st, err := os.Stat(logPath)
	if err != nil {
		t.Fatal(err)
	}
	if m := st.Mode().Perm(); m != 0o600 {
		t.Errorf("log mode %o, want 600", m)
	}
}
