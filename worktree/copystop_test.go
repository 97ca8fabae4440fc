package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A copy into a worktree stopped halfway (here a path too long for the
// destination, as a kill would stop it) leaves nothing in the worktree:
// the old code left the part it had copied, which every later start kept
// as the agent's own. The next start copies it whole.
func TestCopyStoppedHalfwayIsNotKept(t *testing.T) {
	repo := newRepo(t, true)
	f, err := os.OpenFile(filepath.Join(repo, ".git", "info", "exclude"), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("cfg\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	src := filepath.Join(repo, "cfg")
	write(t, filepath.Join(src, "a.txt"), "a\n")
	write(t, filepath.Join(src, "m.txt"), "m\n")
	// A file whose path fits in the main checkout (PATH_MAX 4096) but not
	// in the worktree's deeper one.
	deep := filepath.Join(src, "z")
	for len(deep) < 4096-len("/f.txt")-1-200 {
		deep = filepath.Join(deep, strings.Repeat("d", 200))
	}
	deep = filepath.Join(deep, strings.Repeat("e", 4096-len("/f.txt")-2-len(deep)))
	write(t, filepath.Join(deep, "f.txt"), "f\n")
	m := &Manager{RepoDir: repo, Target: "main"}
	defer m.Close()
	opts := Options{Copy: []string{"cfg"}}
	if _, err := m.Ensure(context.Background(), "claude", "ch-6", opts); err == nil {
		t.Fatal("the copy of a path too long went through")
	}
	if err := os.RemoveAll(filepath.Join(src, "z")); err != nil {
		t.Fatal(err)
	}
	wt, err := m.Ensure(context.Background(), "claude", "ch-6", opts)
	if err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(filepath.Join(wt.Dir, "cfg"))
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if err != nil || !slices.Equal(names, []string{"a.txt", "m.txt"}) {
		t.Fatalf("copied %v (%v), want a.txt m.txt", names, err)
	}
}
