package orchestrator

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/patterns"
)

// A learnings file turned to binary junk is found at session start: it
// goes back to its last committed version that is text (here an older
// one: the junk was committed too), the broken file is kept under
// .chorus/recovered/, and the engine says so.
func TestCorruptedLearningsRecoveredFromGit(t *testing.T) {
	h := newHarness(t, "", nil)
	p := filepath.Join(h.root, ".agent", "learnings.md")
	good := "# Learnings\n\n- the API needs a token\n  Source: t-1 (2026-01-09, claude)\n"
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(p, []byte(good), 0o644)
	git(t, h.root, "add", "-f", ".agent/learnings.md")
	git(t, h.root, "commit", "-q", "-m", "learnings")
	junk := []byte("# Learnings\n\x00\x00\xff\xfe\x00garbage\x00")
	os.WriteFile(p, junk, 0o644)
	git(t, h.root, "commit", "-q", "-am", "junk committed")
	os.WriteFile(p, append(junk, "more\x00"...), 0o644)
	h.start()
	ev := h.waitFor(func(ev Event) bool { return ev.Kind == EvAlert && ev.Fields["recovered"] == "learnings" })
	if !strings.Contains(ev.Text, "corrupted") || !strings.Contains(ev.Text, "restored from commit") {
		t.Fatalf("alert: %s", ev.Text)
	}
	b, _ := os.ReadFile(p)
	if string(b) != good {
		t.Fatalf("learnings now %q, want %q", b, good)
	}
	kept, _ := filepath.Glob(filepath.Join(h.root, ".chorus", "recovered", "learnings.md.*"))
	if len(kept) != 1 || !strings.Contains(ev.Text, kept[0]) {
		t.Fatalf("kept %v; alert %s", kept, ev.Text)
	}
	if k, _ := os.ReadFile(kept[0]); string(k) != string(junk)+"more\x00" {
		t.Fatalf("kept file %q", k)
	}
}

// Two tasks find the same thing and write it in their scratchpads: once
// both have landed, the engine suggests it for PATTERNS.md, once, naming
// the command that accepts it.
func TestRepeatedLearningSuggestsPattern(t *testing.T) {
	script := `
run "printf '## Learnings\\n- Run go generate ./... after editing schema.go\\n- only %s knows this\\n' $CHORUS_TASK_ID > .agent/scratchpad.md"
run "echo done > out-$CHORUS_TASK_ID.txt"
commit "feat: work"
signal COMPLETE
`
	h := newHarness(t, script, func(c *config.Config) {
		c.Mode = config.ModeAutopilot
		c.Agents.MaxParallel = 1
	})
	git(t, h.root, "add", "-f", ".agent/learnings.md")
	git(t, h.root, "commit", "-q", "-m", "learnings")
	a := h.task("first", beads.CreateOptions{Priority: 1})
	b := h.task("second", beads.CreateOptions{Priority: 2, Deps: []string{a}})
	h.start()
	ev := h.waitFor(func(ev Event) bool { return ev.Kind == EvAlert && ev.Fields["pattern"] != nil })
	want := patterns.ID("run go generate ./... after editing schema.go")
	if ev.Fields["pattern"] != want || !strings.Contains(ev.Text, a) || !strings.Contains(ev.Text, b) || !strings.Contains(ev.Text, "chorus patterns accept "+want) {
		t.Fatalf("alert %v (want %s, %s %s): %s", ev.Fields, want, a, b, ev.Text)
	}
	h.waitFor(kind(EvCompleted, b))
	h.waitIdle()
	n := 0
	for _, e := range h.events.Log {
		if e.Kind == EvAlert && e.Fields["pattern"] != nil {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("suggested %d times", n)
	}
	if !strings.Contains(git(t, h.root, "show", "main:.agent/learnings.md"), "only "+b+" knows this") {
		t.Fatal("learnings did not land")
	}
}
