package gitx

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// FileAt reads what `git show commit:path` prints, and names a path the
// commit lacks as not existing.
func TestFileAtAgreesWithGitShow(t *testing.T) {
	dir := obRepo(t)
	if err := os.MkdirAll(filepath.Join(dir, ".agent", "deep"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{".agent/learnings.md": "# Learnings\n- one\n", ".agent/deep/x": "x", "top.txt": "top\n"}
	for p, c := range files {
		if err := os.WriteFile(filepath.Join(dir, p), []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	obGit(t, dir, "add", "-A")
	obGit(t, dir, "commit", "-q", "-m", "one")
	head := obGit(t, dir, "rev-parse", "HEAD")
	o := OpenObjects(dir)
	defer o.Close()
	ctx := context.Background()
	for p := range files {
		got, err := o.FileAt(ctx, head, p)
		if want, _ := obGitRun(t, dir, nil, false, "show", head+":"+p); err != nil || string(got) != want {
			t.Errorf("FileAt(%s) = %q, %v; git show prints %q", p, got, err, want)
		}
	}
	for _, p := range []string{"missing.md", ".agent/missing", ".agent", ".agent/deep", "top.txt/under", "nowhere/x"} {
		if got, err := o.FileAt(ctx, head, p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("FileAt(%s) = %q, %v; want not existing", p, got, err)
		}
	}
	if _, err := o.FileAt(ctx, "0123456789012345678901234567890123456789", "top.txt"); err == nil {
		t.Error("FileAt of a missing commit did not fail")
	}
}
