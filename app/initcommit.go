package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/chorus-dev/chorus/gitx"
)

// commitAdvice tells, at the end of init, which of the setup files are
// not committed yet and warns that the task store is a file in the
// working tree: until it is committed, `git clean -fdx` deletes every
// task. setup are the files init created or kept (relative to root).
func commitAdvice(ctx context.Context, w io.Writer, root string, setup []string) {
	cands := []string{}
	for _, p := range setup {
		// The planning state changes at run time; it is not setup.
		if filepath.ToSlash(p) != ".chorus/planning-state.json" {
			cands = append(cands, p)
		}
	}
	cands = append(cands, ".gitignore")
	if _, err := os.Stat(filepath.Join(root, ".beads")); err == nil {
		cands = append(cands, ".beads")
	}
	out, err := gitx.Git(ctx, root, append([]string{"status", "--porcelain", "--untracked-files=all", "--"}, cands...)...)
	if err != nil {
		return // nothing useful to say without git's answer
	}
	paths := commitPaths(out)
	if len(paths) > 0 {
		fmt.Fprintln(w, "Commit Chorus's setup (agents' worktrees start from your commits; runtime files are git-ignored):")
		fmt.Fprintf(w, "  git add %s && git commit -m \"Set up Chorus\"\n", strings.Join(paths, " "))
	}
	fmt.Fprintln(w, "Tasks live in .beads/issues.jsonl, a file in your checkout: commit .beads/ as tasks change; until then `git clean -fdx` deletes them.")
}

// commitPaths turns `git status --porcelain` lines into what to pass to
// git add: files two folders deep are named by their folder
// (.chorus/prompts/, .beads/), so the command stays short.
func commitPaths(porcelain string) []string {
	var paths []string
	seen := map[string]bool{}
	for _, l := range strings.Split(porcelain, "\n") {
		if len(l) < 4 {
			continue
		}
		p := strings.Trim(l[3:], `"`)
		if parts := strings.Split(p, "/"); len(parts) > 2 || (len(parts) == 2 && parts[0] == ".beads") {
			p = strings.Join(parts[:len(parts)-1], "/") + "/"
			if parts[0] == ".beads" {
				p = ".beads/"
			}
		}
		if !seen[p] {
			seen[p] = true
			paths = append(paths, p)
		}
	}
	return paths
}
