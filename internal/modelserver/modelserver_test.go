package modelserver

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

func post(t *testing.T, url string, body any) (*http.Response, []map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var events []map[string]any
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			var ev map[string]any
			if err := json.Unmarshal([]byte(d), &ev); err != nil {
				t.Fatal(err)
			}
			events = append(events, ev)
		}
	}
	return resp, events
}

func types(evs []map[string]any) string {
	var s []string
	for _, e := range evs {
		s = append(s, e["type"].(string))
	}
	return strings.Join(s, " ")
}

// Turns are picked by the conversation's text and its assistant replies;
// side requests consume none; errors repeat for retries.
func TestAnthropicTurns(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Add(Script{Match: []string{"task-1"}, Turns: []Turn{
		{Tools: []Tool{Bash("ls")}, Usage: Usage{Input: 10, Output: 2}},
		{Status: 529},
	}})
	s.Add(Script{Match: []string{"task-1", "iteration 2"}, Turns: []Turn{{Text: "second run"}}})
	tools := []map[string]any{{"name": "Bash"}}
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }
	// A quota probe and a tool-less helper are not turns.
	post(t, s.URL+"/v1/messages", map[string]any{"max_tokens": 1, "stream": true, "tools": tools, "messages": []any{user("task-1")}})
	post(t, s.URL+"/v1/messages", map[string]any{"max_tokens": 100, "stream": true, "messages": []any{user("task-1 title")}})
	_, evs := post(t, s.URL+"/v1/messages", map[string]any{"stream": true, "tools": tools, "messages": []any{user("do task-1")}})
	if got := types(evs); got != "message_start content_block_start content_block_delta content_block_stop message_delta message_stop" {
		t.Fatalf("events: %s", got)
	}
	if d := evs[2]["delta"].(map[string]any); d["type"] != "input_json_delta" || d["partial_json"] != `{"command":"ls","description":"run a command"}` {
		t.Fatalf("tool delta %v", d)
	}
	if d := evs[4]["delta"].(map[string]any); d["stop_reason"] != "tool_use" {
		t.Fatalf("stop %v", d)
	}
	conv := []any{user("do task-1"), map[string]any{"role": "assistant", "content": "x"}, user("result")}
	for i := 0; i < 2; i++ {
		if resp, _ := post(t, s.URL+"/v1/messages", map[string]any{"stream": true, "tools": tools, "messages": conv}); resp.StatusCode != 529 {
			t.Fatalf("retry %d: status %d", i, resp.StatusCode)
		}
	}
	_, evs = post(t, s.URL+"/v1/messages", map[string]any{"stream": true, "tools": tools, "messages": []any{user("task-1 Handover (iteration 2)")}})
	if d := evs[2]["delta"].(map[string]any); d["text"] != "second run" {
		t.Fatalf("the more specific script was not chosen: %v", d)
	}
	var kinds []string
	for _, r := range s.Requests() {
		kinds = append(kinds, r.Kind)
	}
	if got := strings.Join(kinds, " "); got != "quota helper turn turn turn turn" {
		t.Fatalf("requests: %s", got)
	}
}

func TestOpenAIResponses(t *testing.T) {
	s, err := Start()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.Add(Script{Match: []string{"task-2"}, Turns: []Turn{
		{Text: "running", Tools: []Tool{Exec("ls")}},
		{Text: "done", Usage: Usage{Input: 5, Output: 3, CacheRead: 2}},
	}})
	tools := []any{map[string]any{"type": "function", "name": "exec_command"}}
	msg := func(role, typ, text string) map[string]any {
		return map[string]any{"type": "message", "role": role, "content": []any{map[string]any{"type": typ, "text": text}}}
	}
	_, evs := post(t, s.URL+"/v1/responses", map[string]any{"stream": true, "tools": tools, "input": []any{msg("user", "input_text", "<cwd>/w</cwd> task-2")}})
	if got := types(evs); !strings.HasPrefix(got, "response.created response.output_item.added response.output_text.delta response.output_item.done response.output_item.added response.output_item.done response.completed") {
		t.Fatalf("events: %s", got)
	}
	// The text and the call of one reply count as one assistant turn.
	input := []any{msg("user", "input_text", "task-2"), msg("assistant", "output_text", "running"),
		map[string]any{"type": "function_call", "name": "exec_command", "arguments": "{}", "call_id": "c"},
		map[string]any{"type": "function_call_output", "call_id": "c", "output": "ok"}}
	_, evs = post(t, s.URL+"/v1/responses", map[string]any{"stream": true, "tools": tools, "input": input})
	last := evs[len(evs)-1]["response"].(map[string]any)["usage"].(map[string]any)
	if last["input_tokens"].(float64) != 7 || last["input_tokens_details"].(map[string]any)["cached_tokens"].(float64) != 2 {
		t.Fatalf("usage %v", last)
	}
	if r := s.Requests(); r[0].Cwd != "/w" || r[1].Index != 1 || r[1].LastUser != "ok" {
		t.Fatalf("requests %+v", r)
	}
}
