//go:build unix

package main_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// startHost runs an agent host as the engine's Local runner does (its own
// session, its flags after args) and returns the time until it said it
// listens and, once stopped, the CPU it took.
func startHost(tb testing.TB, exe string, args ...string) (ready, cpu time.Duration) {
	dir, err := os.MkdirTemp("", "chh")
	if err != nil {
		tb.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sock := filepath.Join(dir, "h.sock")
	cmd := exec.Command(exe, append(args, "--socket", sock, "--meta", filepath.Join(dir, "h.json"), "--orphan", "1m")...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	ready = time.Since(t0)
	if err != nil || line != "ready\n" {
		_ = cmd.Process.Kill()
		tb.Fatalf("%s said %q (%v)", exe, line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := host.StopHost(ctx, sock); err != nil {
		_ = cmd.Process.Kill()
		tb.Fatal(err)
	}
	_ = cmd.Wait()
	return ready, testkit.CPU(cmd.ProcessState)
}

// The small host is a host: it listens, says so, and a stop ends it.
func TestStartsAndStops(t *testing.T) {
	startHost(t, filepath.Join(filepath.Dir(testkit.Chorus(t)), "chorus-agent-host"))
}

// BenchmarkHostStart starts an agent host as `chorus agent-host` and as
// chorus-agent-host in turn (A B A B …, so both see the same machine), as
// the engine does for every agent run: the time until each listens and
// the CPU each took, chorus-agent-host's against chorus's, pair by pair:
// the median, the least and the most.
func BenchmarkHostStart(b *testing.B) {
	full := testkit.Chorus(b)
	small := filepath.Join(filepath.Dir(full), "chorus-agent-host")
	var wall, cpu []float64
	for b.Loop() {
		fw, fc := startHost(b, full, "agent-host")
		sw, sc := startHost(b, small)
		wall = append(wall, float64(sw)/float64(fw))
		cpu = append(cpu, float64(sc)/float64(max(fc, 100*time.Microsecond)))
	}
	testkit.ReportSpread(b, wall, "ready-small/full")
	testkit.ReportSpread(b, cpu, "cpu-small/full")
}
