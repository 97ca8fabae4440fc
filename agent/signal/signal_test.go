package signal

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in   string
		want Signal
		err  error
	}{
		{"COMPLETE", Signal{Type: Complete}, nil},
		{"  complete  ", Signal{Type: Complete}, nil},
		{"BLOCKED: missing API key", Signal{Blocked, "missing API key"}, nil},
		{"BLOCKED:missing\n  API\tkey", Signal{Blocked, "missing API key"}, nil},
		{"BLOCKED: bad \x1b[31mred\x07", Signal{Blocked, "bad [31mred"}, nil},
		{"PROGRESS: 40", Signal{Progress, "40"}, nil},
		{"PROGRESS: 45%", Signal{Progress, "45"}, nil},
		{"PROGRESS: 101", Signal{}, ErrMalformed},
		{"PROGRESS: lots", Signal{}, ErrMalformed},
		{"PROGRESS", Signal{}, ErrMalformed},
		{"NEEDS_HELP: which database?", Signal{NeedsHelp, "which database?"}, nil},
		{"RESOLVED", Signal{Type: Resolved}, nil},
		{"NEEDS_HUMAN: both sides rewrote parse()", Signal{NeedsHuman, "both sides rewrote parse()"}, nil},
		{"COMPLETE: all done", Signal{Complete, "all done"}, nil},
		{"DANCE", Signal{Type: "DANCE"}, ErrUnknownType},
		{"DANCE: now", Signal{"DANCE", "now"}, ErrUnknownType},
		{"", Signal{}, ErrMalformed},
		{"not a signal", Signal{}, ErrMalformed},
		{": payload", Signal{}, ErrMalformed},
	}
	for _, tt := range tests {
		got, err := Parse(tt.in)
		if !errors.Is(err, tt.err) || (tt.err == nil && err != nil) {
			t.Errorf("Parse(%q) error = %v, want %v", tt.in, err, tt.err)
		}
		if got != tt.want {
			t.Errorf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
		}
	}
	if n, ok := (Signal{Progress, "40"}).Percent(); !ok || n != 40 {
		t.Errorf("Percent = %d %v", n, ok)
	}
	if s := (Signal{Blocked, "why"}).String(); s != "BLOCKED: why" {
		t.Errorf("String = %q", s)
	}
	long, _ := Parse("BLOCKED: " + strings.Repeat("é", 3000))
	if len(long.Payload) > maxPayload+len("…") {
		t.Errorf("payload not capped: %d", len(long.Payload))
	}
}

func TestFromEnv(t *testing.T) {
	chorusDir := t.TempDir()
	key, err := NewKey()
	if err != nil {
		t.Fatal(err)
	}
	if err := PublishKey(chorusDir, "claude-1", key); err != nil {
		t.Fatal(err)
	}
	full := map[string]string{EnvDir: chorusDir, EnvAgentID: "claude-1", EnvTaskID: "ch-7", EnvKey: key}
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range full {
			m[a] = b
		}
		m[k] = v
		return m
	}

	tests := []struct {
		args []string
		want Signal
	}{
		{[]string{"COMPLETE"}, Signal{Type: Complete}},
		{[]string{"BLOCKED: missing API key"}, Signal{Blocked, "missing API key"}},
		{[]string{"BLOCKED", "missing", "API", "key"}, Signal{Blocked, "missing API key"}},
		{[]string{"BLOCKED:", "missing", "key"}, Signal{Blocked, "missing key"}},
		{[]string{"progress", "40"}, Signal{Progress, "40"}},
		{[]string{"COMPLETE", "nothing to change: already done"}, Signal{Complete, "nothing to change: already done"}},
	}
	for _, tt := range tests {
		from, s, err := FromEnv(tt.args, env(full))
		if err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if from != (Sender{Dir: chorusDir, AgentID: "claude-1", TaskID: "ch-7", Key: key}) || s != tt.want {
			t.Errorf("%v: got %+v %+v", tt.args, from, s)
		}
	}

	_, _, err = FromEnv([]string{"COMPLETE"}, env(map[string]string{}))
	if err == nil || err.Error() != "not running under Chorus: CHORUS_DIR is not set" {
		t.Errorf("no CHORUS_DIR: %v", err)
	}
	_, _, err = FromEnv([]string{"COMPLETE"}, env(map[string]string{EnvDir: "/x", EnvAgentID: "a"}))
	if err == nil || !strings.Contains(err.Error(), EnvTaskID) {
		t.Errorf("no task id: %v", err)
	}
	if _, _, err = FromEnv([]string{"COMPLETE"}, env(map[string]string{EnvDir: ".chorus", EnvAgentID: "a", EnvTaskID: "t"})); err == nil {
		t.Error("relative CHORUS_DIR accepted")
	}
	if _, _, err = FromEnv(nil, env(full)); err == nil || !strings.Contains(err.Error(), "usage") {
		t.Errorf("no args: %v", err)
	}
	if _, _, err = FromEnv([]string{"FINISHED"}, env(full)); !errors.Is(err, ErrUnknownType) || !strings.Contains(err.Error(), "COMPLETE") {
		t.Errorf("unknown type: %v", err)
	}
	// The key decides who may signal.
	if _, _, err = FromEnv([]string{"COMPLETE"}, env(with(EnvKey, ""))); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), EnvKey+" is not set") {
		t.Errorf("no key: %v", err)
	}
	other, _ := NewKey()
	if _, _, err = FromEnv([]string{"COMPLETE"}, env(with(EnvKey, other))); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "does not belong to agent claude-1") {
		t.Errorf("wrong key: %v", err)
	}
	if _, _, err = FromEnv([]string{"COMPLETE"}, env(with(EnvAgentID, "codex-2"))); !errors.Is(err, ErrBadKey) || !strings.Contains(err.Error(), "not running") {
		t.Errorf("another agent's id: %v", err)
	}
	if err := RetireKey(chorusDir, "claude-1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err = FromEnv([]string{"COMPLETE"}, env(full)); !errors.Is(err, ErrBadKey) {
		t.Errorf("retired key accepted: %v", err)
	}
}

func TestNoChange(t *testing.T) {
	for _, tt := range []struct {
		s   Signal
		why string
		ok  bool
	}{
		{Signal{Complete, "nothing to change: the greeting is already there"}, "the greeting is already there", true},
		{Signal{Complete, "Nothing to change - already fixed upstream"}, "already fixed upstream", true},
		{Signal{Complete, "nothing to change"}, "", false}, // says no why
		{Signal{Complete, "nothing to change:"}, "", false},
		{Signal{Complete, "done"}, "", false},
		{Signal{Complete, ""}, "", false},
		{Signal{Blocked, "nothing to change: x"}, "", false},
	} {
		why, ok := tt.s.NoChange()
		if why != tt.why || ok != tt.ok {
			t.Errorf("%+v: got %q %v", tt.s, why, ok)
		}
	}
	s, err := Parse("COMPLETE: nothing to change: already done")
	if err != nil {
		t.Fatal(err)
	}
	if why, ok := s.NoChange(); !ok || why != "already done" {
		t.Errorf("parsed: %q %v", why, ok)
	}
}
