package config

import (
	"errors"
	"strings"
	"testing"
)

// Agent names may hold '.', and keys may be written in any case as
// encoding/json reads them: the layers keep a profile named "claude-3.5"
// whole, and problems are reported under the name as written.
func TestKeysWithDotsAndCapitals(t *testing.T) {
	dir := t.TempDir()
	user := write(t, dir, "user.json", `{"Agents":{"MaxParallel":5,"available":{"claude-3.5":{"command":"claude","args":["--model","3.5"]}}}}`)
	proj := write(t, dir, "p/config.json", `{"agents":{"default":"claude-3.5","available":{"claude-3.5":{"ARGS":["--x"]}}},"TUI":{"agentGrid":"2x2"}}`)
	l, err := load(proj, user, []string{"CHORUS_AGENTS_AVAILABLE_CLAUDE_3_5_COMMAND=/opt/claude"})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.Warnings) != 0 {
		t.Errorf("warnings: %v", l.Warnings)
	}
	p, ok := l.Profile("claude-3.5")
	if !ok || p.Command != "/opt/claude" || strings.Join(p.Args, " ") != "--x" {
		t.Errorf("profile claude-3.5: %v %+v (profiles %v)", ok, p, l.AgentNames())
	}
	if l.Agents.MaxParallel != 5 || l.TUI.AgentGrid != "2x2" || l.Agents.Default != "claude-3.5" {
		t.Errorf("keys in capitals lost: %+v %+v", l.Agents, l.TUI)
	}

	// A problem with such a profile names it whole.
	bad := write(t, dir, "bad/config.json", `{"agents":{"available":{"claude-3.5":{"command":" "}}}}`)
	_, err = load(bad, "", nil)
	var ve *ValidationError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "agents.available.claude-3.5.command") {
		t.Fatalf("want a problem with agents.available.claude-3.5.command, got %v", err)
	}
	if strings.Contains(err.Error(), "claude-3.command") {
		t.Fatalf("name split at '.': %v", err)
	}

	// A name with capitals is refused with the rule, not silently
	// lower-cased into another name.
	upper := write(t, dir, "upper/config.json", `{"agents":{"available":{"Mine":{"command":"x"}}}}`)
	if _, err := load(upper, "", nil); err == nil || !strings.Contains(err.Error(), "agents.available.Mine") ||
		!strings.Contains(err.Error(), "lower-case") {
		t.Fatalf("capital agent name: %v", err)
	}
}
