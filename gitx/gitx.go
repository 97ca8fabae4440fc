// Package gitx holds the few git queries several packages need: where the
// repository's main worktree is, which branch is checked out, the git
// version. Everything goes through the git CLI with an argv, except that
// finding the repository reads git's files first (see fastCommonDir).
package gitx

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

// ErrNotRepo means the directory is not inside a git repository.
var ErrNotRepo = errors.New("not a git repository")

// ErrNoGit means there is no git executable on PATH.
var ErrNoGit = errors.New("git was not found on PATH")

// ErrBare means the repository has no working tree.
var ErrBare = errors.New("bare repository")

// LookGit checks that git can be run at all, so that its absence is
// reported as such rather than as whatever the first git query returns.
func LookGit() error {
	if _, err := exec.LookPath("git"); err != nil {
		return fmt.Errorf("%w: Chorus needs git %d.%d or newer; install it (e.g. `apt install git`) or add its directory to PATH", ErrNoGit, MinVersion[0], MinVersion[1])
	}
	return nil
}

const timeout = 30 * time.Second

// Git runs git with args in dir and returns trimmed stdout; a non-zero exit
// becomes an error carrying git's own message.
func Git(ctx context.Context, dir string, args ...string) (string, error) {
	r, err := proc.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Timeout: timeout,
		Env: []string{"GIT_TERMINAL_PROMPT=0", "LC_ALL=C"}})
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	if r.ExitCode != 0 {
		msg := strings.TrimSpace(string(r.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(r.Stdout))
		}
		return "", fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return strings.TrimRight(string(r.Stdout), "\n"), nil
}

// MainRoot returns the main worktree of the repository containing dir, also
// when dir is inside a linked worktree (agents run there).
func MainRoot(ctx context.Context, dir string) (string, error) {
	if c, ok := fastCommonDir(dir); ok && c != "" && filepath.Base(c) == ".git" {
		return filepath.Dir(c), nil
	}
	out, err := Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if strings.Contains(err.Error(), "not a git repository") {
			return "", fmt.Errorf("%s: %w (run `git init` first)", dir, ErrNotRepo)
		}
		return "", err
	}
	common := filepath.Clean(out)
	if filepath.Base(common) == ".git" {
		return filepath.Dir(common), nil
	}
	if bare, err := Git(ctx, dir, "rev-parse", "--is-bare-repository"); err == nil && bare == "true" {
		return "", fmt.Errorf("%s is a %w: it has no working tree for agents to branch from; clone it (`git clone %s work`) and run chorus in the clone", common, ErrBare, common)
	}
	// A bare repository or an unusual layout: fall back to the worktree top.
	top, err := Git(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return "", err
	}
	return top, nil
}

// CurrentBranch returns the branch checked out in dir ("" when detached).
func CurrentBranch(ctx context.Context, dir string) (string, error) {
	out, err := Git(ctx, dir, "symbolic-ref", "--quiet", "--short", "HEAD")
	if err != nil {
		// Only git's own "not a symbolic ref" means detached; git that
		// could not run at all must not read as a detached HEAD.
		if errors.Is(err, exec.ErrNotFound) || errors.Is(err, proc.ErrNoDir) || errors.Is(err, proc.ErrTimeout) {
			return "", err
		}
		return "", nil
	}
	return out, nil
}

// Compiled on first use: package init runs on every CLI start.
var versionRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(\d+)\.(\d+)(?:\.(\d+))?`) })

// Version returns git's version as text and as comparable numbers.
func Version(ctx context.Context) (string, [3]int, error) {
	out, err := Git(ctx, "", "version")
	if err != nil {
		return "", [3]int{}, err
	}
	m := versionRE().FindStringSubmatch(out)
	if m == nil {
		return out, [3]int{}, fmt.Errorf("unrecognised git version %q", out)
	}
	var v [3]int
	for i := 0; i < 3; i++ {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	return m[0], v, nil
}

// AtLeast reports whether v >= want.
func AtLeast(v [3]int, want [3]int) bool {
	for i := 0; i < 3; i++ {
		if v[i] != want[i] {
			return v[i] > want[i]
		}
	}
	return true
}

// MinVersion is the oldest git Chorus supports: merge-tree --write-tree
// arrived in 2.38.
var MinVersion = [3]int{2, 38, 0}
