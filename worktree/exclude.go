package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// Exclude lists dir, a folder inside the repository, in its info/exclude
// so that the user's `git status` stays clean. info/exclude is git's local
// state, not one of the user's files. A line naming the folder in any of
// git's four spellings (/d/, d/, /d, d) counts; otherwise /d/ is appended,
// and the rest of the file is left as it was. A folder outside the
// repository needs nothing.
func (m *Manager) Exclude(ctx context.Context, dir string) error {
	root, err := resolve(m.RepoDir)
	if err != nil {
		return err
	}
	abs, err := resolve(dir)
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(root, abs)
	if err != nil || !filepath.IsLocal(rel) {
		return nil
	}
	d := filepath.ToSlash(rel)
	// info/ is shared by every worktree: it lives in the common dir.
	common, err := gitx.CommonDir(ctx, m.RepoDir)
	if err != nil {
		return err
	}
	if common == "" {
		return fmt.Errorf("worktree: %s is not in a git repository", m.RepoDir)
	}
	p := filepath.Join(common, "info", "exclude")
	old, err := os.ReadFile(p)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if excludes(old, d) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	line := "/" + d + "/\n"
	if len(old) > 0 && !bytes.HasSuffix(old, []byte("\n")) {
		line = "\n" + line
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// excludes says whether an exclude file's text has a line naming folder d
// (slash-separated, relative to the root) in one of git's spellings.
func excludes(text []byte, d string) bool {
	for l := range strings.Lines(string(text)) {
		switch strings.TrimSpace(l) {
		case "/" + d + "/", d + "/", "/" + d, d:
			return true
		}
	}
	return false
}
