package beads

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/chorus-dev/chorus/gitx"
)

// Backend names.
const (
	BackendBd      = "bd"
	BackendBuiltin = "builtin"
)

// BdInstallHint tells users where bd comes from.
const BdInstallHint = "install bd from https://github.com/gastownhall/beads"

// OpenOptions configure Open.
type OpenOptions struct {
	RepoDir string // any directory inside the repo or one of its worktrees
	Prefix  string // id prefix for new tasks ("ch" or "ch-"); default from .beads/config.yaml or the repo name
	Actor   string // default actor (BEADS_ACTOR) for bd calls
	BdPath  string // bd executable; default "bd" on PATH
	Timeout time.Duration
	// ReadyTTL is how old the bd backend's cached ready list may get
	// before a read triggers a background refresh. Default 3s.
	ReadyTTL time.Duration
}

// BackendInfo says which backend Open would use, without opening it.
type BackendInfo struct {
	Name     string // BackendBd or BackendBuiltin
	BeadsDir string // absolute <main repo>/.beads
	BdPath   string // resolved bd binary when Name is bd and it was found
	Reason   string // one line for `chorus doctor`
}

// DetectBackend reports which backend Open would use for repoDir. When the
// repo has a bd database but bd is missing, it returns the info together
// with an error wrapping ErrBdMissing that explains what to do.
func DetectBackend(repoDir, bdPath string) (BackendInfo, error) {
	dir, err := MainBeadsDir(repoDir)
	if err != nil {
		return BackendInfo{}, err
	}
	info := BackendInfo{BeadsDir: dir}
	why := bdDatabase(dir)
	if why == "" {
		info.Name = BackendBuiltin
		info.Reason = "no bd database in " + dir + "; using the built-in store (" + filepath.Join(dir, "issues.jsonl") + ")"
		return info, nil
	}
	info.Name = BackendBd
	if bdPath == "" {
		bdPath = "bd"
	}
	p, lerr := exec.LookPath(bdPath)
	if lerr != nil {
		info.Reason = why + " but bd is not installed"
		return info, fmt.Errorf("%w: %s holds a bd database (%s) but the bd binary %q was not found: %s "+
			"and make sure it is on PATH; or, to use Chorus's built-in store instead, run `bd export -o %s` "+
			"where bd is available, then remove %s, %s and %s",
			ErrBdMissing, dir, why, bdPath, BdInstallHint, filepath.Join(dir, "issues.jsonl"),
			filepath.Join(dir, "metadata.json"), filepath.Join(dir, "embeddeddolt"), filepath.Join(dir, "dolt"))
	}
	info.BdPath = p
	info.Reason = why + "; using " + p
	return info, nil
}

// bdDatabase returns why dir counts as a bd database, or "".
func bdDatabase(dir string) string {
	for _, d := range []string{"embeddeddolt", "dolt"} {
		if st, err := os.Stat(filepath.Join(dir, d)); err == nil && st.IsDir() {
			return dir + "/" + d + "/ exists"
		}
	}
	if b, err := os.ReadFile(filepath.Join(dir, "metadata.json")); err == nil {
		var m struct {
			Database string `json:"database"`
			Backend  string `json:"backend"`
		}
		if json.Unmarshal(b, &m) == nil && (m.Database == "dolt" || m.Backend == "dolt") {
			return "metadata.json names a dolt database"
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "redirect")); err == nil {
		return "redirect points bd at another database"
	}
	return ""
}

// Open picks and opens the backend for opt.RepoDir (see DetectBackend).
func Open(ctx context.Context, opt OpenOptions) (Store, error) {
	if opt.RepoDir == "" {
		opt.RepoDir = "."
	}
	info, err := DetectBackend(opt.RepoDir, opt.BdPath)
	if err != nil {
		return nil, err
	}
	if info.Name == BackendBd {
		opt.BdPath = info.BdPath
		return OpenBd(info.BeadsDir, opt), nil
	}
	return OpenBuiltin(info.BeadsDir, opt)
}

// MainBeadsDir returns the absolute .beads directory of the main worktree
// for any directory in the repo, linked worktrees included: the one next to
// git's common dir, as bd resolves it. Outside git it is <dir>/.beads.
func MainBeadsDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	common, err := gitx.CommonDir(context.Background(), abs)
	if err != nil {
		return "", err
	}
	if common == "" {
		return filepath.Join(abs, ".beads"), nil
	}
	return filepath.Join(filepath.Dir(common), ".beads"), nil
}
