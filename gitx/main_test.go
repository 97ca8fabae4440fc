package gitx

import (
	"os"
	"path/filepath"
	"testing"
)

// TestMain gives git a configuration of the tests' own: a fresh machine
// has no identity (commits and `git var GIT_AUTHOR_IDENT` fail there), and
// a developer's own settings (signing, hooks, default branch) must not
// change what these tests see. A repository's own config still wins.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "gitx-gitconfig")
	if err != nil {
		panic(err)
	}
	global := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(global, []byte("[user]\n\tname = Gitx Test\n\temail = gitx@example.com\n"), 0o644); err != nil {
		panic(err)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", global)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	// A GIT_DIR inherited from a hook or `git rebase --exec` would point
	// these tests' git at the checkout they run from.
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}
