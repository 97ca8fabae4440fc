// Package modelserver is a scripted model server for tests: it speaks the
// Anthropic Messages API (streaming) and the OpenAI Responses API on
// 127.0.0.1, so the real agent CLIs (Claude Code, Codex) can run offline
// against scripted turns. Test code only.
//
// A Script is chosen for each conversation by the text of its user
// messages (Match: every needle must appear; the script matching the most
// needles wins), and the turn within it by how many assistant replies the
// conversation already holds. The CLIs resend the whole conversation with
// every request, so a retried request gets the same turn again: a turn
// that answers with an HTTP error keeps failing until the CLI gives up.
//
// Requests the CLIs make besides the conversation (quota probes, token
// counts, session titles, prompt suggestions) are answered without
// consuming turns.
package modelserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// Usage is what a turn reports as its token usage.
type Usage struct {
	Input, Output, CacheRead, CacheWrite int64
}

// Tool is one tool call. Claude Code's tools include Bash {"command",
// "description"} and Write {"file_path", "content"}; Codex's shell tool is
// exec_command {"cmd"}.
type Tool struct {
	Name  string
	Input map[string]any
}

// Bash is a Claude Code Bash call.
func Bash(cmd string) Tool {
	return Tool{Name: "Bash", Input: map[string]any{"command": cmd, "description": "run a command"}}
}

// Write is a Claude Code Write call; path must be absolute.
func Write(path, content string) Tool {
	return Tool{Name: "Write", Input: map[string]any{"file_path": path, "content": content}}
}

// Exec is a Codex shell call.
func Exec(cmd string) Tool {
	return Tool{Name: "exec_command", Input: map[string]any{"cmd": cmd}}
}

// Turn is one scripted model reply.
type Turn struct {
	Text  string
	Tools []Tool
	// Stop is the stop reason; by default tool_use with tools, else end_turn.
	Stop  string
	Usage Usage
	// Status, when non-zero, answers with this HTTP status and an error
	// body instead of a reply.
	Status int
	// Message replaces the error body's message; Header adds response
	// headers (retry-after, anthropic-ratelimit-unified-reset…), as the
	// real APIs send with a 429.
	Message string
	Header  map[string]string
	// Gen, when set, computes the turn when the request arrives.
	Gen func(Request) Turn
	// Hold, when set, is waited on (or the client going away) before the
	// reply is sent: a model still "thinking".
	Hold <-chan struct{}
}

// Script is a sequence of turns for the conversations it matches.
type Script struct {
	Match []string
	Turns []Turn
	// After answers every request past the last turn (default: a short
	// end_turn text).
	After *Turn
}

// Request is what the server saw of one conversation request.
type Request struct {
	API      string // "anthropic" or "openai"
	Path     string
	Kind     string // "turn", or the side request it was recognised as
	Script   int    // index of the matching script, -1 for none
	Index    int    // turn index: assistant replies already in the conversation
	Cwd      string // working directory named in the system prompt or context
	LastUser string // text of the last user message (tool results included)
	UserText string // every user message's text
	Model    string
	Status   int // what was answered
}

// Server is a running model server.
type Server struct {
	URL string // http://127.0.0.1:PORT

	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	scripts []Script
	log     []Request
	seq     int
	notify  chan struct{}
}

// Start listens on a free port of 127.0.0.1.
func Start() (*Server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{ln: ln, URL: "http://" + ln.Addr().String(), notify: make(chan struct{})}
	s.srv = &http.Server{Handler: s}
	go s.srv.Serve(ln)
	return s, nil
}

// Close stops the server and ends open streams.
func (s *Server) Close() {
	s.srv.Close()
}

// Add registers a script and returns its index (Request.Script).
// Scripts may be added while CLIs run.
func (s *Server) Add(sc Script) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.scripts = append(s.scripts, sc)
	return len(s.scripts) - 1
}

// Requests returns what was served so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.log...)
}

// Changed is closed at the next request served; take it again after.
func (s *Server) Changed() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.notify
}

func (s *Server) record(r Request) {
	s.mu.Lock()
	s.log = append(s.log, r)
	close(s.notify)
	s.notify = make(chan struct{})
	s.mu.Unlock()
}

func (s *Server) nextID() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq
}

