package signal

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// ruleCases is the one table of where a tag counts. Every channel that
// reads an agent's own words (the structured parsers, the terminal
// Detector) must give the same answers.
var ruleCases = []struct {
	name, text string
	want       []string
}{
	{"alone on its line", "Tests pass.\n<chorus>COMPLETE</chorus>", []string{"COMPLETE"}},
	{"inline at the end", "All done. <chorus>COMPLETE</chorus>", []string{"COMPLETE"}},
	{"trailing punctuation", "Finished, see above: <chorus>COMPLETE</chorus>.", []string{"COMPLETE"}},
	{"bold", "**<chorus>COMPLETE</chorus>**", []string{"COMPLETE"}},
	{"list item", "- [x] tests pass\n  - <chorus>COMPLETE</chorus>", []string{"COMPLETE"}},
	{"ends the message after a closed fence", "Ran:\n```sh\nmake test\n```\nAll good. <chorus>COMPLETE</chorus>", []string{"COMPLETE"}},
	{"blocked with a payload", "I cannot go on.\n<chorus>BLOCKED: no API key for the sandbox</chorus>", []string{"BLOCKED: no API key for the sandbox"}},
	{"progress then complete", "<chorus>PROGRESS: 50</chorus>\nNow the docs.\n<chorus>COMPLETE</chorus>", []string{"PROGRESS: 50", "COMPLETE"}},
	{"two tags on one line", "<chorus>PROGRESS: 90</chorus> <chorus>COMPLETE</chorus>", []string{"COMPLETE"}},
	{"mid-sentence", "I will print <chorus>COMPLETE</chorus> once tests pass.", nil},
	{"mention then more words", "Remember: <chorus>COMPLETE</chorus> goes last", nil},
	{"a question", "Should I print <chorus>COMPLETE</chorus>?", nil},
	{"inline code", "When done I print `<chorus>COMPLETE</chorus>` and stop.", nil},
	{"inline code ending the line", "The signal is `<chorus>COMPLETE</chorus>`", nil},
	{"double quotes", `The protocol says to output "<chorus>COMPLETE</chorus>"`, nil},
	{"single quotes", "It wants '<chorus>COMPLETE</chorus>'.", nil},
	{"curly quotes", "It wants “<chorus>COMPLETE</chorus>”", nil},
	{"block quote", "The task says:\n> <chorus>COMPLETE</chorus>", nil},
	{"fenced block", "The doc says:\n```\n<chorus>COMPLETE</chorus>\n```\nI am not done yet.", nil},
	{"tilde fence", "~~~md\nAll done. <chorus>COMPLETE</chorus>\n~~~", nil},
	{"indented fence in a list", "1. Protocol:\n   ```\n   <chorus>COMPLETE</chorus>\n   ```", nil},
	{"unclosed fence", "Output:\n```\n<chorus>COMPLETE</chorus>", nil},
}

// channel runs one text through a channel as an agent's whole message and
// returns the signals it counted.
type channel struct {
	name string
	run  func(t *testing.T, text string) []string
}

func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s) // escapes < and > as \u003c, \u003e, as opencode's events may
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parsed(t *testing.T, parse func([]byte) ([]Event, error), lines ...string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		evs, err := parse([]byte(l))
		if err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		for _, ev := range evs {
			for _, s := range ev.Signals {
				out = append(out, s.String())
			}
		}
	}
	return out
}

