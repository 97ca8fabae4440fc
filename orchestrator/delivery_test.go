package orchestrator

import (
	"strings"
	"testing"
)

// The busy marker counts only in the status area at the bottom.
func TestBusyShown(t *testing.T) {
	footer := "● ok\n────\n❯ \n────\n  ⏵⏵ bypass permissions on (shift+tab to cycle) · esc to interrupt · ← for agents\n\n\n"
	if !busyShown(footer) {
		t.Fatal("footer not seen")
	}
	prompt := "❯ # Task\n  press esc to interrupt the build\n" + strings.Repeat("text\n", 10) + "❯ \n  ⏵⏵ bypass permissions on\n"
	if busyShown(prompt) {
		t.Fatal("the words in a prompt counted")
	}
}
