package app

import (
	"testing"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/orchestrator"
)

// The mode rule: --autopilot for the run, else --mode, else the last
// choice, else the config.
func TestModeRule(t *testing.T) {
	for _, c := range []struct {
		configured, chosen string
		o                  runOptions
		want               string
	}{
		{config.ModeSemiAuto, "", runOptions{}, config.ModeSemiAuto},
		{config.ModeSemiAuto, config.ModeAutopilot, runOptions{}, config.ModeAutopilot},
		{config.ModeAutopilot, config.ModeSemiAuto, runOptions{}, config.ModeSemiAuto},
		{config.ModeSemiAuto, config.ModeSemiAuto, runOptions{autopilot: true}, config.ModeAutopilot},
		{config.ModeSemiAuto, config.ModeAutopilot, runOptions{mode: config.ModeSemiAuto}, config.ModeSemiAuto},
	} {
		got, err := c.o.effectiveMode(config.Config{Mode: c.configured}, c.chosen)
		if err != nil || got != c.want {
			t.Errorf("config %s, chosen %q, %+v: %s %v, want %s", c.configured, c.chosen, c.o, got, err, c.want)
		}
		if !c.o.autopilot && c.o.mode == "" {
			if next, _ := modeRule(c.configured, c.chosen); next != c.want {
				t.Errorf("modeRule(%s, %q) = %s, want %s", c.configured, c.chosen, next, c.want)
			}
		}
	}
}

// Agent states as status names them.
func TestAgentState(t *testing.T) {
	for status, want := range map[string]string{
		orchestrator.AgentStarting: StateRunning, orchestrator.AgentRunning: StateRunning,
		orchestrator.AgentChecking: StateChecking, orchestrator.AgentNeedsHelp: StateWaiting,
		orchestrator.AgentNeedsHuman: StateWaiting, orchestrator.AgentWaiting: StateIdle,
		orchestrator.AgentStopping: StateStopping,
	} {
		if got := agentState(status); got != want {
			t.Errorf("%s: %s, want %s", status, got, want)
		}
	}
}
