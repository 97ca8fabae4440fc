package orchestrator

import (
	"testing"

	"github.com/chorus-dev/chorus/config"
)

// The CLI's own failure report is kept for the exit message: claude's
// error result, codex's turn.failed / error.
func TestEventParserKeepsFailure(t *testing.T) {
	for _, c := range []struct{ format, lines, want string }{
		{config.FormatClaudeJSON, `{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login"}` + "\n", "Not logged in · Please run /login"},
		{config.FormatCodexJSON, `{"type":"error","message":"stream error"}` + "\n" + `{"type":"turn.failed","error":{"message":"unexpected status 500"}}`, "unexpected status 500"},
		{config.FormatClaudeJSON, `{"type":"result","subtype":"success","is_error":false,"result":"done"}` + "\n", ""},
	} {
		p := newEventParser(c.format)
		p.feed([]byte(c.lines))
		p.flush()
		if p.failure != c.want {
			t.Errorf("%s: failure %q, want %q", c.format, p.failure, c.want)
		}
	}
}
