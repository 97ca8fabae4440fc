package modelserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

type openaiRequest struct {
	Model        string `json:"model"`
	Instructions string `json:"instructions"`
	Stream       bool   `json:"stream"`
	Input        []struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	} `json:"input"`
	Tools []json.RawMessage `json:"tools"`
}

// openai serves POST /v1/responses.
func (s *Server) openai(w http.ResponseWriter, r *http.Request, body []byte) {
	var q openaiRequest
	if err := json.Unmarshal(body, &q); err != nil {
		s.record(Request{API: "openai", Path: r.URL.Path, Kind: "bad", Script: -1, Status: 400})
		errorTurn(w, "openai", http.StatusBadRequest)
		return
	}
	req := Request{API: "openai", Path: r.URL.Path, Model: q.Model, Script: -1, Kind: "turn"}
	var users strings.Builder
	assistantRun := false
	for _, it := range q.Input {
		side := it.Type == "function_call" || it.Type == "reasoning" || it.Type == "custom_tool_call" ||
			it.Type == "local_shell_call" || (it.Type == "message" && it.Role == "assistant")
		// One reply may hold several items (text, reasoning, calls): count
		// runs of them.
		if side && !assistantRun {
			req.Index++
		}
		assistantRun = side
		switch {
		case it.Type == "message" && (it.Role == "user" || it.Role == "developer"):
			t := textOf(it.Content)
			users.WriteString(t)
			users.WriteString("\n")
			req.LastUser = t
		case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
			t := textOf(it.Output)
			users.WriteString(t)
			users.WriteString("\n")
			req.LastUser = t
		}
	}
	req.UserText = users.String()
	if m := cwdCodex.FindStringSubmatch(req.UserText + "\n" + q.Instructions); m != nil {
		req.Cwd = m[1]
	}
	if len(q.Tools) == 0 {
		req.Kind = "helper"
	}
	var t Turn
	if req.Kind == "helper" {
		t = Turn{Text: "OK"}
	} else {
		var ok bool
		if t, ok = s.scripted(r, &req); !ok {
			return
		}
	}
	if !s.answerable(w, &req, t, "openai") {
		return
	}
	id := s.nextID()
	respID := fmt.Sprintf("resp_scripted_%d", id)
	var items []map[string]any
	if t.Text != "" {
		items = append(items, map[string]any{"type": "message", "id": fmt.Sprintf("msg_%d", id), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": t.Text, "annotations": []any{}}}})
	}
	for i, tool := range t.Tools {
		items = append(items, map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%d_%d", id, i), "status": "completed",
			"call_id": fmt.Sprintf("call_%d_%d", id, i), "name": tool.Name, "arguments": inputJSON(tool.Input)})
	}
	usage := map[string]any{
		"input_tokens": t.Usage.Input + t.Usage.CacheRead, "input_tokens_details": map[string]any{"cached_tokens": t.Usage.CacheRead},
		"output_tokens": t.Usage.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": t.Usage.Input + t.Usage.CacheRead + t.Usage.Output,
	}
	response := func(status string, output []map[string]any, u any) map[string]any {
		if output == nil {
			output = []map[string]any{}
		}
		return map[string]any{"id": respID, "object": "response", "status": status, "model": q.Model, "output": output, "usage": u}
	}
	if !q.Stream {
		writeJSON(w, response("completed", items, usage))
		return
	}
	e := newSSE(w)
	e.send("response.created", map[string]any{"type": "response.created", "response": response("in_progress", nil, nil)})
	for i, it := range items {
		added := map[string]any{}
		for k, v := range it {
			added[k] = v
		}
		if it["type"] == "message" {
			added["content"] = []any{}
			added["status"] = "in_progress"
		}
		e.send("response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": i, "item": added})
		if it["type"] == "message" {
			e.send("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": it["id"],
				"output_index": i, "content_index": 0, "delta": t.Text})
		}
		e.send("response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": i, "item": it})
	}
	e.send("response.completed", map[string]any{"type": "response.completed", "response": response("completed", items, usage)})
}
