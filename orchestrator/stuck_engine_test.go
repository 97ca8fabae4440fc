package orchestrator

import (
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

// An agent whose signals come from a transcript is still read from its
// screen for being stuck: a login prompt on screen turns it NEEDS_HUMAN
// with the cause.
func TestStuckScreenSeenForTranscriptAgent(t *testing.T) {
	script := `
print "❯ say hello please"
print "  ⎿  Not logged in · Please run /login"
print "────────────────────────────────────────"
print "❯ Once fixed, resend your message"
print "────────────────────────────────────────"
print "  ⏵⏵ bypass permissions on (shift+tab to cycle)"
hang
`
	h := newHarness(t, script, func(c *config.Config) {
		p := c.Agents.Available["script"]
		p.Transcript = config.TranscriptClaude // signals from a (missing) transcript, not the screen
		c.Agents.Available["script"] = p
	})
	id := h.task("stuck", beads.CreateOptions{})
	h.start()
	h.eng.Do(t.Context(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvNeedsHuman, id))
	if ev.Fields["cause"] != "login" {
		t.Fatalf("cause %v: %s\n%s", ev.Fields["cause"], ev.Text, h.report())
	}
}
