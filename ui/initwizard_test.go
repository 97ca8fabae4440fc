package ui

import (
	"errors"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/config"
)

// The wizard's conversation without its widgets: a missing prerequisite
// holds it at step 1, text from the user's files is drawn without its
// control characters, a change the caller's check refuses is not kept,
// and unknown commands say what to type.
func TestWizardSteps(t *testing.T) {
	w := &wizard{s: InitSetup{Root: "/r", Checks: []InitCheck{{Name: "git", Detail: "git 2.20 is older than 2.38", Fatal: true}}}}
	if _, _, err := w.handle(""); err == nil || !strings.Contains(err.Error(), "older than 2.38") || w.step != stepPrereqs {
		t.Fatalf("fatal prerequisite: %v, step %d", err, w.step)
	}
	if !strings.Contains(w.body(), "✗ git") {
		t.Fatalf("body:\n%s", w.body())
	}
	w = &wizard{
		s: InitSetup{Root: "/r", Name: "evil\x1b]0;pwned\x07name", Prefix: "en", MaxAgents: 3,
			Quality: []config.QualityCommand{{Name: "test", Command: "go test ./...\x1b[2J", Required: true, Order: 1}}},
		check: func(s InitSetup) error {
			if s.MaxAgents > 32 {
				return errors.New("agents.maxParallel: too many")
			}
			return nil
		},
	}
	w.handle("")
	if b := w.body(); strings.ContainsRune(b, 0x1b) || strings.ContainsRune(b, 0x07) {
		t.Fatalf("control characters drawn: %q", b)
	}
	if _, _, err := w.handle("agents 99"); err == nil || w.s.MaxAgents != 3 {
		t.Fatalf("refused change kept: %v %d", err, w.s.MaxAgents)
	}
	if _, _, err := w.handle("colour blue"); err == nil || !strings.Contains(err.Error(), `"prefix PREFIX"`) {
		t.Fatalf("unknown project command: %v", err)
	}
	w.handle("")
	if b := w.body(); strings.ContainsRune(b, 0x1b) {
		t.Fatalf("control characters drawn: %q", b)
	}
	for _, c := range []struct{ line, want string }{
		{"add lint", "add needs a name and a command"},
		{"toggle 0", `"0" is not a command number`},
		{"edit 1", "edit needs the new command"},
		{"frobnicate 1", "type add, edit, remove or toggle"},
	} {
		if _, _, err := w.handle(c.line); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v", c.line, err)
		}
	}
	if len(w.s.Quality) != 1 {
		t.Fatalf("quality after refused edits: %+v", w.s.Quality)
	}
	w.handle("")
	w.handle("")
	if w.step != stepConfirm || w.title() != "Confirm" {
		t.Fatalf("step %d", w.step)
	}
	if _, _, err := w.handle("maybe"); err == nil {
		t.Fatal("confirmation accepted \"maybe\"")
	}
	w.handle("back")
	if w.step != stepRules {
		t.Fatalf("back: step %d", w.step)
	}
	w.handle("")
	if done, _, err := w.handle("yes"); !done || err != nil {
		t.Fatalf("confirm: %v %v", done, err)
	}
}
