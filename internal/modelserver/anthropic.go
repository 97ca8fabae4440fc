package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type anthropicRequest struct {
	Model     string          `json:"model"`
	MaxTokens int             `json:"max_tokens"`
	Stream    bool            `json:"stream"`
	System    json.RawMessage `json:"system"`
	Messages  []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
}

// sideKind recognises the requests Claude Code makes besides the
// conversation; "" means a conversation turn.
func (q *anthropicRequest) sideKind(last string) string {
	switch {
	case q.MaxTokens == 1:
		return "quota"
	case len(q.Tools) == 0:
		// Session titles and other tool-less helpers.
		return "helper"
	}
	// Forked helpers carry the main system prompt and tools; their last
	// user message gives them away.
	switch {
	case strings.Contains(last, "[SUGGESTION MODE"):
		return "suggestion"
	case strings.Contains(last, "create a detailed summary of the conversation"):
		return "compaction"
	}
	return ""
}

func (s *Server) anthropic(w http.ResponseWriter, r *http.Request, body []byte) {
	var q anthropicRequest
	if err := json.Unmarshal(body, &q); err != nil {
		s.record(Request{API: "anthropic", Path: r.URL.Path, Kind: "bad", Script: -1, Status: 400})
		errorTurn(w, "anthropic", http.StatusBadRequest)
		return
	}
	req := Request{API: "anthropic", Path: r.URL.Path, Model: q.Model, Script: -1}
	var users strings.Builder
	for _, m := range q.Messages {
		switch m.Role {
		case "assistant":
			req.Index++
		case "user":
			t := textOf(m.Content)
			users.WriteString(t)
			users.WriteString("\n")
			req.LastUser = t
		}
	}
	req.UserText = users.String()
	sys := textOf(q.System)
	if m := cwdClaude.FindStringSubmatch(sys + "\n" + req.UserText); m != nil {
		req.Cwd = m[1]
	}
	req.Kind = q.sideKind(req.LastUser)
	var t Turn
	if req.Kind != "" {
		t = Turn{Text: "OK"}
		if strings.Contains(sys+req.LastUser, "title") {
			t.Text = `{"title": "Scripted task"}`
		}
		if req.Kind == "suggestion" {
			t.Text = ""
		}
	} else {
		req.Kind = "turn"
		var ok bool
		if t, ok = s.scripted(r, &req); !ok {
			return
		}
	}
	if !s.answerable(w, &req, t, "anthropic") {
		return
	}
	id := s.nextID()
	stop := t.Stop
	if stop == "" {
		stop = "end_turn"
		if len(t.Tools) > 0 {
			stop = "tool_use"
		}
	}
	usage := map[string]any{
		"input_tokens": t.Usage.Input, "output_tokens": t.Usage.Output,
		"cache_read_input_tokens": t.Usage.CacheRead, "cache_creation_input_tokens": t.Usage.CacheWrite,
	}
	model := q.Model
	if model == "" {
		model = "claude-sonnet-4-5"
	}
	msgID := fmt.Sprintf("msg_scripted_%d", id)
	var content []map[string]any
	if t.Text != "" {
		content = append(content, map[string]any{"type": "text", "text": t.Text})
	}
	for i, tool := range t.Tools {
		content = append(content, map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d_%d", id, i), "name": tool.Name, "input": tool.Input})
	}
	if !q.Stream {
		writeJSON(w, map[string]any{"id": msgID, "type": "message", "role": "assistant", "model": model,
			"content": nonNil(content), "stop_reason": stop, "stop_sequence": nil, "usage": usage})
		return
	}
	e := newSSE(w)
	startUsage := map[string]any{
		"input_tokens": t.Usage.Input, "output_tokens": 1,
		"cache_read_input_tokens": t.Usage.CacheRead, "cache_creation_input_tokens": t.Usage.CacheWrite,
	}
	e.send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": msgID, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": startUsage}})
	for i, c := range content {
		if c["type"] == "text" {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "text", "text": ""}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "text_delta", "text": c["text"]}})
		} else {
			e.send("content_block_start", map[string]any{"type": "content_block_start", "index": i,
				"content_block": map[string]any{"type": "tool_use", "id": c["id"], "name": c["name"], "input": map[string]any{}}})
			e.send("content_block_delta", map[string]any{"type": "content_block_delta", "index": i,
				"delta": map[string]any{"type": "input_json_delta", "partial_json": inputJSON(c["input"].(map[string]any))}})
		}
		e.send("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	e.send("message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage})
	e.send("message_stop", map[string]any{"type": "message_stop"})
}

func nonNil(c []map[string]any) []map[string]any {
	if c == nil {
		return []map[string]any{}
	}
	return c
}
