package signal

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

const taskPrompt = `# Task: ch-12

## Description
Add a Greet function to hello.go that returns "hello, " + name.

## Acceptance Criteria
All tests pass

## Completion Protocol
When ALL criteria are met:
1. Ensure all required quality commands pass (see config.qualityCommands)
2. Output exactly: <chorus>COMPLETE</chorus>

If blocked, output: <chorus>BLOCKED: reason</chorus>

## Important
- Log discoveries to .agent/scratchpad.md
- Commit frequently with task ID in message`

// ownLinePrompt puts the tag on a line of its own, so its echo is a bare
// tag line just like a real signal.
const ownLinePrompt = `Fix the failing test in parse_test.go.
When everything passes, print this line on its own:
<chorus>COMPLETE</chorus>
Then stop.`

// echo renders a prompt the way Claude Code shows the user's message:
// "> " before the first line, two spaces before the others, word-wrapped
// at the terminal width.
func echo(prompt string, width int) []string {
	var out []string
	prefix := "> "
	for _, pl := range strings.Split(prompt, "\n") {
		words := strings.Fields(pl)
		if len(words) == 0 {
			out = append(out, "")
			prefix = "  "
			continue
		}
		line := ""
		for _, w := range words {
			if line != "" && len(prefix)+len(line)+1+len(w) > width {
				out = append(out, prefix+line)
				prefix, line = "  ", ""
			}
			if line != "" {
				line += " "
			}
			line += w
		}
		out = append(out, prefix+line)
		prefix = "  "
	}
	return out
}

func header(width int) []string {
	bar := strings.Repeat("─", width-2)
	return []string{"╭" + bar + "╮", "│ ✻ Welcome to Claude Code!" + strings.Repeat(" ", width-28) + "│", "╰" + bar + "╯", ""}
}

func inputBox(width int) []string {
	bar := strings.Repeat("─", width-2)
	return []string{"", "╭" + bar + "╮", "│ >" + strings.Repeat(" ", width-4) + "│", "╰" + bar + "╯", "  ? for shortcuts"}
}

var workDone = []string{
	"⏺ I'll add the Greet function and a test.",
	"",
	"⏺ Write(hello.go)",
	"  ⎿  Wrote 7 lines to hello.go",
	"",
	"⏺ Bash(go test ./...)",
	"  ⎿  ok   example.com/hello  0.002s",
	"",
	"⏺ Greet is implemented and all tests pass.",
	"",
	"  <chorus>COMPLETE</chorus>",
}

func screen(width int, parts ...[]string) string {
	lines := header(width)
	for _, p := range parts {
		lines = append(lines, p...)
		lines = append(lines, "")
	}
	lines = append(lines, inputBox(width)...)
	return strings.Join(lines, "\n")
}

func signals(fs []Found) []string {
	var out []string
	for _, f := range fs {
		if f.Err != nil {
			out = append(out, "ERR "+f.Raw)
			continue
		}
		out = append(out, f.Signal.String())
	}
	return out
}

