package orchestrator

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/chorusdir"
)

// A spec for a host far from the hub's files carries the prompt file its
// argv names, and only then (a file of an earlier, longer prompt is not
// sent), and does not name the hub's task store.
func TestFarSpecSendsThePromptFileAndNoBeadsDir(t *testing.T) {
	r := &agentRun{e: &Engine{opt: Options{Dir: chorusdir.At(t.TempDir())}}, id: "script-t-1"}
	pf := r.promptFile()
	if err := os.MkdirAll(filepath.Dir(pf), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pf, []byte("the long prompt"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"CHORUS_TASK_ID=t-1", "BEADS_DIR=/hub/.beads", "BEADS_ACTOR=a"}
	for _, tc := range []struct {
		arg   string
		files int
	}{
		{"the file " + pf + ". Read it.", 1},
		{"a short prompt", 0},
	} {
		hs := host.Spec{Argv: []string{"agent", tc.arg}, Env: env}
		if err := r.farSpec(&hs); err != nil {
			t.Fatal(err)
		}
		if len(hs.Files) != tc.files || tc.files == 1 && (hs.Files[0].Path != pf || hs.Files[0].Data != "the long prompt") {
			t.Errorf("argv %q: files %+v, want %d", tc.arg, hs.Files, tc.files)
		}
		if len(hs.Env) != 2 || hs.Env[0] != env[0] || hs.Env[1] != env[2] {
			t.Errorf("env %q: want %q without BEADS_DIR", hs.Env, env)
		}
	}
	if env[1] != "BEADS_DIR=/hub/.beads" {
		t.Errorf("the caller's env was changed: %q", env)
	}
	hs := host.Spec{Argv: []string{"agent", "the file " + pf}}
	os.Remove(pf)
	if err := r.farSpec(&hs); err == nil {
		t.Error("a prompt file gone before the start: no error")
	}
}
