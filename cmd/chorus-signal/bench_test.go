//go:build unix

package main_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

// BenchmarkSignalStart starts `chorus signal COMPLETE` from the chorus
// binary and from chorus-signal, and `git --version`, in turn (A B C A B
// C …, so all see the same machine), outside Chorus, where the signal
// stops at its environment check: the process start each agent's signal
// pays. It reports each one's CPU against git's, pair by pair: the median,
// the least and the most.
func BenchmarkSignalStart(b *testing.B) {
	full := testkit.Chorus(b)
	fast := filepath.Join(filepath.Dir(full), "chorus-signal")
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
	cpu := func(name string, args ...string) time.Duration {
		cmd := exec.Command(name, args...)
		cmd.Env = env
		_ = cmd.Run() // exit 2 outside Chorus: the start is what counts
		if cmd.ProcessState == nil {
			b.Fatalf("%s did not start", name)
		}
		return testkit.CPU(cmd.ProcessState)
	}
	var fullR, fastR []float64
	for b.Loop() {
		f := cpu(full, "signal", "COMPLETE")
		s := cpu(fast, "signal", "COMPLETE")
		g := max(cpu("git", "--version"), 100*time.Microsecond)
		fullR = append(fullR, float64(f)/float64(g))
		fastR = append(fastR, float64(s)/float64(g))
	}
	testkit.ReportSpread(b, fullR, "chorus/git")
	testkit.ReportSpread(b, fastR, "chorus-signal/git")
}
