package gitx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// CommonDir returns the absolute git common dir of the repository around
// dir, or "" when dir is in no repository.
func CommonDir(ctx context.Context, dir string) (string, error) {
	if c, ok := fastCommonDir(dir); ok {
		return c, nil
	}
	out, err := Git(ctx, dir, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		if strings.Contains(err.Error(), "not a git repository") {
			return "", nil
		}
		return "", err
	}
	return filepath.Clean(out), nil
}

// fastCommonDir finds the common dir by reading .git, gitdir and commondir
// files the way git discovers a repository, so that a CLI start does not
// pay for a git process. ok is false whenever git might answer differently
// (environment overrides, a filesystem boundary, a bare or separate git
// dir, a submodule, someone else's repository, anything unreadable); the
// caller then asks git. c is "" with ok when there is surely no repository.
func fastCommonDir(dir string) (c string, ok bool) {
	for _, k := range []string{"GIT_DIR", "GIT_COMMON_DIR", "GIT_WORK_TREE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM"} {
		if os.Getenv(k) != "" {
			return "", false
		}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", false
	}
	// git reports real paths.
	if abs, err = filepath.EvalSymlinks(abs); err != nil {
		return "", false
	}
	var dev uint64
	crossed := false
	for d := abs; ; {
		st, err := os.Stat(d)
		if err != nil {
			return "", false
		}
		sys, isUnix := st.Sys().(*syscall.Stat_t)
		if !isUnix {
			return "", false
		}
		if d == abs {
			dev = uint64(sys.Dev)
		} else if uint64(sys.Dev) != dev {
			crossed = true // git stops here unless told otherwise
		}
		p := filepath.Join(d, ".git")
		gst, err := os.Lstat(p)
		if err == nil {
			if crossed {
				return "", false
			}
			return fromDotGit(d, p, gst)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		// d itself may be a git dir (bare, or inside .git).
		if _, err := os.Lstat(filepath.Join(d, "HEAD")); !errors.Is(err, fs.ErrNotExist) {
			return "", false
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", true
		}
		d = parent
	}
}

// fromDotGit resolves the .git entry p found in worktree d.
func fromDotGit(d, p string, st fs.FileInfo) (string, bool) {
	// git refuses repositories owned by someone else unless configured to
	// trust them; that decision is git's.
	if !ownedByMe(st) || !ownedByMe(stat(d)) {
		return "", false
	}
	if st.IsDir() {
		if !isGitDir(p) || exists(filepath.Join(p, "commondir")) {
			return "", false
		}
		return p, true
	}
	if !st.Mode().IsRegular() {
		return "", false
	}
	b, err := os.ReadFile(p)
	if err != nil {
		return "", false
	}
	gd, found := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
	if !found {
		return "", false
	}
	gd = strings.TrimSpace(gd)
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(d, gd)
	}
	if !ownedByMe(stat(gd)) || !isFile(filepath.Join(gd, "HEAD")) {
		return "", false
	}
	// A linked worktree names its common dir; a submodule or a separate
	// git dir does not.
	cb, err := os.ReadFile(filepath.Join(gd, "commondir"))
	if err != nil {
		return "", false
	}
	cd := strings.TrimSpace(string(cb))
	if !filepath.IsAbs(cd) {
		cd = filepath.Join(gd, cd)
	}
	cd, err = filepath.EvalSymlinks(cd)
	if err != nil || !ownedByMe(stat(cd)) || !isGitDir(cd) {
		return "", false
	}
	return cd, true
}

func stat(p string) fs.FileInfo {
	st, err := os.Stat(p)
	if err != nil {
		return nil
	}
	return st
}

func ownedByMe(st fs.FileInfo) bool {
	if st == nil {
		return false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	return ok && int(sys.Uid) == os.Geteuid()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// isGitDir is git's own test, short of parsing HEAD.
func isGitDir(p string) bool {
	if !isFile(filepath.Join(p, "HEAD")) {
		return false
	}
	for _, sub := range []string{"objects", "refs"} {
		if st, err := os.Stat(filepath.Join(p, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return !errors.Is(err, fs.ErrNotExist)
}
