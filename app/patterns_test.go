package app

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/patterns"
)

// A learning two tasks found, committed on the target, is listed by
// `chorus patterns`; accepting it writes it into PATTERNS.md (and it is
// no longer suggested); dismissing another stops it being listed.
func TestPatternsSuggestAcceptDismiss(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	gitIn := func(args ...string) {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	learnings := "# Learnings\n\n- Run go generate after editing schema.go\n  Source: ch-1 (2026-01-09, claude)\n" +
		"- the cache needs a restart after config edits\n  Source: ch-1 (2026-01-09, claude)\n" +
		"- run `go generate` after editing schema.go.\n  Source: ch-2 (2026-01-10, codex)\n" +
		"- The cache needs a restart after config edits!\n  Source: ch-3 (2026-01-10, codex)\n"
	os.MkdirAll(filepath.Join(dir, ".agent"), 0o755)
	os.WriteFile(filepath.Join(dir, ".agent", "learnings.md"), []byte(learnings), 0o644)
	gitIn("add", "-A", "-f", ".agent/learnings.md", ".")
	gitIn("commit", "-q", "-m", "init")
	gen, cache := patterns.ID("run go generate after editing schema.go"), patterns.ID("the cache needs a restart after config edits")

	r := chorus(t, dir, "patterns")
	if r.code != 0 || !strings.Contains(r.stdout, gen+"  Run go generate after editing schema.go") || !strings.Contains(r.stdout, "found by ch-1, ch-2") || !strings.Contains(r.stdout, cache) {
		t.Fatalf("patterns: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := chorus(t, dir, "patterns", "accept", "nope"); r.code != ExitUsage || !strings.Contains(r.stderr, "chorus patterns") {
		t.Fatalf("unknown id: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "patterns", "accept", gen); r.code != 0 || !strings.Contains(r.stdout, "PATTERNS.md") {
		t.Fatalf("accept: %d %s%s", r.code, r.stdout, r.stderr)
	}
	pm, _ := os.ReadFile(filepath.Join(dir, ".chorus", "PATTERNS.md"))
	if !strings.Contains(string(pm), "## Code Conventions") || !strings.HasSuffix(string(pm), "## Learned\n- Run go generate after editing schema.go\n") {
		t.Fatalf("PATTERNS.md:\n%s", pm)
	}
	if r := chorus(t, dir, "patterns", "dismiss", cache); r.code != 0 {
		t.Fatalf("dismiss: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "patterns"); r.code != 0 || !strings.Contains(r.stdout, "no pattern suggestions") {
		t.Fatalf("after accept and dismiss: %s%s", r.stdout, r.stderr)
	}
}
