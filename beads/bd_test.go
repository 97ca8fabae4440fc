package beads_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/beads/storetest"
	"github.com/chorus-dev/chorus/internal/testkit"
)

func fakeStore(t *testing.T, repo string, timeout time.Duration) beads.Store {
	t.Helper()
	return open(t, beads.OpenOptions{RepoDir: repo, Actor: "tester", BdPath: fakeBd(t), Timeout: timeout}, beads.BackendBd)
}

// pidFromFifo reads the pid the hanging stand-in writes to fifo.
func pidFromFifo(t *testing.T, fifo string) <-chan int {
	ch := make(chan int, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			close(ch)
			return
		}
		defer f.Close()
		line, _ := bufio.NewReader(f).ReadString('\n')
		pid, err := strconv.Atoi(strings.TrimSpace(line))
		if err != nil {
			close(ch)
			return
		}
		ch <- pid
	}()
	return ch
}

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "pid.fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestBdHangingCallTimesOutAndKillsGroup(t *testing.T) {
	repo := bdRepo(t)
	// On a busy machine the timeout may come before the stand-in got as
	// far as its child: it is given twice as long until it did.
	for timeout := 400 * time.Millisecond; ; timeout *= 2 {
		t.Setenv("FAKEBD_HANG", "")
		s := fakeStore(t, repo, timeout)
		fifo := mkfifo(t)
		t.Setenv("FAKEBD_HANG", fifo)
		pidc := pidFromFifo(t, fifo)
		_, err := s.Get(bg, "ch-abc")
		if err == nil || !strings.Contains(err.Error(), "timed out") || !strings.Contains(err.Error(), timeout.String()) {
			t.Fatalf("Get on hanging bd: %v", err)
		}
		// A line after the stand-in's: the reader takes the pid if it
		// came, and is let go if the stand-in never wrote it.
		w, err := os.OpenFile(fifo, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = w.WriteString("none\n")
		child, ok := <-pidc
		w.Close()
		if ok {
			if !testkit.WaitExit(t, child, 10*time.Second) {
				t.Fatalf("grandchild %d survived the timeout", child)
			}
			return
		}
		if timeout > time.Minute {
			t.Fatal("the stand-in never started its child")
		}
	}
}

