package beads_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/chorus-dev/chorus/beads"
)

// The test binary doubles as a helper process for cross-process tests:
// with CHORUS_BEADS_HELPER set it performs one store operation and exits.
func TestMain(m *testing.M) {
	if mode := os.Getenv("CHORUS_BEADS_HELPER"); mode != "" {
		os.Exit(helper(mode))
	}
	code := m.Run()
	if fakeDir != "" {
		os.RemoveAll(fakeDir)
	}
	os.Exit(code)
}

func helper(mode string) int {
	dir, id, actor := os.Getenv("HELPER_DIR"), os.Getenv("HELPER_ID"), os.Getenv("HELPER_ACTOR")
	if mode != "ready" {
		// Wait for the go signal (stdin closed) so all helpers race together.
		_, _ = io.Copy(io.Discard, os.Stdin)
	}
	s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: dir, Prefix: "ch", Actor: actor})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch mode {
	case "ready":
		var r []beads.Task
		r, err = s.Ready(context.Background(), beads.ReadyOptions{})
		if err == nil && len(r) == 0 {
			err = errors.New("nothing ready")
		}
	case "claim":
		_, err = s.Claim(context.Background(), id, actor)
		if errors.Is(err, beads.ErrClaimed) {
			return 3
		}
	case "create":
		n, _ := strconv.Atoi(os.Getenv("HELPER_N"))
		for i := 0; i < n && err == nil; i++ {
			_, err = s.Create(context.Background(), fmt.Sprintf("%s task %d", actor, i), beads.CreateOptions{})
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// helpers starts n helper processes held at the start line; go() releases
// them together and returns their exit codes.
func helpers(t *testing.T, n int, env func(i int) []string) (codes []int) {
	t.Helper()
	type h struct {
		cmd *exec.Cmd
		in  io.WriteCloser
	}
	hs := make([]h, n)
	for i := range hs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env(i)...)
		cmd.Stderr = os.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		hs[i] = h{cmd, in}
	}
	for _, x := range hs {
		x.in.Close()
	}
	codes = make([]int, n)
	for i, x := range hs {
		err := x.cmd.Wait()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		codes[i] = x.cmd.ProcessState.ExitCode()
	}
	return codes
}

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// initRepo makes a real git repo with one commit.
func initRepo(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q", "-b", "main")
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "add", "README")
	git(t, dir, "commit", "-q", "-m", "init")
	return dir
}

var (
	fakeOnce sync.Once
	fakeDir  string
	fakePath string
	fakeErr  error
)

// fakeBd builds the bd stand-in once per test binary.
func fakeBd(t testing.TB) string {
	t.Helper()
	fakeOnce.Do(func() {
		fakeDir, fakeErr = os.MkdirTemp("", "fakebd")
		if fakeErr != nil {
			return
		}
		fakePath = filepath.Join(fakeDir, "bd")
		out, err := exec.Command("go", "build", "-o", fakePath, "./internal/fakebd").CombinedOutput()
		if err != nil {
			fakeErr = fmt.Errorf("building fakebd: %v\n%s", err, out)
		}
	})
	if fakeErr != nil {
		t.Fatal(fakeErr)
	}
	return fakePath
}

// bdRepo makes a repo whose .beads looks like a bd database, for the stand-in.
func bdRepo(t testing.TB) string {
	t.Helper()
	repo := initRepo(t)
	dir := filepath.Join(repo, ".beads")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"metadata.json": `{"database":"dolt","backend":"dolt","dolt_mode":"embedded","dolt_database":"ch"}`,
		"config.yaml":   "issue-prefix: ch\n",
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}
