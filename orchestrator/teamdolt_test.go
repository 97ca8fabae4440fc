package orchestrator

import (
	"bufio"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// beadsTools finds the bd and dolt that scripts/build-beads.sh builds into
// the git-ignored .tools/beads-<version>/ (or $CHORUS_BEADS_TOOLS), and
// skips the test, saying how to get them, when they are not there.
func beadsTools(t *testing.T) (bd, dolt string) {
	t.Helper()
	dir := os.Getenv("CHORUS_BEADS_TOOLS")
	if dir == "" {
		dir = filepath.Join(testkit.Root(), ".tools", "beads-1.0.5")
	}
	bd, dolt = filepath.Join(dir, "bd"), filepath.Join(dir, "dolt")
	for _, p := range []string{bd, dolt} {
		if st, err := os.Stat(p); err != nil || st.Mode()&0o111 == 0 {
			t.Skipf("needs bd 1.0.5 and dolt in %s: run scripts/build-beads.sh (about 45 minutes, once) or set CHORUS_BEADS_TOOLS", dir)
		}
	}
	return bd, dolt
}

// doltServer starts a Dolt sql-server on a free loopback port and returns
// the port once it says it is ready; it is killed when the test ends.
func doltServer(t *testing.T, dolt string) int {
	t.Helper()
	home, data := t.TempDir(), t.TempDir()
	env := append(os.Environ(), "HOME="+home, "DOLT_DISABLE_EVENT_FLUSH=1")
	for _, kv := range [][2]string{{"user.name", "Team Test"}, {"user.email", "team@example.com"}} {
		cmd := exec.Command(dolt, "config", "--global", "--add", kv[0], kv[1])
		cmd.Env, cmd.Dir = env, data
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dolt config: %v\n%s", err, out)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(dolt, "sql-server", "--host", "127.0.0.1", "--port", strconv.Itoa(port))
	cmd.Env, cmd.Dir = env, data
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		said := false
		for sc.Scan() {
			if !said && strings.Contains(sc.Text(), "Server ready") {
				said = true
				ready <- true
			}
		}
		if !said {
			ready <- false
		}
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("dolt sql-server ended before it was ready")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("dolt sql-server never said it was ready")
	}
	return port
}

// The same team run as TestTwoInstancesOneQueue, with the real bd 1.0.5
// in server mode on a real Dolt sql-server: bd init --server in the
// project, .beads/metadata.json committed, so each clone finds the same
// database with no setup of its own.
func TestTwoInstancesOneDoltServer(t *testing.T) {
	if testing.Short() {
		t.Skip("a real Dolt server and bd: not in -short")
	}
	bd, dolt := beadsTools(t)
	port := doltServer(t, dolt)
	ts := newTeamSetup(t, 2, teamScript, func(seed string) {
		cmd := exec.Command(bd, "init", "--server", "--external", "--server-host", "127.0.0.1", "--server-port", strconv.Itoa(port),
			"--server-user", "root", "-p", "tm", "--non-interactive", "--skip-hooks", "--skip-agents")
		cmd.Dir = seed
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("bd init --server: %v\n%s", err, out)
		}
		testkit.Git(t, seed, "add", "-A")
		if st := testkit.Git(t, seed, "status", "--porcelain"); st != "" {
			testkit.Git(t, seed, "commit", "-q", "-m", "beads on the team's server")
		}
	})
	runTeam(t, ts, func(clone string) beads.Store {
		s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: clone, BdPath: bd, Timeout: 2 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		if s.Backend() != beads.BackendBd {
			t.Fatalf("clone %s opened the %s store; want bd from the committed metadata.json", clone, s.Backend())
		}
		return s
	})
}