// A stale cached ready list is served while its refresh is still running.
func TestBdReadyDoesNotWaitForRefresh(t *testing.T) {
	repo := bdRepo(t)
	s := open(t, beads.OpenOptions{RepoDir: repo, Actor: "tester", BdPath: fakeBd(t), Timeout: time.Minute, ReadyTTL: time.Nanosecond}, beads.BackendBd)
	x, err := s.Create(bg, "x", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.(beads.Refresher).Refresh(bg); err != nil {
		t.Fatal(err)
	}
	fifo := mkfifo(t)
	t.Setenv("FAKEBD_HANG", fifo)
	pidc := pidFromFifo(t, fifo)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	got, err := s.Ready(ctx, beads.ReadyOptions{}) // starts a refresh that hangs
	if err != nil || len(got) != 1 || got[0].ID != x.ID {
		t.Fatalf("Ready while refreshing: %v %v", storetest.IDs(got), err)
	}
	pid, ok := <-pidc
	if !ok {
		t.Fatal("refresh did not start")
	}
	// End the hanging refresh: kill the stand-in's process group.
	if pgid, err := syscall.Getpgid(pid); err == nil {
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}
}

func TestBdErrorOutputs(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	// exit 1 with {"error":…} on stdout and an Error line on stderr.
	_, err := s.Get(bg, "ch-missing")
	var be *beads.BdError
	if !errors.Is(err, beads.ErrNotFound) || !errors.As(err, &be) || be.ExitCode != 1 ||
		be.Msg != "no issues found matching the provided IDs" {
		t.Fatalf("Get missing: %#v", err)
	}
	// Every stand-in call prints a warning on stderr with exit 0: success.
	x, err := s.Create(bg, "warned", beads.CreateOptions{})
	if err != nil {
		t.Fatalf("Create with stderr warning: %v", err)
	}
	if err := s.Close(bg, x.ID, "done"); err != nil {
		t.Fatal(err)
	}
	// Claim lost: stderr text only, exit 1.
	y, _ := s.Create(bg, "y", beads.CreateOptions{})
	if _, err := s.Claim(bg, y.ID, "a1"); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(fakeBd(t), "update", "--claim", "--json", "--", y.ID)
	cmd.Env = append(os.Environ(), "BEADS_DIR="+filepath.Join(repo, ".beads"), "BEADS_ACTOR=a2")
	out, _ := cmd.Output()
	if cmd.ProcessState.ExitCode() != 1 || len(out) != 0 {
		t.Fatalf("stand-in claim of a taken issue: rc %d stdout %q", cmd.ProcessState.ExitCode(), out)
	}
}

func countLines(t *testing.T, p string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	m := map[string]int{}
	for _, l := range strings.Fields(string(b)) {
		m[l]++
		m["total"]++
	}
	return m
}

// create --deps with a missing target exits 0 with a warning; the store
// must notice and name the dependency.
func TestBdCreateDepWarning(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	counter := filepath.Join(t.TempDir(), "count")
	t.Setenv("FAKEBD_COUNT", counter)
	x, err := s.Create(bg, "needs ghost", beads.CreateOptions{Deps: []string{"ch-ghost"}})
	if !errors.Is(err, beads.ErrDependency) || !errors.Is(err, beads.ErrNotFound) || !strings.Contains(err.Error(), "ch-ghost") {
		t.Fatalf("got %v", err)
	}
	if x.ID == "" || !strings.Contains(err.Error(), x.ID) {
		t.Errorf("the created task is not reported: %q / %v", x.ID, err)
	}
	if c := countLines(t, counter); c["create"] != 1 || c["show"] != 1 || c["total"] != 2 {
		t.Errorf("processes: %v", c)
	}
}

// Claims are compare-and-swap in the stand-in too, across processes.
func TestFakeBdClaimAcrossProcesses(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	x, err := s.Create(bg, "contended", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const n = 6
	cmds := make([]*exec.Cmd, n)
	for i := range cmds {
		cmds[i] = exec.Command(fakeBd(t), "update", "--claim", "--json", "--", x.ID)
		cmds[i].Env = append(os.Environ(), "BEADS_DIR="+filepath.Join(repo, ".beads"), fmt.Sprintf("BEADS_ACTOR=agent%d", i))
		if err := cmds[i].Start(); err != nil {
			t.Fatal(err)
		}
	}
	wins := 0
	for _, c := range cmds {
		if c.Wait() == nil {
			wins++
		}
	}
	if wins != 1 {
		t.Fatalf("%d winners", wins)
	}
}

// From a linked worktree every bd call still targets the main .beads.
func TestBdFromWorktree(t *testing.T) {
	repo := bdRepo(t)
	wt := filepath.Join(t.TempDir(), "wt")
	git(t, repo, "worktree", "add", "-q", "-b", "a1", wt)
	s := fakeStore(t, wt, 30*time.Second)
	x, err := s.Create(bg, "from worktree", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(repo, ".beads", "fakebd.json"))
	if err != nil || !strings.Contains(string(b), x.ID) {
		t.Fatalf("main .beads lacks %s: %v", x.ID, err)
	}
	if _, err := os.Stat(filepath.Join(wt, ".beads", "fakebd.json")); err == nil {
		t.Error("bd wrote into the worktree")
	}
}

// Processes per task lifecycle (ready → claim → close) with the stand-in.
func TestBdProcessesPerTask(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	const n = 8
	for i := range n {
		if _, err := s.Create(bg, fmt.Sprintf("t%d", i), beads.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.(beads.Refresher).Refresh(bg); err != nil {
		t.Fatal(err)
	}
	counter := filepath.Join(t.TempDir(), "count")
	t.Setenv("FAKEBD_COUNT", counter)
	for i := range n {
		x, err := beads.ClaimNext(bg, s, fmt.Sprintf("agent%d", i%3), beads.ReadyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(bg, x.ID, "done"); err != nil {
			t.Fatal(err)
		}
	}
	// Settle the cache so in-flight refreshes are counted.
	if err := s.(beads.Refresher).Refresh(bg); err != nil {
		t.Fatal(err)
	}
	c := countLines(t, counter)
	// Two shows per claim: readiness is read from bd itself (a cached
	// ready list can be behind another Chorus's claim), and the claim is
	// read back, since bd has been seen to tell two concurrent claimers
	// both that they won.
	if c["update"] != n || c["close"] != n || c["show"] != 2*n {
		t.Errorf("per-task commands: %v", c)
	}
	t.Logf("bd processes for %d claim→close lifecycles: %d (update %d, show %d, close %d, ready refreshes %d) = %.2f per task",
		n, c["total"], c["update"], c["show"], c["close"], c["ready"], float64(c["total"])/n)
	if c["ready"] > n+1 {
		t.Errorf("ready refreshes not amortised: %v", c)
	}

	// A chain: each close unblocks the next task, which needs a refresh.
	prev := ""
	for i := range n {
		opt := beads.CreateOptions{}
		if prev != "" {
			opt.Deps = []string{prev}
		}
		x, err := s.Create(bg, fmt.Sprintf("chain%d", i), opt)
		if err != nil {
			t.Fatal(err)
		}
		prev = x.ID
	}
	if err := s.(beads.Refresher).Refresh(bg); err != nil {
		t.Fatal(err)
	}
	os.Remove(counter)
	for i := range n {
		x, err := beads.ClaimNext(bg, s, "agent", beads.ReadyOptions{})
		if err != nil {
			t.Fatalf("chain step %d: %v", i, err)
		}
		if err := s.Close(bg, x.ID, "done"); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.(beads.Refresher).Refresh(bg); err != nil {
		t.Fatal(err)
	}
	c = countLines(t, counter)
	t.Logf("bd processes for a %d-task dependency chain: %d (update %d, close %d, ready refreshes %d, show %d) = %.2f per task",
		n, c["total"], c["update"], c["close"], c["ready"], c["show"], float64(c["total"])/n)
}

// bd answering "claimed" while storing someone else's claim (seen with
// concurrent claims on real bd) is a lost claim, found by reading it back.
func TestBdClaimReadBack(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	x, err := s.Create(bg, "contended", beads.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKEBD_CLAIM_RACE", "someone-else")
	_, err = s.Claim(bg, x.ID, "agent1")
	if !errors.Is(err, beads.ErrClaimed) || !strings.Contains(err.Error(), "someone-else") {
		t.Fatalf("claim: %v", err)
	}
	os.Unsetenv("FAKEBD_CLAIM_RACE")
	got, err := s.Get(bg, x.ID)
	if err != nil || got.Assignee != "someone-else" {
		t.Fatalf("stored: %+v %v", got, err)
	}
}

// bd failing to open a database whose data is garbage says so as
// ErrCorrupt, with the doctor hint; nothing is written over it.
func TestBdCorruptDatabase(t *testing.T) {
	repo := bdRepo(t)
	s := fakeStore(t, repo, 30*time.Second)
	if _, err := s.Create(bg, "kept", beads.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(repo, ".beads", "fakebd.json")
	junk := []byte("\x00\x00garbage")
	os.WriteFile(p, junk, 0o644)
	_, err := s.List(bg)
	if !errors.Is(err, beads.ErrCorrupt) || !strings.Contains(err.Error(), "chorus doctor") {
		t.Fatalf("List on a corrupted database: %v", err)
	}
	if b, _ := os.ReadFile(p); string(b) != string(junk) {
		t.Fatal("the database was written over")
	}
}
