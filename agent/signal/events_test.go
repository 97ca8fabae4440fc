package signal

import (
	"errors"
	"strings"
	"testing"
)

func feed(t *testing.T, parse func([]byte) ([]Event, error), stream string) []Event {
	t.Helper()
	var out []Event
	for _, l := range strings.Split(stream, "\n") {
		if strings.TrimSpace(l) == "" {
			continue
		}
		evs, err := parse([]byte(l))
		if err != nil {
			if errors.Is(err, ErrNotJSON) {
				continue
			}
			t.Fatal(err)
		}
		out = append(out, evs...)
	}
	return out
}

func signalsOf(evs []Event) []string {
	var out []string
	for _, ev := range evs {
		for _, s := range ev.Signals {
			out = append(out, s.String())
		}
	}
	return out
}

const claudeStream = `{"type":"system","subtype":"init","cwd":"/w","session_id":"sess-1","tools":["Bash","Write"],"model":"claude-x"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"I'll commit the change."}],"usage":{"input_tokens":100,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":20}},"session_id":"sess-1"}
{"type":"assistant","message":{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"tool_use","id":"tu_1","name":"Bash","input":{"command":"git commit -am x"}}],"usage":{"input_tokens":100,"cache_creation_input_tokens":50,"cache_read_input_tokens":0,"output_tokens":20}},"session_id":"sess-1"}
{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu_1","content":"[agent/claude/ch-1 abc123] x"}]},"session_id":"sess-1"}
stray stderr line
{"type":"assistant","message":{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"text","text":"Done.\n<chorus>COMPLETE</chorus>"}],"usage":{"input_tokens":10,"cache_creation_input_tokens":0,"cache_read_input_tokens":150,"output_tokens":8}},"session_id":"sess-1"}
{"type":"result","subtype":"success","is_error":false,"duration_ms":2000,"num_turns":2,"result":"Done.\n<chorus>COMPLETE</chorus>","session_id":"sess-1","total_cost_usd":0.0123,"usage":{"input_tokens":110,"cache_creation_input_tokens":50,"cache_read_input_tokens":150,"output_tokens":28}}`

func TestClaudeStreamJSON(t *testing.T) {
	var p ClaudeParser
	evs := feed(t, p.Parse, claudeStream)
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind.String())
	}
	if got := strings.Join(kinds, ","); got != "text,usage,text,usage,completed,turn end" {
		t.Fatalf("kinds = %s", got)
	}
	if u := evs[3].Usage; u != (TokenUsage{Input: 110, Output: 28, CacheRead: 150, CacheWrite: 50}) {
		t.Errorf("running usage = %+v", u)
	}
	last := evs[len(evs)-2]
	want := TokenUsage{Input: 110, Output: 28, CacheRead: 150, CacheWrite: 50, CostUSD: 0.0123}
	if last.Usage != want || last.SessionID != "sess-1" || !strings.Contains(last.Text, "Done.") {
		t.Errorf("result = %+v", last)
	}
	// The tag counts once, at the turn's end, after the run's usage.
	if s := signalsOf(evs); len(s) != 1 || s[0] != "COMPLETE" || len(evs[5].Signals) != 1 {
		t.Errorf("signals = %q", s)
	}
}

func TestClaudeResultErrors(t *testing.T) {
	for _, line := range []string{
		`{"type":"result","subtype":"error_max_turns","is_error":false,"session_id":"s","total_cost_usd":0.5,"usage":{"input_tokens":1,"output_tokens":2}}`,
		`{"type":"result","subtype":"success","is_error":true,"result":"API Error: 500","session_id":"s"}`,
	} {
		var p ClaudeParser
		evs, err := p.Parse([]byte(line))
		if err != nil || len(evs) != 1 || evs[0].Kind != Failed || evs[0].Text == "" {
			t.Errorf("%s: %+v %v", line, evs, err)
		}
	}
}

const codexStream = `{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}
{"type":"turn.started"}
{"type":"item.started","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","status":"in_progress"}}
{"type":"item.completed","item":{"id":"item_0","type":"command_execution","command":"bash -lc ls","aggregated_output":"a\n","exit_code":0,"status":"completed"}}
{"type":"item.completed","item":{"id":"item_1","type":"reasoning","text":"**Checking tests**"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"All tests pass.\n<chorus>COMPLETE</chorus>"}}
{"type":"turn.completed","usage":{"input_tokens":2400,"cached_input_tokens":2000,"output_tokens":120}}`

func TestCodexExecJSON(t *testing.T) {
	var p CodexParser
	evs := feed(t, p.Parse, codexStream)
	if len(evs) != 4 || evs[0].Kind != Text || evs[1].Kind != Usage || evs[2].Kind != Completed || evs[3].Kind != TurnEnd {
		t.Fatalf("events = %+v", evs)
	}
	done := evs[2]
	if done.Usage != (TokenUsage{Input: 400, CacheRead: 2000, Output: 120}) {
		t.Errorf("usage = %+v", done.Usage)
	}
	if done.SessionID != "0199a213-81c0-7800-8aa1-bbab2a035a53" || !strings.Contains(done.Text, "All tests pass") {
		t.Errorf("completed = %+v", done)
	}
	if s := signalsOf(evs); len(s) != 1 || s[0] != "COMPLETE" || len(evs[3].Signals) != 1 {
		t.Errorf("signals = %q", s)
	}

	for _, line := range []string{
		`{"type":"turn.failed","error":{"message":"stream disconnected"}}`,
		`{"type":"error","message":"model not found"}`,
	} {
		var p CodexParser
		evs, err := p.Parse([]byte(line))
		if err != nil || len(evs) != 1 || evs[0].Kind != Failed || evs[0].Text == "" {
			t.Errorf("%s: %+v %v", line, evs, err)
		}
	}
	var p2 CodexParser
	if _, err := p2.Parse([]byte("Reading prompt from stdin...")); !errors.Is(err, ErrNotJSON) {
		t.Errorf("non-JSON line: %v", err)
	}
}
