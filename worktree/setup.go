package worktree

// What goes into a new worktree before its agent starts: the scratchpad,
// the files the project copies in, and the setup commands (run once per
// set of commands, remembered by a marker).

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/proc"
)

func writeScratchpad(dir, content string) error {
	if content == "" {
		return nil
	}
	p := filepath.Join(dir, filepath.FromSlash(ScratchpadPath))
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	_, err = f.WriteString(content)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// aside is a path in the worktree dir's private git dir for a file made
// there before it is moved into the worktree: where a stop leaves nothing
// a commit of the worktree takes, on the same file system as a rule
// (EXDEV otherwise). What an earlier stop left there is removed.
func aside(dir, name string) (string, bool) {
	admin, ok := gitx.WorktreeAdminDir(dir)
	if !ok {
		return "", false
	}
	p := filepath.Join(admin, "chorus-"+name+".tmp")
	if err := os.RemoveAll(p); err != nil {
		return "", false
	}
	return p, true
}

// copyIn copies rel from the main checkout into the worktree when it exists
// there and is absent here; an agent's own copy is never overwritten. The
// path must be ignored by git: CommitWIP commits everything else, and a
// copied secret must not end up on a branch headed for the target.
func (m *Manager) copyIn(ctx context.Context, wt, rel string) error {
	if !filepath.IsLocal(rel) {
		return fmt.Errorf("worktree: copy path %q must be relative and inside the repository", rel)
	}
	src, dst := filepath.Join(m.RepoDir, rel), filepath.Join(wt, rel)
	if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if _, err := os.Lstat(dst); err == nil {
		return nil
	}
	code, err := m.gitCode(ctx, wt, "check-ignore", "-q", "--", rel)
	if err != nil {
		return err
	}
	if code != 0 {
		return fmt.Errorf("worktree: will not copy %s: git does not ignore it, so it would be committed; add it to .gitignore", rel)
	}
	// Copied aside, then moved in whole: a copy stopped halfway (a kill,
	// an error) is never taken for the agent's own.
	if tmp, ok := aside(wt, "copy"); ok {
		if err := copyTree(src, tmp); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			os.RemoveAll(tmp)
			return err
		}
		err := os.Rename(tmp, dst)
		if err != nil {
			os.RemoveAll(tmp)
		}
		if !errors.Is(err, syscall.EXDEV) {
			return err
		}
	}
	return copyTree(src, dst)
}

// copyTree copies the file or tree src to dst, which does not exist.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		r, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, r)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, devices: nothing sensible to copy
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// setup runs the user's setup commands unless the same list already
// succeeded in this worktree. The marker lives in the worktree's private
// git dir, so it never shows up as a change the agent could commit.
func (m *Manager) setup(ctx context.Context, dir string, opts Options) error {
	if len(opts.Setup) == 0 {
		return nil
	}
	sum := sha256.Sum256([]byte(strings.Join(opts.Setup, "\x00")))
	want := hex.EncodeToString(sum[:])
	marker, err := m.git(ctx, dir, "rev-parse", "--git-path", "chorus-setup-done")
	if err != nil {
		return err
	}
	if !filepath.IsAbs(marker) {
		marker = filepath.Join(dir, marker)
	}
	if got, err := os.ReadFile(marker); err == nil && strings.TrimSpace(string(got)) == want {
		return nil
	}
	timeout := opts.SetupTimeout
	if timeout <= 0 {
		timeout = 10 * time.Minute
	}
	for _, c := range opts.Setup {
		res, err := proc.Shell(ctx, c, dir, opts.Env, timeout)
		if err != nil || res.ExitCode != 0 {
			out := strings.TrimSpace(string(res.Stdout) + "\n" + string(res.Stderr))
			if len(out) > 4000 {
				out = "…" + out[len(out)-4000:]
			}
			return &SetupError{Command: c, ExitCode: res.ExitCode, Output: out, Err: err}
		}
	}
	return os.WriteFile(marker, []byte(want+"\n"), 0o644)
}
