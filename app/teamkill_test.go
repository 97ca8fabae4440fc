package app

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/internal/testkit"
	"github.com/chorus-dev/chorus/orchestrator"
)

// teamClone is a project whose tasks are in one shared bd stand-in
// database (server mode: no lock between commands), with the team timings
// short enough for a test.
func teamClone(t *testing.T) string {
	t.Helper()
	dir := scriptedProject(t, "hang\n", func(cfg map[string]any) {
		cfg["mode"] = "autopilot"
		cfg["agents"].(map[string]any)["maxParallel"] = 1
		cfg["team"] = map[string]any{"heartbeatSeconds": 1, "deadAfterSeconds": 3}
	})
	meta := `{"database":"dolt","backend":"dolt","dolt_mode":"server","dolt_server_host":"127.0.0.1","dolt_server_port":1,"dolt_database":"tm"}`
	if err := os.MkdirAll(filepath.Join(dir, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".beads", "metadata.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	stopHostsAtEnd(t, dir)
	return dir
}

// stopHostsAtEnd stops, when the test ends (after the Chorus processes it
// started are gone, killed or not), every agent host a Chorus of dir
// started, with its agent, and waits for each to exit: a Chorus killed
// with -9 leaves its hosted agents running, as it should.
func stopHostsAtEnd(t *testing.T, dir string) {
	t.Cleanup(func() {
		metas, _ := filepath.Glob(filepath.Join(dir, ".chorus", "hosts", "*.json"))
		for _, p := range metas {
			var m host.Meta
			if b, err := os.ReadFile(p); err != nil || json.Unmarshal(b, &m) != nil || m.HostPID <= 0 {
				continue
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			if err := host.StopHost(ctx, m.Socket); err != nil {
				_ = syscall.Kill(m.HostPID, syscall.SIGKILL)
			}
			cancel()
			if !testkit.WaitExit(t, m.HostPID, 30*time.Second) {
				t.Errorf("the agent host %d of %s did not end", m.HostPID, m.AgentID)
			}
		}
	})
}

// startChorus runs `chorus --headless --autopilot` in dir and streams its
// output lines; the process is killed when the test ends.
func startChorus(t *testing.T, dir string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(chorusBinary(t), "-C", dir, "--headless", "--autopilot")
	pr, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ch := make(chan string, 1024)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			select {
			case ch <- sc.Text():
			default:
			}
		}
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd, ch
}

// lineWith reads lines until one contains want (bounded).
func lineWith(t *testing.T, lines <-chan string, want string) string {
	t.Helper()
	limit := time.After(2 * time.Minute)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("output ended before a line with %q", want)
			}
			if strings.Contains(l, want) {
				return l
			}
		case <-limit:
			t.Fatalf("no line with %q", want)
		}
	}
}

// Two Chorus processes on one task queue; one is killed with SIGKILL while
// its agent works. The other leaves that claim alone until the dead one's
// heartbeat is older than team.deadAfterSeconds, then puts the task back
// to open, saying so.
func TestKilledInstancesClaimFreedAfterTimeout(t *testing.T) {
	bin := t.TempDir()
	if out, err := exec.Command("go", "build", "-o", filepath.Join(bin, "bd"), "github.com/chorus-dev/chorus/beads/internal/fakebd").CombinedOutput(); err != nil {
		t.Fatalf("building the bd stand-in: %v\n%s", err, out)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	t.Setenv("FAKEBD_QUIET", "1")
	t.Setenv("FAKEBD_LOCK", "server")
	t.Setenv("FAKEBD_DATA", t.TempDir())
	a, b := teamClone(t), teamClone(t)
	first := strings.TrimSpace(chorus(t, a, "task", "create", "first").stdout)
	second := strings.TrimSpace(chorus(t, a, "task", "create", "second").stdout)

	procA, outA := startChorus(t, a)
	claimA := lineWith(t, outA, "agent_started")
	procB, outB := startChorus(t, b)
	claimB := lineWith(t, outB, "agent_started")
	taskA := first
	if strings.Contains(claimA, second) {
		taskA = second
	}
	if strings.Contains(claimB, taskA) {
		t.Fatalf("both instances started on %s:\n%s\n%s", taskA, claimA, claimB)
	}
	// A's agent process, to end it with the test (a killed Chorus leaves it).
	var st orchestrator.State
	if raw, err := os.ReadFile(filepath.Join(a, ".chorus", "state.json")); err == nil && json.Unmarshal(raw, &st) == nil {
		for _, ag := range st.Agents {
			if ag.PID > 0 {
				pid := ag.PID
				t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			}
		}
	}
	killed := time.Now()
	if err := procA.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = procA.Wait()
	l := lineWith(t, outB, "dead_instance_released")
	waited := time.Since(killed)
	if !strings.Contains(l, taskA) {
		t.Fatalf("released the wrong task: %s (A held %s)", l, taskA)
	}
	m := regexp.MustCompile(`silent for ([0-9.]+m?[0-9.]*s)`).FindStringSubmatch(l)
	if m == nil {
		t.Fatalf("no silence in %q", l)
	}
	silent, err := time.ParseDuration(m[1])
	if err != nil || silent < 3*time.Second { // said to 100 ms
		t.Fatalf("released after %s of silence; the limit is 3s (%v)", m[1], err)
	}
	r := chorus(t, b, "task", "show", taskA, "--json")
	if !strings.Contains(r.stdout, `"status": "open"`) && !strings.Contains(r.stdout, `"status":"open"`) {
		t.Fatalf("task %s after the release:\n%s", taskA, r.stdout)
	}
	// B ends as asked, stopping its agent; A's is stopped at the end.
	_ = procB.Process.Signal(syscall.SIGTERM)
	_ = procB.Wait()
	t.Logf("A killed mid-task; B released A's task %s %s after the kill (silent for %s; heartbeat 1s, deadAfter 3s)", taskA, waited.Round(time.Millisecond), m[1])
}
