// Package testkit is shared by the tests that run Chorus for real: the
// chorus binary built once per test process, throwaway git repositories,
// and waiting on a stream of events without sleeping. Test code only.
package testkit

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

var (
	buildOnce sync.Once
	binDir    string
	binPath   string
	buildErr  error
)

// Tests make repositories of their own: a GIT_DIR or GIT_WORK_TREE
// inherited from the shell (a git hook, `git rebase --exec`) would send
// their git commands, and the engines they start, into the checkout the
// tests run from.
func init() { ScrubGitEnv() }

// ScrubGitEnv removes the variables that point git at another repository.
// Packages whose tests cannot import testkit call their own copy.
func ScrubGitEnv() {
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_PREFIX"} {
		os.Unsetenv(k)
	}
}

// Root is the repository's top directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(filepath.Dir(file)))
}

// Chorus returns the chorus binary, built on first use. Agents in tests run
// its scripted-agent, signal and merge-driver commands.
func Chorus(tb testing.TB) string {
	tb.Helper()
	bin, err := Build()
	if err != nil {
		tb.Fatal(err)
	}
	return bin
}

// Build builds the chorus binary once per process and returns its path
// (for TestMain, where there is no testing.TB).
func Build() (string, error) {
	buildOnce.Do(func() {
		binDir, buildErr = os.MkdirTemp("", "chorus-test-bin")
		if buildErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "chorus")
		// chorus-signal and chorus-agent-host beside it, as `go install
		// ./cmd/...` leaves them: agents' `chorus signal` goes through
		// the one, agent hosts are the other.
		for _, c := range []struct{ out, pkg string }{{binPath, "./cmd/chorus"}, {filepath.Join(binDir, "chorus-signal"), "./cmd/chorus-signal"},
			{filepath.Join(binDir, "chorus-agent-host"), "./cmd/chorus-agent-host"}} {
			// Without version control stamps, as test binaries are built:
			// an engine running inside a test then takes these for its
			// own build (chorus-signal and chorus-agent-host are used only
			// beside a chorus of the same build), in a clone as in a
			// linked worktree, where nothing is stamped.
			cmd := exec.Command("go", "build", "-buildvcs=false", "-o", c.out, c.pkg)
			cmd.Dir = Root()
			// Static, as the README installs it.
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				buildErr = fmt.Errorf("building %s: %v\n%s", c.pkg, err, out)
				return
			}
		}
	})
	return binPath, buildErr
}

var (
	kubeOnce sync.Once
	kubeErr  error
)

// ChorusKube builds chorus-kube beside the chorus binary (Chorus), as
// `go install ./cmd/...` leaves it, on first use, and returns its path:
// the tests whose chorus runs agents on Kubernetes call it (it links
// client-go, so the others do not pay its build).
func ChorusKube(tb testing.TB) string {
	tb.Helper()
	Chorus(tb)
	kubeOnce.Do(func() {
		cmd := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(binDir, "chorus-kube"), "./cmd/chorus-kube")
		cmd.Dir = Root()
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			kubeErr = fmt.Errorf("building ./cmd/chorus-kube: %v\n%s", err, out)
		}
	})
	if kubeErr != nil {
		tb.Fatal(kubeErr)
	}
	return filepath.Join(binDir, "chorus-kube")
}

// Cleanup removes the built binary; call it from TestMain after m.Run.
func Cleanup() {
	if binDir != "" {
		os.RemoveAll(binDir)
	}
}

// Main runs a package's tests and then removes the binary Chorus or Build
// built, which would otherwise stay in the temporary directory: use it as
// TestMain in every package that builds one and needs no TestMain of its
// own.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}

// Git runs git in dir and returns its trimmed output, failing the test on
// an error.
func Git(tb testing.TB, dir string, args ...string) string {
	tb.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		tb.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// Repo makes a repository on branch main with an identity and one commit.
func Repo(tb testing.TB) string {
	tb.Helper()
	root := tb.TempDir()
	Git(tb, root, "init", "-q", "-b", "main")
	Git(tb, root, "config", "user.email", "t@example.com")
	Git(tb, root, "config", "user.name", "T")
	if err := os.WriteFile(filepath.Join(root, "README"), []byte("hi\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	Git(tb, root, "add", ".")
	Git(tb, root, "commit", "-q", "-m", "init")
	return root
}

// Events waits on a stream of events. Every event received is kept in Log;
// each satisfies at most one Wait, in any order, since events of parallel
// agents interleave unpredictably.
type Events[E any] struct {
	TB    testing.TB
	C     <-chan E
	Limit time.Duration // a hang becomes a failure after this (default 90 s)
	// Report describes the situation when a wait fails.
	Report func() string
	Log    []E
	used   map[int]bool
}

// Wait returns the first event, already received or new, that matches.
func (w *Events[E]) Wait(pred func(E) bool) E {
	w.TB.Helper()
	if w.used == nil {
		w.used = map[int]bool{}
	}
	for i, ev := range w.Log {
		if !w.used[i] && pred(ev) {
			w.used[i] = true
			return ev
		}
	}
	limit := w.Limit
	if limit == 0 {
		limit = 90 * time.Second
	}
	deadline := time.After(limit)
	for {
		select {
		case ev := <-w.C:
			w.Log = append(w.Log, ev)
			if pred(ev) {
				w.used[len(w.Log)-1] = true
				return ev
			}
		case <-deadline:
			msg := "event not seen"
			if w.Report != nil {
				msg += "\n" + w.Report()
			}
			w.TB.Fatal(msg)
		}
	}
}

// Drain records whatever has arrived without waiting.
func (w *Events[E]) Drain() {
	for {
		select {
		case ev := <-w.C:
			w.Log = append(w.Log, ev)
		default:
			return
		}
	}
}
