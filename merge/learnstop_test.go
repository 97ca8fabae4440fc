package merge

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/worktree"
)

// Chorus stopped between writing the learnings into the task's worktree
// and committing them: the next landing commits them once (the old code
// appended them a second time). And the file is replaced, never rewritten
// in place, so a stop while it is written cannot leave it cut short: a
// reader holding the file from before still reads the old text whole.
func TestLearningsWrittenNotCommittedGoInOnce(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 9, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name, before string
	}{
		{"written, not committed", "# Learnings\n\n" + FormatLearnings("- the API needs a token", "ch-1", "claude", now) + "\n"},
		{"the agent's own lines", "# Learnings\n\n- an older one\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := newRepo(t)
			b, wt := r.agentBranch("ch-1", "main", map[string]string{"x.txt": "x"}, true)
			r.writeIn(wt, worktree.ScratchpadPath, "# Scratchpad\n\n## Learnings\n- the API needs a token\n")
			r.writeIn(wt, LearningsPath, c.before)
			held, err := os.Open(filepath.Join(wt, LearningsPath))
			if err != nil {
				t.Fatal(err)
			}
			defer held.Close()
			h := start(t, r, func(o *Options) { o.Now = func() time.Time { return now } }, nil)
			h.enqueue(Request{TaskID: "ch-1", Branch: b, Agent: "claude", Worktree: wt})
			h.waitStatus("ch-1", StatusLanded)
			got := r.show("main", LearningsPath)
			if n := strings.Count(got, "Source: ch-1 ("); n != 1 {
				t.Fatalf("learnings attributed %d times:\n%s", n, got)
			}
			if !strings.HasPrefix(got, strings.TrimSuffix(c.before, "\n")) {
				t.Fatalf("learnings:\n%s\nwant them after\n%s", got, c.before)
			}
			old, err := io.ReadAll(held)
			if err != nil || string(old) != c.before {
				t.Fatalf("the file was rewritten in place: a reader from before reads %q (%v)", old, err)
			}
		})
	}
}

// The drivers' block is put into $GIT_DIR/info/attributes by replacing the
// file whole: the user's own lines there survive a stop while it is
// written (the old code truncated and rewrote it in place, which a reader
// holding the file from before saw).
func TestAttributesReplacedWhole(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	p := filepath.Join(r.dir, ".git", "info", "attributes")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	const mine = "*.bin binary\n"
	if err := os.WriteFile(p, []byte(mine), 0o644); err != nil {
		t.Fatal(err)
	}
	held, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	start(t, r, nil, nil)
	now, err := os.ReadFile(p)
	if err != nil || !strings.HasPrefix(string(now), mine+attrBegin) {
		t.Fatalf("attributes %q (%v)", now, err)
	}
	if old, err := io.ReadAll(held); err != nil || string(old) != mine {
		t.Fatalf("rewritten in place: a reader from before reads %q (%v)", old, err)
	}
}