// pick finds the script and turn for a conversation.
func (s *Server) pick(userText string, index int) (int, Turn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	best, score := -1, 0
	for i, sc := range s.scripts {
		n := 0
		for _, m := range sc.Match {
			if !strings.Contains(userText, m) {
				n = -1
				break
			}
			n++
		}
		if n > score || (n == score && n >= 0 && best < 0 && len(sc.Match) == 0) {
			best, score = i, n
		}
	}
	if best < 0 {
		return -1, Turn{Text: "No script matches this conversation."}
	}
	sc := s.scripts[best]
	if index < len(sc.Turns) {
		return best, sc.Turns[index]
	}
	if sc.After != nil {
		return best, *sc.After
	}
	return best, Turn{Text: "Nothing more to do."}
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodHead || r.Method == http.MethodGet {
		// Connectivity checks.
		w.WriteHeader(http.StatusOK)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	switch {
	case strings.HasSuffix(r.URL.Path, "/messages/count_tokens"):
		s.record(Request{API: "anthropic", Path: r.URL.Path, Kind: "count_tokens", Script: -1, Status: 200})
		writeJSON(w, map[string]any{"input_tokens": 100})
	case strings.HasSuffix(r.URL.Path, "/messages"):
		s.anthropic(w, r, body)
	case strings.HasSuffix(r.URL.Path, "/responses"):
		s.openai(w, r, body)
	default:
		s.record(Request{Path: r.URL.Path, Kind: "unknown", Script: -1, Status: 404})
		http.NotFound(w, r)
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

// sse writes server-sent events, flushing each.
type sse struct {
	w http.ResponseWriter
	f http.Flusher
}

func newSSE(w http.ResponseWriter) *sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &sse{w: w, f: f}
}

func (e *sse) send(event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(e.w, "event: %s\ndata: %s\n\n", event, b)
	if e.f != nil {
		e.f.Flush()
	}
}

var (
	cwdClaude = regexp.MustCompile(`(?m)(?:Primary working directory|Working directory): (\S+)`)
	cwdCodex  = regexp.MustCompile(`<cwd>([^<]+)</cwd>`)
)

// textOf flattens Anthropic or OpenAI content: a string, or blocks with
// text (tool results' content included).
func textOf(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Content json.RawMessage `json:"content"`
		Output  json.RawMessage `json:"output"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		b.WriteString(bl.Text)
		b.WriteString(textOf(bl.Content))
		b.WriteString(textOf(bl.Output))
		b.WriteString("\n")
	}
	return b.String()
}

// errorTurn writes an HTTP error in the API's shape.
func errorTurn(w http.ResponseWriter, api string, status int) {
	errorReply(w, api, Turn{Status: status})
}

// errorReply writes turn t's HTTP error in the API's shape.
func errorReply(w http.ResponseWriter, api string, t Turn) {
	status := t.Status
	w.Header().Set("Content-Type", "application/json")
	for k, v := range t.Header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(status)
	msg := fmt.Sprintf("scripted error %d", status)
	if t.Message != "" {
		msg = t.Message
	}
	if api == "anthropic" {
		typ := "api_error"
		switch {
		case status == 529:
			typ = "overloaded_error"
		case status == 429:
			typ = "rate_limit_error"
		case status < 500:
			typ = "invalid_request_error"
		}
		json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": msg}})
		return
	}
	typ := "server_error"
	if status == 429 {
		typ = "rate_limit_exceeded"
	}
	json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"type": typ, "message": msg, "code": nil}})
}

func hold(r *http.Request, t Turn) bool {
	if t.Hold == nil {
		return true
	}
	select {
	case <-t.Hold:
		return true
	case <-r.Context().Done():
		return false
	}
}

func inputJSON(in map[string]any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(in)
	return strings.TrimSpace(b.String())
}

// scripted picks the conversation turn for a request, generated if the
// script says so, and waits while the turn is held. false: the client went
// away while it was held.
func (s *Server) scripted(r *http.Request, req *Request) (Turn, bool) {
	var t Turn
	req.Script, t = s.pick(req.UserText, req.Index)
	if t.Gen != nil {
		t = t.Gen(*req)
	}
	return t, hold(r, t)
}

// answerable records the request with its status; for a turn scripted as
// an HTTP error it writes that error in api's shape and returns false.
func (s *Server) answerable(w http.ResponseWriter, req *Request, t Turn, api string) bool {
	if t.Status != 0 {
		req.Status = t.Status
		s.record(*req)
		errorReply(w, api, t)
		return false
	}
	req.Status = 200
	s.record(*req)
	return true
}