func TestDetectorScreens(t *testing.T) {
	type tc struct {
		name    string
		prompt  string
		agent   []string
		want    []string
		wantErr error
	}
	tests := []tc{
		{name: "echo only", prompt: taskPrompt},
		{name: "own-line tag echo only", prompt: ownLinePrompt},
		{name: "done", prompt: taskPrompt, agent: workDone, want: []string{"COMPLETE"}},
		{name: "done after own-line echo", prompt: ownLinePrompt, agent: workDone, want: []string{"COMPLETE"}},
		{name: "message is just the tag", prompt: ownLinePrompt, agent: []string{"⏺ <chorus>COMPLETE</chorus>"}, want: []string{"COMPLETE"}},
		{name: "bullet variant", prompt: taskPrompt, agent: []string{"● Done.", "", "● <chorus>COMPLETE</chorus>."}, want: []string{"COMPLETE"}},
		{name: "mention mid-sentence", prompt: taskPrompt, agent: []string{"⏺ Once the tests pass I will print <chorus>COMPLETE</chorus> as asked."}},
		// On a screen only a tag alone on its line counts: nothing tells
		// a sentence the agent wrote from a tool's output line.
		{name: "inline at the end of the line", prompt: taskPrompt,
			agent: []string{"⏺ All done. <chorus>COMPLETE</chorus>"}},
		{name: "inline after own-line echo", prompt: ownLinePrompt,
			agent: []string{"⏺ Tests pass. <chorus>COMPLETE</chorus>"}},
		{name: "a grep result ending with the tag", prompt: taskPrompt,
			agent: []string{"⏺ Bash(grep -rn chorus notes.md)", "  ⎿  notes.md:3: <chorus>COMPLETE</chorus>"}},
		{name: "displayed document with a fenced tag", prompt: taskPrompt,
			agent: []string{"⏺ Bash(cat docs/protocol.md)", "  ⎿  # Protocol", "     ```", "     <chorus>COMPLETE</chorus>", "     ```"}},
		{name: "blocked with wrapped payload", prompt: taskPrompt,
			agent: []string{"⏺ I cannot reach the payments sandbox.", "", "  <chorus>BLOCKED: the payments API key is missing from", "  .env</chorus>"},
			want:  []string{"BLOCKED: the payments API key is missing from .env"}},
		{name: "progress then complete", prompt: taskPrompt,
			agent: []string{"⏺ Halfway there.", "  <chorus>PROGRESS: 50</chorus>", "", "⏺ All tests pass now.", "", "  <chorus>COMPLETE</chorus>"},
			want:  []string{"PROGRESS: 50", "COMPLETE"}},
		{name: "tag typed in the input box", prompt: taskPrompt, agent: []string{"│ > <chorus>COMPLETE</chorus>     │"}},
		{name: "unknown type", prompt: taskPrompt, agent: []string{"⏺ Finished.", "  <chorus>FINISHED</chorus>"},
			want: []string{"ERR <chorus>FINISHED</chorus>"}, wantErr: ErrUnknownType},
		{name: "no prompt given", agent: workDone, want: []string{"COMPLETE"}},
	}
	for _, tt := range tests {
		for _, width := range []int{32, 40, 60, 80, 120} {
			t.Run(fmt.Sprintf("%s/w%d", tt.name, width), func(t *testing.T) {
				var prompts []string
				parts := [][]string{}
				if tt.prompt != "" {
					prompts = []string{tt.prompt}
					parts = append(parts, echo(tt.prompt, width))
				}
				if tt.agent != nil {
					parts = append(parts, tt.agent)
				}
				scr := screen(width, parts...)
				d := NewDetector(DetectorOptions{Prompts: prompts})
				var got []Found
				// A TUI repaints the same screen over and over.
				for i := 0; i < 5; i++ {
					got = append(got, d.Snapshot(scr)...)
				}
				if s := signals(got); strings.Join(s, "|") != strings.Join(tt.want, "|") {
					t.Fatalf("got %q, want %q\nscreen:\n%s", s, tt.want, scr)
				}
				if tt.wantErr != nil && !errors.Is(got[0].Err, tt.wantErr) {
					t.Errorf("err = %v, want %v", got[0].Err, tt.wantErr)
				}
				// The same text streamed in small pieces gives the same answer.
				for _, size := range []int{1, 3, 7, 64} {
					ds := NewDetector(DetectorOptions{Prompts: prompts})
					var streamed []Found
					for _, chunk := range chunks(scr, size) {
						streamed = append(streamed, ds.Append(chunk)...)
					}
					streamed = append(streamed, ds.Flush()...)
					if s := signals(streamed); strings.Join(s, "|") != strings.Join(tt.want, "|") {
						t.Fatalf("streamed in %d-byte chunks: got %q, want %q", size, s, tt.want)
					}
				}
			})
		}
	}
}

// chunks splits s into pieces of n bytes, cutting through UTF-8 characters
// and tags alike, as reads from a PTY do.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		out = append(out, s[:n])
		s = s[n:]
	}
	return append(out, s)
}

func TestDetectorTurns(t *testing.T) {
	const width = 60
	feedback := "Quality check failed: go vet reported an unused variable in hello.go. Fix it, then output <chorus>COMPLETE</chorus> again."
	d := NewDetector(DetectorOptions{Prompts: []string{taskPrompt}})

	turn1 := []string{screen(width, echo(taskPrompt, width)), screen(width, echo(taskPrompt, width), workDone)}
	var got []Found
	for _, s := range turn1 {
		got = append(got, d.Snapshot(s)...)
	}
	if s := signals(got); len(s) != 1 || s[0] != "COMPLETE" {
		t.Fatalf("turn 1: %q", s)
	}

	// The engine types feedback: a new turn.
	d.AddPrompt(feedback)
	d.Reset()
	afterFeedback := screen(width, echo(taskPrompt, width), workDone, echo(feedback, width))
	if s := signals(d.Snapshot(afterFeedback)); len(s) != 0 {
		t.Fatalf("old COMPLETE or feedback echo counted: %q", s)
	}
	fixed := []string{"⏺ Update(hello.go)", "  ⎿  Updated hello.go with 1 removal", "", "⏺ Removed the unused variable; vet and tests are clean.", "", "  <chorus>COMPLETE</chorus>"}
	final := screen(width, echo(taskPrompt, width), workDone, echo(feedback, width), fixed)
	got = nil
	for i := 0; i < 3; i++ {
		got = append(got, d.Snapshot(final)...)
	}
	if s := signals(got); len(s) != 1 || s[0] != "COMPLETE" {
		t.Fatalf("turn 2: want one new COMPLETE, got %q", s)
	}

	// Without Reset a repeated signal in the same turn does not count again.
	again := screen(width, echo(taskPrompt, width), workDone, echo(feedback, width), fixed, []string{"⏺ Double-checked.", "  <chorus>COMPLETE</chorus>"})
	if s := signals(d.Snapshot(again)); len(s) != 0 {
		t.Fatalf("same signal twice in one turn: %q", s)
	}
}

