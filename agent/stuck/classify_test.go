package stuck

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func screen(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The screens in testdata were recorded from Claude Code 2.1.330 and Codex
// 0.169.0 under a PTY (120x40) against the scripted model server, a closed
// port, or a HOME without credentials or trust.
func TestClassifyRecordedScreens(t *testing.T) {
	for _, c := range []struct {
		file     string
		cause    Cause
		status   int
		retrying bool
		detail   string // a part of it
	}{
		{"claude-login.txt", Login, 0, false, "Not logged in · Please run /login"},
		{"claude-trust-dialog.txt", Dialog, 0, false, "trust the folder /tmp/rec-cwd"},
		{"claude-500-retry-1.txt", APIError, 0, true, "API error"},
		{"claude-500-retry-3.txt", APIError, 500, true, "500 scripted error 500"},
		{"claude-500-final.txt", APIError, 500, false, "API Error: 500 scripted error 500"},
		{"claude-429-final.txt", APIError, 429, false, "Request rejected (429)"},
		{"claude-dead-retry.txt", Unreachable, 0, true, "ECONNREFUSED"},
		{"claude-dead-final.txt", Unreachable, 0, false, "API Error: Connection refused"},
		{"codex-500-final.txt", APIError, 0, false, "experiencing high demand"},
		{"codex-500-retry.txt", APIError, 0, true, "experiencing high demand"},
		{"codex-dead-retry.txt", Unreachable, 0, true, "error sending request"},
		{"codex-login.txt", Login, 0, false, "Missing environment variable: `FAKE_KEY`"},
		{"codex-trust-dialog.txt", Dialog, 0, false, "Codex asks whether to trust the folder /tmp/rec-cwd1182622591/sub"},
		// The recorded retry screens with the spinner line in the other
		// forms Claude Code 2.1.330 and Codex 0.169.0 draw (their
		// strings, from the binaries; the first as seen in a run that
		// stayed "running" for 150 s).
		{"claude-unable-connect-retry.txt", Unreachable, 0, true, "Unable to connect to API (ConnectionRefused)"},
		{"claude-timeout-waiting-retry.txt", Unreachable, 0, true, "Request timed out"},
		{"claude-next-try.txt", APIError, 0, true, "API error"},
		{"claude-500-retry-upper.txt", APIError, 500, true, "500 scripted error 500"},
		{"codex-500-reconnecting-ellipsis.txt", APIError, 0, true, "experiencing high demand"},
		{"codex-stream-retry.txt", Unreachable, 0, true, "stream disconnected"},
		// Look-alikes: a busy agent, a finished one, and an answer that
		// talks about "API Error: 500" and "Not logged in" in code it wrote.
		{"claude-busy.txt", None, 0, false, ""},
		{"claude-done.txt", None, 0, false, ""},
		{"claude-talk.txt", None, 0, false, ""},
		{"codex-busy.txt", None, 0, false, ""},
	} {
		t.Run(c.file, func(t *testing.T) {
			f := Classify(screen(t, c.file))
			if f.Cause != c.cause || f.Status != c.status || f.Retrying != c.retrying || !strings.Contains(f.Detail, c.detail) {
				t.Fatalf("got %#v; want %s status %d retrying %v detail ~%q", f, c.cause, c.status, c.retrying, c.detail)
			}
		})
	}
}

// An answer that starts like Claude Code's error line is still an answer:
// only with the input box's "resend" placeholder is it the CLI's error.
func TestClassifyAnswerLikeError(t *testing.T) {
	done := screen(t, "claude-done.txt")
	s := strings.Replace(done, "● Hello!", "● API Error: 500 is what the handler returns when the key is wrong.", 1)
	if f := Classify(s); f.Cause != None {
		t.Fatalf("an answer counted as an error: %#v", f)
	}
	// And a tool's output in the spinner's place while the agent works.
	busy := strings.Replace(screen(t, "claude-busy.txt"), "✽ Honking…", "  ⎿  API Error: 500 (printed by the tests)", 1)
	if f := Classify(busy); f.Cause != None {
		t.Fatalf("tool output counted as an error: %#v", f)
	}
	if f := Classify(""); f.Cause != None {
		t.Fatalf("empty screen: %#v", f)
	}
}

// The attempt counts of the retry lines.
func TestClassifyRetryAttempts(t *testing.T) {
	for file, want := range map[string][2]int{
		"claude-500-retry-3.txt": {3, 10}, "claude-unable-connect-retry.txt": {7, 10}, "claude-timeout-waiting-retry.txt": {2, 10},
		"claude-next-try.txt": {7, 0}, "claude-500-retry-upper.txt": {3, 10},
		"codex-500-retry.txt": {1, 5}, "codex-500-reconnecting-ellipsis.txt": {2, 5}, "codex-stream-retry.txt": {1, 5},
	} {
		if f := Classify(screen(t, file)); f.Attempt != want[0] || f.Attempts != want[1] {
			t.Errorf("%s: %#v, want attempt %d/%d", file, f, want[0], want[1])
		}
	}
}

func TestFindingString(t *testing.T) {
	f := Classify(screen(t, "claude-500-final.txt"))
	if got := f.String(); !strings.HasPrefix(got, "model API error 500 keeps failing: API Error: 500") {
		t.Fatalf("%q", got)
	}
	if got := Classify(screen(t, "claude-login.txt")).String(); got != "not logged in: Not logged in · Please run /login" {
		t.Fatalf("%q", got)
	}
}