var channels = []channel{
	{"InMessage", func(t *testing.T, text string) []string { return signals(InMessage(text)) }},
	{"screen snapshot", func(t *testing.T, text string) []string {
		d := NewDetector(DetectorOptions{Prompts: []string{taskPrompt}})
		var got []Found
		for i := 0; i < 3; i++ { // repaints
			got = append(got, d.Snapshot("$ my-agent run\n"+text+"\n$ ")...)
		}
		return signals(got)
	}},
	{"screen stream", func(t *testing.T, text string) []string {
		d := NewDetector(DetectorOptions{Prompts: []string{taskPrompt}})
		var got []Found
		for _, c := range chunks("$ my-agent run\n"+text+"\n", 5) {
			got = append(got, d.Append(c)...)
		}
		return signals(append(got, d.Flush()...))
	}},
	{"claude stream-json", func(t *testing.T, text string) []string {
		var p ClaudeParser
		return parsed(t, p.Parse,
			`{"type":"assistant","message":{"id":"m1","role":"assistant","content":[{"type":"text","text":`+jsonString(t, text)+`}],"usage":{"input_tokens":1,"output_tokens":1}},"session_id":"s"}`,
			`{"type":"result","subtype":"success","is_error":false,"result":`+jsonString(t, text)+`,"session_id":"s"}`)
	}},
	{"claude transcript", func(t *testing.T, text string) []string {
		var p ClaudeTranscriptParser
		return parsed(t, p.Parse,
			`{"type":"assistant","isSidechain":false,"sessionId":"s","message":{"id":"m1","model":"claude-sonnet-4-5","role":"assistant","content":[{"type":"text","text":`+jsonString(t, text)+`}],"usage":{"input_tokens":1,"output_tokens":1}}}`)
	}},
	{"codex exec", func(t *testing.T, text string) []string {
		var p CodexParser
		return parsed(t, p.Parse,
			`{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":`+jsonString(t, text)+`}}`,
			`{"type":"turn.completed","usage":{"input_tokens":10,"cached_input_tokens":0,"output_tokens":1}}`)
	}},
	{"codex rollout", func(t *testing.T, text string) []string {
		var p CodexRolloutParser
		return parsed(t, p.Parse,
			`{"type":"response_item","payload":{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":`+jsonString(t, text)+`,"annotations":[]}]}}`)
	}},
	{"opencode", func(t *testing.T, text string) []string {
		var p OpenCodeParser
		return parsed(t, p.Parse,
			`{"type":"text","sessionID":"ses_1","part":{"id":"prt_1","type":"text","text":`+jsonString(t, text)+`,"time":{"start":1,"end":2}}}`)
	}},
}

func TestTagRuleEveryChannel(t *testing.T) {
	for _, ch := range channels {
		for _, tc := range ruleCases {
			t.Run(ch.name+"/"+tc.name, func(t *testing.T) {
				got := ch.run(t, tc.text)
				if strings.Join(got, "|") != strings.Join(tc.want, "|") {
					t.Fatalf("got %q, want %q\ntext:\n%s", got, tc.want, tc.text)
				}
			})
		}
	}
}

func TestInMessageInvalidTags(t *testing.T) {
	got := InMessage("Finished.\n<chorus>FINISHED</chorus>\n<chorus>PROGRESS: 300</chorus>")
	if len(got) != 2 || !errors.Is(got[0].Err, ErrUnknownType) || !errors.Is(got[1].Err, ErrMalformed) {
		t.Fatalf("got %+v", got)
	}
	if SignalsIn("<chorus>FINISHED</chorus>") != nil {
		t.Fatal("an invalid tag became a signal")
	}
	// A tag wrapped over lines counts when its last line ends with it.
	if s := signals(InMessage("<chorus>BLOCKED: the key is\nmissing</chorus>")); len(s) != 1 || s[0] != "BLOCKED: the key is missing" {
		t.Fatalf("wrapped: %q", s)
	}
}

// sample runs a real CLI's recorded output through a parser.
func sample(t *testing.T, name string, parse func([]byte) ([]Event, error)) []Event {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	var out []Event
	for sc.Scan() {
		evs, err := parse(sc.Bytes())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		out = append(out, evs...)
	}
	return out
}

func summary(evs []Event) (sigs []string, usage TokenUsage, texts []string, last Event) {
	for _, ev := range evs {
		for _, s := range ev.Signals {
			sigs = append(sigs, s.String())
		}
		if ev.Kind == Usage || ev.Kind == Completed {
			usage = ev.Usage
		}
		if ev.Kind == Text {
			texts = append(texts, ev.Text)
		}
		last = ev
	}
	return
}