// TestDetectorScrollingScreen slides a small alternate-screen window over
// the transcript, as a full-screen TUI scrolls its own viewport: the echo
// and the signal move up, lose their context off the top, and must still
// count exactly once.
func TestDetectorScrollingScreen(t *testing.T) {
	const width, rows = 40, 8
	for _, prompt := range []string{taskPrompt, ownLinePrompt} {
		all := strings.Split(screen(width, echo(prompt, width), workDone, []string{"⏺ Anything else?", "", "", "", "", "", "", "", ""}), "\n")
		d := NewDetector(DetectorOptions{Prompts: []string{prompt}})
		var got []Found
		for top := 0; top+rows <= len(all); top++ {
			view := strings.Join(all[top:top+rows], "\n")
			n := len(got)
			got = append(got, d.Snapshot(view)...)
			got = append(got, d.Snapshot(view)...)
			if len(got) > n {
				// Feedback goes in at once: from here on a new turn, in
				// which the old tag scrolling by must not count again.
				d.Reset()
			}
		}
		if s := signals(got); len(s) != 1 || s[0] != "COMPLETE" {
			t.Errorf("scrolling: got %q", s)
		}
	}
}

func TestDetectorStreamWithRepaintsAndANSI(t *testing.T) {
	const width = 50
	scr := screen(width, echo(taskPrompt, width), workDone)
	// Render the screen as a TUI would: absolute cursor moves, line
	// erases, colours, a title, synchronized-output brackets, no newlines.
	var raw strings.Builder
	raw.WriteString("\x1b[?1049h\x1b[?25l\x1b]0;✳ Claude Code\x07")
	for frame := 0; frame < 3; frame++ {
		raw.WriteString("\x1b[?2026h")
		for i, l := range strings.Split(scr, "\n") {
			fmt.Fprintf(&raw, "\x1b[%d;1H\x1b[2K", i+1)
			l = strings.Replace(l, "⏺", "\x1b[38;5;246m⏺\x1b[39m", 1)
			l = strings.Replace(l, "  ", "\x1b[2C", 1)
			raw.WriteString(l)
		}
		raw.WriteString("\x1b[?2026l")
	}
	for _, size := range []int{1, 5, 13, 4096} {
		var st Stripper
		d := NewDetector(DetectorOptions{Prompts: []string{taskPrompt}})
		var got []Found
		for _, c := range chunks(raw.String(), size) {
			got = append(got, d.Append(st.Write([]byte(c)))...)
		}
		got = append(got, d.Flush()...)
		if s := signals(got); len(s) != 1 || s[0] != "COMPLETE" {
			t.Errorf("chunk %d: got %q", size, s)
		}
	}
}

func TestStripANSI(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", "plain"},
		{"\x1b[1;31mred\x1b[0m text", "red text"},
		{"a\r\nb", "a\nb"},
		{"spin\rspun", "spin\nspun"},
		{"\x1b[5;1Hrow five\x1b[6;1Hrow six", "\nrow five\nrow six"},
		{"a\x1b[3Cb", "a   b"},
		{"\x1b]0;title\x07x\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\", "xlink"},
		{"\x1b[?2004h\x1b[>4;2m\x1b(Bok\x1bPq#0\x1b\\", "ok"},
		{"✳ tick \u009c", "✳ tick "},
		{"bell\x07 back\x08", "bell back"},
	}
	for _, tt := range tests {
		if got := StripANSI([]byte(tt.in)); got != tt.want {
			t.Errorf("StripANSI(%q) = %q, want %q", tt.in, got, tt.want)
		}
		// Byte by byte through a Stripper gives the same text.
		var s Stripper
		var b strings.Builder
		for i := 0; i < len(tt.in); i++ {
			b.WriteString(s.Write([]byte{tt.in[i]}))
		}
		if b.String() != tt.want {
			t.Errorf("streamed %q = %q, want %q", tt.in, b.String(), tt.want)
		}
	}
}

func TestSignalsIn(t *testing.T) {
	// Only the message's last tag can count.
	if got := SignalsIn("Done.\n<chorus>PROGRESS: 100</chorus>\nsee <chorus>BOGUS</chorus>. All done.\n<chorus>COMPLETE</chorus>"); len(got) != 1 || got[0] != (Signal{Type: Complete}) {
		t.Errorf("SignalsIn = %+v", got)
	}
	if got := SignalsIn("Done.\n<chorus>PROGRESS: 100</chorus>\nsee <chorus>BOGUS</chorus> and <chorus>COMPLETE</chorus>"); got != nil {
		t.Errorf("a tag continuing a sentence counted: %+v", got)
	}
}
