//go:build unix

package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// The chorus binaries the tests start are built once and removed after.
func TestMain(m *testing.M) { testkit.Main(m) }

func run(t *testing.T, env []string, bin string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return code, out.String(), errb.String()
}

// chorus-signal answers `signal` as chorus does, and hands anything else
// to the chorus binary CHORUS_EXE names.
func TestSameAsChorus(t *testing.T) {
	full := testkit.Chorus(t)
	fast := filepath.Join(filepath.Dir(full), "chorus-signal")
	base := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for _, args := range [][]string{
		{"signal", "COMPLETE"},  // not under Chorus: usage error
		{"signal", "NOPE", "x"}, // not under Chorus either way
	} {
		fc, fo, fe := run(t, base, full, args...)
		sc, so, se := run(t, base, fast, args...)
		if fc != sc || fo != so || fe != se || fc == 0 {
			t.Errorf("%v: chorus %d %q %q, chorus-signal %d %q %q", args, fc, fo, fe, sc, so, se)
		}
	}
	env := append(base, "CHORUS_DIR="+t.TempDir(), "CHORUS_TASK_ID=ch-1", "CHORUS_AGENT_ID=a1", "CHORUS_SIGNAL_KEY=k")
	fc, fo, fe := run(t, env, full, "signal", "COMPLETE")
	sc, so, se := run(t, env, fast, "signal", "COMPLETE")
	if fc != sc || fo != so || fe != se {
		t.Errorf("no engine: chorus %d %q %q, chorus-signal %d %q %q", fc, fo, fe, sc, so, se)
	}
	// Anything else runs the chorus binary with the same arguments.
	fc, fo, _ = run(t, base, full, "--version")
	sc, so, _ = run(t, append(base, "CHORUS_EXE="+full), fast, "--version")
	if fc != 0 || sc != 0 || fo != so || fo == "" {
		t.Errorf("--version: chorus %d %q, chorus-signal %d %q", fc, fo, sc, so)
	}
	if code, _, stderr := run(t, base, fast, "--version"); code != 2 || stderr == "" {
		t.Errorf("--version without CHORUS_EXE: exit %d %q", code, stderr)
	}
}