// The samples are real runs (claude 2.1.330, codex 0.169.0, opencode
// 1.18.33 against internal/modelserver) of the same script: "Let me
// check." with a shell call printing "tool says <chorus>COMPLETE</chorus>",
// then "All done. <chorus>COMPLETE</chorus>". Usage 100+200 input, 10+20
// output, 5+50 cache reads. The tool's output must not count, and the
// final message must count once.
func TestRealSamples(t *testing.T) {
	want := TokenUsage{Input: 300, Output: 30, CacheRead: 55}
	texts := []string{"Let me check.", "All done. <chorus>COMPLETE</chorus>"}
	for _, tc := range []struct {
		file    string
		parse   func([]byte) ([]Event, error)
		cost    float64
		session string
	}{
		{"claude-stream.jsonl", (&ClaudeParser{}).Parse, 0.001811, "fbf4935e-6377-402c-8580-92dd385ef521"},
		{"claude-transcript.jsonl", (&ClaudeTranscriptParser{}).Parse, (300*5 + 30*25 + 55*0.5) / 1e6, "fbf4935e-6377-402c-8580-92dd385ef521"},
		{"codex-exec.jsonl", (&CodexParser{}).Parse, 0, "01a20af8-c935-7a31-a85b-944d9b4b02b7"},
		{"codex-rollout.jsonl", (&CodexRolloutParser{}).Parse, 0, "01a20af8-c935-7a31-a85b-944d9b4b02b7"},
		{"opencode-run.jsonl", (&OpenCodeParser{}).Parse, 0.00135, "ses_df507d265ffeM3kBfVZz1qaLob"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			evs := sample(t, tc.file, tc.parse)
			sigs, u, txt, last := summary(evs)
			if strings.Join(sigs, "|") != "COMPLETE" {
				t.Errorf("signals %q, want one COMPLETE", sigs)
			}
			if strings.Join(txt, "|") != strings.Join(texts, "|") {
				t.Errorf("assistant texts %q", txt)
			}
			cost := u.CostUSD
			u.CostUSD = 0
			if u != want || cost < tc.cost-1e-9 || cost > tc.cost+1e-9 {
				t.Errorf("usage %+v cost %v, want %+v cost %v", u, cost, want, tc.cost)
			}
			if last.SessionID != tc.session {
				t.Errorf("session %q", last.SessionID)
			}
		})
	}
}

// Failures carry the CLI's own reason.
func TestFailureReasons(t *testing.T) {
	evs := sample(t, "opencode-error.jsonl", (&OpenCodeParser{}).Parse)
	if len(evs) != 1 || evs[0].Kind != Failed || evs[0].Text != "scripted error 400" {
		t.Errorf("opencode error: %+v", evs)
	}
	for _, tc := range []struct {
		parse      func([]byte) ([]Event, error)
		line, want string
	}{
		{(&ClaudeParser{}).Parse, `{"type":"result","subtype":"success","is_error":true,"result":"Not logged in · Please run /login","session_id":"s"}`, "Not logged in · Please run /login"},
		{(&ClaudeParser{}).Parse, `{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500 {\"type\":\"error\"}","session_id":"s"}`, `API Error: 500 {"type":"error"}`},
		{(&ClaudeParser{}).Parse, `{"type":"result","subtype":"error_max_turns","is_error":false,"session_id":"s"}`, "error_max_turns"},
		{(&CodexParser{}).Parse, `{"type":"turn.failed","error":{"message":"stream disconnected before completion"}}`, "stream disconnected before completion"},
		{(&CodexParser{}).Parse, `{"type":"error","message":"unexpected status 401 Unauthorized"}`, "unexpected status 401 Unauthorized"},
	} {
		evs, err := tc.parse([]byte(tc.line))
		if err != nil || len(evs) != 1 || evs[0].Kind != Failed || evs[0].Text != tc.want {
			t.Errorf("%s: %+v %v", tc.line, evs, err)
		}
	}
}
