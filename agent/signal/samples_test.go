package signal

import (
	"bufio"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestInMessageInvalidTags(t *testing.T) {
	v := InMessage("Finished.\n<chorus>FINISHED</chorus>")
	if len(v.Counts) != 1 || !errors.Is(v.Counts[0].Err, ErrUnknownType) || v.NearMiss {
		t.Fatalf("unknown type: %+v", v)
	}
	v = InMessage("Finished.\n<chorus>PROGRESS: 300</chorus>")
	if len(v.Counts) != 1 || !errors.Is(v.Counts[0].Err, ErrMalformed) {
		t.Fatalf("bad progress: %+v", v)
	}
	if SignalsIn("<chorus>FINISHED</chorus>") != nil {
		t.Fatal("an invalid tag became a signal")
	}
	// A near miss says what it saw and why it did not count.
	v = InMessage("All done. `<chorus>COMPLETE</chorus>`")
	if !v.NearMiss || v.Missed.Raw != "<chorus>COMPLETE</chorus>" || v.Missed.Signal.Type != Complete || !strings.Contains(v.Reason, "inline code") {
		t.Fatalf("near miss: %+v", v)
	}
}

// sample runs a real CLI's recorded output through a parser.
func sample(t *testing.T, name string, parse func([]byte) ([]Event, error), flush ...func() []Event) []Event {
	var fl func() []Event
	if len(flush) > 0 {
		fl = flush[0]
	}
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
	if fl != nil {
		out = append(out, fl()...)
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
	ct := &ClaudeTranscriptParser{}
	for _, tc := range []struct {
		file    string
		parse   func([]byte) ([]Event, error)
		cost    float64
		session string
	}{
		{"claude-stream.jsonl", (&ClaudeParser{}).Parse, 0.001811, "fbf4935e-6377-402c-8580-92dd385ef521"},
		{"claude-transcript.jsonl", ct.Parse, (300*5 + 30*25 + 55*0.5) / 1e6, "fbf4935e-6377-402c-8580-92dd385ef521"},
		{"codex-exec.jsonl", (&CodexParser{}).Parse, 0, "01a20af8-c935-7a31-a85b-944d9b4b02b7"},
		{"codex-rollout.jsonl", (&CodexRolloutParser{}).Parse, 0, "01a20af8-c935-7a31-a85b-944d9b4b02b7"},
		{"opencode-run.jsonl", (&OpenCodeParser{}).Parse, 0.00135, "ses_df507d265ffeM3kBfVZz1qaLob"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			var flush []func() []Event
			if tc.file == "claude-transcript.jsonl" {
				flush = append(flush, ct.Flush)
			}
			evs := sample(t, tc.file, tc.parse, flush...)
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
