package signal

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// EventKind classifies an event of an agent's structured output.
type EventKind int

// Event kinds.
const (
	// Text is text the assistant itself wrote (never tool output or user
	// messages). It carries no signals: a tag counts only in a turn's
	// final message, which TurnEnd judges.
	Text EventKind = iota + 1
	// Usage reports the run's usage so far (cumulative, not a delta).
	Usage
	// Completed ends a run that succeeded; Text is the final answer and
	// Usage the run's totals.
	Completed
	// Failed reports a run error (the process exit remains the final word).
	Failed
	// TurnEnd says a turn has ended: Text is its final message (the
	// assistant's text with no tool call after it), Verdict the rule's
	// judgement of it (InMessage) and Signals the valid tags that count.
	// It follows the events that book the turn's usage, so a completion
	// finds its cost booked.
	TurnEnd
)

func (k EventKind) String() string {
	switch k {
	case Text:
		return "text"
	case Usage:
		return "usage"
	case Completed:
		return "completed"
	case Failed:
		return "failed"
	case TurnEnd:
		return "turn end"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// TokenUsage counts tokens and cost.
type TokenUsage struct {
	Input      int64   `json:"input"` // tokens read, excluding cache reads and writes where the CLI reports them apart
	Output     int64   `json:"output"`
	CacheRead  int64   `json:"cache_read"`
	CacheWrite int64   `json:"cache_write"`
	CostUSD    float64 `json:"cost_usd"` // 0 when the CLI does not report it
}

func (u TokenUsage) add(o TokenUsage) TokenUsage {
	return TokenUsage{u.Input + o.Input, u.Output + o.Output, u.CacheRead + o.CacheRead, u.CacheWrite + o.CacheWrite, u.CostUSD + o.CostUSD}
}

// Event is what an agent's structured output reported (headless events,
// session transcripts), in a form common to all CLIs.
type Event struct {
	Kind      EventKind
	Text      string
	Usage     TokenUsage
	SessionID string // to resume the session (claude session_id, codex thread_id, opencode sessionID)
	// Signals are the tags that count (InMessage) in a TurnEnd event's
	// final message; no other event carries any.
	Signals []Signal
	// Verdict is the rule's judgement of a TurnEnd's final message; its
	// NearMiss asks for a confirmation.
	Verdict Verdict
}

// ErrNotJSON is returned for a line that is not a JSON object (stray
// output); callers skip it.
var ErrNotJSON = errors.New("not a JSON event")

// textEvent is assistant text.
func textEvent(text, session string) Event {
	return Event{Kind: Text, Text: text, SessionID: session}
}

// turn follows a turn of a structured channel to its final message: the
// text of the assistant's last message, when no tool call came after it.
type turn struct {
	msg   string   // the message the text belongs to
	final []string // its text blocks
}

// text adds a text block of message msg; a new message replaces the last.
func (t *turn) text(msg, text string) {
	if msg != t.msg || msg == "" {
		t.msg, t.final = msg, nil
	}
	t.final = append(t.final, text)
}

// tool notes a tool call (or its output): the text before it was not the
// turn's last word.
func (t *turn) tool() { t.final = nil }

// reset forgets the turn (a new one starts, or it was cut short).
func (t *turn) reset() { *t = turn{} }

// end judges the final message of a turn that has ended and starts the
// next.
func (t *turn) end(session string) Event {
	text := strings.Join(t.final, "\n\n")
	t.reset()
	v := InMessage(text)
	return Event{Kind: TurnEnd, Text: text, SessionID: session, Signals: v.Signals(), Verdict: v}
}

// usageBook sums per-message usage where a CLI repeats a message's usage
// on every line of it (one line per content block, growing figures):
// the latest figure of each message counts once.
type usageBook struct {
	perMsg map[string]TokenUsage
	total  TokenUsage
}

// record notes a message's latest usage and reports whether the total
// changed.
func (b *usageBook) record(id string, u TokenUsage) bool {
	if b.perMsg == nil {
		b.perMsg = map[string]TokenUsage{}
	}
	prev, ok := b.perMsg[id]
	if ok && prev == u {
		return false
	}
	b.perMsg[id] = u
	b.total = b.total.add(u).sub(prev)
	return true
}

func (u TokenUsage) sub(o TokenUsage) TokenUsage {
	return TokenUsage{u.Input - o.Input, u.Output - o.Output, u.CacheRead - o.CacheRead, u.CacheWrite - o.CacheWrite, u.CostUSD - o.CostUSD}
}

type claudeUsage struct {
	Input      int64 `json:"input_tokens"`
	Output     int64 `json:"output_tokens"`
	CacheRead  int64 `json:"cache_read_input_tokens"`
	CacheWrite int64 `json:"cache_creation_input_tokens"`
}

func (u *claudeUsage) tokens() TokenUsage {
	if u == nil {
		return TokenUsage{}
	}
	return TokenUsage{Input: u.Input, Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}

// claudeMessage is an assistant message as both claude stream-json and
// Claude Code's transcripts carry it.
type claudeMessage struct {
	ID      string       `json:"id"`
	Model   string       `json:"model"`
	Role    string       `json:"role"`
	Content blocks       `json:"content"`
	Usage   *claudeUsage `json:"usage"`
}

// blocks is message content: a list of typed blocks, or (user messages)
// a plain string, which holds no assistant text.
type blocks []struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func (b *blocks) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] == '"' {
		*b = nil
		return nil
	}
	type plain blocks
	return json.Unmarshal(data, (*plain)(b))
}

// texts returns the message's text blocks as events and follows the turn:
// text is its final message until a tool call comes after it. Thinking is
// neither.
func (m *claudeMessage) texts(session string, t *turn) []Event {
	var evs []Event
	for _, c := range m.Content {
		switch {
		case c.Type == "text":
			if strings.TrimSpace(c.Text) != "" {
				evs = append(evs, textEvent(c.Text, session))
				t.text(m.ID, c.Text)
			}
		case strings.HasSuffix(c.Type, "tool_use"): // tool_use, server_tool_use
			t.tool()
		}
	}
	return evs
}

// ClaudeParser reads `claude -p --output-format stream-json --verbose`
// output, one line per Parse call. The run's result event ends the turn:
// its final message is the last assistant message's text, when no tool
// call followed it (tool results arrive as user messages and are never
// read for tags). A failed run's turn carries no signal.
type ClaudeParser struct {
	session string
	book    usageBook
	turn    turn
}

type claudeLine struct {
	Type      string         `json:"type"`
	Subtype   string         `json:"subtype"`
	SessionID string         `json:"session_id"`
	IsError   bool           `json:"is_error"`
	Result    *string        `json:"result"`
	CostUSD   float64        `json:"total_cost_usd"`
	Usage     *claudeUsage   `json:"usage"`
	Errors    []string       `json:"errors"`
	Message   *claudeMessage `json:"message"`
}

// Parse turns one line into events (often none).
func (p *ClaudeParser) Parse(line []byte) ([]Event, error) {
	var l claudeLine
	if err := decodeLine(line, &l); err != nil {
		return nil, err
	}
	if l.SessionID != "" {
		p.session = l.SessionID
	}
	switch l.Type {
	case "assistant":
		if l.Message == nil {
			return nil, nil
		}
		evs := l.Message.texts(p.session, &p.turn)
		if u := l.Message.Usage; u != nil && l.Message.ID != "" && p.book.record(l.Message.ID, u.tokens()) {
			evs = append(evs, Event{Kind: Usage, Usage: p.book.total, SessionID: p.session})
		}
		return evs, nil
	case "result":
		ev := Event{Kind: Completed, SessionID: p.session, Usage: l.Usage.tokens()}
		ev.Usage.CostUSD = l.CostUSD
		if l.Result != nil {
			ev.Text = *l.Result
		}
		if l.IsError || (l.Subtype != "" && l.Subtype != "success") {
			ev.Kind = Failed
			if strings.TrimSpace(ev.Text) == "" {
				ev.Text = strings.TrimSpace(l.Subtype + " " + strings.Join(l.Errors, "; "))
			}
			p.turn.reset()
			return []Event{ev}, nil
		}
		return []Event{ev, p.turn.end(p.session)}, nil
	}
	return nil, nil
}

// ClaudeTranscriptParser reads an interactive Claude Code session
// transcript (~/.claude/projects/<cwd>/<session>.jsonl), one line per
// Parse call: the assistant's text blocks and each message's usage, priced
// at list price where the line carries no cost. Tool results come back as
// user entries and are not read; nor are subagents' (sidechain) messages,
// which are not the agent talking to Chorus.
//
// Each content block is a line of its own, every line of a message
// carrying the message's stop_reason: a message that stopped with
// end_turn (or a stop sequence) ends its turn. Its TurnEnd is given once
// the message's lines are all read: at the next line of another message,
// or at Flush (the reader has reached the end of the file).
type ClaudeTranscriptParser struct {
	session string
	book    usageBook
	turn    turn
	ended   bool // the message in turn has ended its turn
}

type claudeTranscriptLine struct {
	Type        string  `json:"type"`
	SessionID   string  `json:"sessionId"`
	IsSidechain bool    `json:"isSidechain"`
	CostUSD     float64 `json:"costUSD"`
	Message     *struct {
		claudeMessage
		StopReason string `json:"stop_reason"`
	} `json:"message"`
}

// Flush ends a turn whose last message has been read whole.
func (p *ClaudeTranscriptParser) Flush() []Event {
	if !p.ended {
		return nil
	}
	p.ended = false
	return []Event{p.turn.end(p.session)}
}

// Parse turns one line into events (often none).
func (p *ClaudeTranscriptParser) Parse(line []byte) ([]Event, error) {
	var l claudeTranscriptLine
	if err := decodeLine(line, &l); err != nil {
		return nil, err
	}
	if l.SessionID != "" {
		p.session = l.SessionID
	}
	if l.Type != "assistant" || l.Message == nil {
		return nil, nil
	}
	var evs []Event
	if !l.IsSidechain {
		if p.ended && l.Message.ID != p.turn.msg {
			evs = p.Flush()
		}
		evs = append(evs, l.Message.texts(p.session, &p.turn)...)
		switch l.Message.StopReason {
		case "end_turn", "stop_sequence":
			p.ended = true
		case "tool_use":
			p.turn.tool()
		}
	}
	if u := l.Message.Usage; u != nil && l.Message.ID != "" {
		t := u.tokens()
		t.CostUSD = l.CostUSD
		if t.CostUSD == 0 {
			t.CostUSD = ListPriceUSD(l.Message.Model, t)
		}
		if p.book.record(l.Message.ID, t) {
			evs = append(evs, Event{Kind: Usage, Usage: p.book.total, SessionID: p.session})
		}
	}
	return evs, nil
}

// CodexParser reads `codex exec --json` output, one line per Parse call.
// turn.completed ends the turn: its final message is the last
// agent_message item, when no other item (a command, a file change, a
// tool call) came after it; command output is never read for tags.
type CodexParser struct {
	thread string
	last   string // latest agent message: the final answer at turn end
	total  TokenUsage
	turn   turn
}

type codexLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
		ID       string `json:"id"`
		Type     string `json:"type"`
		ItemType string `json:"item_type"` // older releases
		Text     string `json:"text"`
		Message  string `json:"message"`
	} `json:"item"`
	Usage *struct {
		Input     int64 `json:"input_tokens"`
		CacheRead int64 `json:"cached_input_tokens"`
		Output    int64 `json:"output_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// Parse turns one line into events (often none).
func (p *CodexParser) Parse(line []byte) ([]Event, error) {
	var l codexLine
	if err := decodeLine(line, &l); err != nil {
		return nil, err
	}
	switch l.Type {
	case "thread.started":
		p.thread = l.ThreadID
	case "turn.started":
		p.turn.reset()
	case "item.started", "item.completed":
		if l.Item == nil {
			return nil, nil
		}
		switch t := l.Item.Type + l.Item.ItemType; t {
		case "agent_message", "assistant_message":
			if l.Type == "item.completed" {
				p.last = l.Item.Text
				p.turn.text(l.Type+l.Item.ID, l.Item.Text)
				return []Event{textEvent(l.Item.Text, p.thread)}, nil
			}
		case "reasoning", "error":
		default:
			p.turn.tool() // a command, file change, tool call, plan update…
		}
	case "turn.completed":
		if u := l.Usage; u != nil {
			// OpenAI counts cached tokens inside input_tokens.
			p.total = p.total.add(TokenUsage{Input: u.Input - u.CacheRead, CacheRead: u.CacheRead, Output: u.Output})
		}
		return []Event{
			{Kind: Usage, Usage: p.total, SessionID: p.thread},
			{Kind: Completed, Text: p.last, Usage: p.total, SessionID: p.thread},
			p.turn.end(p.thread),
		}, nil
	case "turn.failed", "error":
		p.turn.reset()
		msg := l.Message
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		return []Event{{Kind: Failed, Text: msg, Usage: p.total, SessionID: p.thread}}, nil
	}
	return nil, nil
}

// CodexRolloutParser reads an interactive Codex session's rollout file
// ($CODEX_HOME/sessions/YYYY/MM/DD/rollout-*.jsonl), one line per Parse
// call: the assistant's messages (response_item entries of type message,
// role assistant, output_text content; not function calls or their
// output) and the session's running token count. The task_complete event
// ends a turn: its final message is the last assistant message, when no
// function call or other item came after it.
type CodexRolloutParser struct {
	session string
	total   TokenUsage
	turn    turn
}

type codexRolloutLine struct {
	Type    string `json:"type"`
	Payload *struct {
		Type    string `json:"type"`
		ID      string `json:"id"`
		Role    string `json:"role"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Info *struct {
			Total *struct {
				Input     int64 `json:"input_tokens"`
				CacheRead int64 `json:"cached_input_tokens"`
				Output    int64 `json:"output_tokens"`
			} `json:"total_token_usage"`
		} `json:"info"`
	} `json:"payload"`
}

// Parse turns one line into events (often none).
func (p *CodexRolloutParser) Parse(line []byte) ([]Event, error) {
	var l codexRolloutLine
	if err := decodeLine(line, &l); err != nil {
		return nil, err
	}
	pl := l.Payload
	if pl == nil {
		return nil, nil
	}
	switch {
	case l.Type == "session_meta":
		p.session = pl.ID
	case l.Type == "response_item" && pl.Type == "message" && pl.Role == "assistant":
		var evs []Event
		for _, c := range pl.Content {
			if c.Type == "output_text" && strings.TrimSpace(c.Text) != "" {
				evs = append(evs, textEvent(c.Text, p.session))
				p.turn.text("m"+pl.ID, c.Text)
			}
		}
		return evs, nil
	case l.Type == "response_item" && pl.Type == "message":
		p.turn.reset() // the user's (or developer's) words start a turn
	case l.Type == "response_item" && pl.Type != "reasoning":
		p.turn.tool() // function_call, its output, custom and shell tool calls…
	case l.Type == "event_msg" && (pl.Type == "task_started" || pl.Type == "turn_aborted"):
		p.turn.reset()
	case l.Type == "event_msg" && pl.Type == "task_complete":
		return []Event{p.turn.end(p.session)}, nil
	case l.Type == "event_msg" && pl.Type == "token_count" && pl.Info != nil && pl.Info.Total != nil:
		u := pl.Info.Total
		// Cached tokens are counted inside input_tokens.
		t := TokenUsage{Input: u.Input - u.CacheRead, CacheRead: u.CacheRead, Output: u.Output}
		if t != p.total {
			p.total = t
			return []Event{{Kind: Usage, Usage: t, SessionID: p.session}}, nil
		}
	}
	return nil, nil
}

// OpenCodeParser reads `opencode run --format json` output, one line per
// Parse call. Its events are JSON objects whose text parts are JSON
// strings, so tags are read from the decoded text of the assistant's text
// parts (never from tool parts, whose output may print anything). Usage
// and cost come from step_finish events, one per model call; a
// step_finish whose reason is not "tool-calls" ends the turn, its final
// message the last text part when no tool part came after it.
type OpenCodeParser struct {
	session string
	total   TokenUsage
	seen    map[string]bool // text part ids already read
	turn    turn
}

type openCodeLine struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		ID        string `json:"id"`
		MessageID string `json:"messageID"`
		Type      string `json:"type"`
		Text      string `json:"text"`
		Reason    string `json:"reason"`
		Synthetic bool   `json:"synthetic"`
		Ignored   bool   `json:"ignored"`
		Time      *struct {
			End int64 `json:"end"`
		} `json:"time"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
		Cost float64 `json:"cost"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data *struct {
			Message string `json:"message"`
		} `json:"data"`
	} `json:"error"`
}

// Parse turns one line into events (often none).
func (p *OpenCodeParser) Parse(line []byte) ([]Event, error) {
	var l openCodeLine
	if err := decodeLine(line, &l); err != nil {
		return nil, err
	}
	if l.SessionID != "" {
		p.session = l.SessionID
	}
	pt := l.Part
	switch l.Type {
	case "text":
		if pt == nil || pt.Type != "text" || pt.Synthetic || pt.Ignored || pt.Time == nil || pt.Time.End == 0 {
			return nil, nil // not the assistant's, or not finished
		}
		if p.seen[pt.ID] {
			return nil, nil
		}
		if p.seen == nil {
			p.seen = map[string]bool{}
		}
		p.seen[pt.ID] = true
		if strings.TrimSpace(pt.Text) == "" {
			return nil, nil
		}
		p.turn.text(pt.MessageID, pt.Text)
		return []Event{textEvent(pt.Text, p.session)}, nil
	case "tool_use":
		p.turn.tool()
	case "step_finish":
		if pt == nil {
			return nil, nil
		}
		var evs []Event
		if tk := pt.Tokens; tk != nil {
			p.total = p.total.add(TokenUsage{Input: tk.Input, Output: tk.Output + tk.Reasoning,
				CacheRead: tk.Cache.Read, CacheWrite: tk.Cache.Write, CostUSD: pt.Cost})
			evs = append(evs, Event{Kind: Usage, Usage: p.total, SessionID: p.session})
		}
		if pt.Reason != "tool-calls" {
			evs = append(evs, p.turn.end(p.session))
		}
		return evs, nil
	case "error":
		p.turn.reset()
		msg := "opencode reported an error"
		if e := l.Error; e != nil {
			msg = e.Name
			if e.Data != nil && e.Data.Message != "" {
				msg = e.Data.Message
			}
		}
		return []Event{{Kind: Failed, Text: msg, Usage: p.total, SessionID: p.session}}, nil
	}
	return nil, nil
}

func decodeLine(line []byte, v any) error {
	s := strings.TrimSpace(string(line))
	if !strings.HasPrefix(s, "{") {
		return ErrNotJSON
	}
	if err := json.Unmarshal([]byte(s), v); err != nil {
		return fmt.Errorf("%w: %v", ErrNotJSON, err)
	}
	return nil
}

// Stream feeds a CLI's output to a parser line by line, in whatever
// chunks it arrives (a line, a tag, may be cut anywhere). Lines that are
// not JSON (stray output) are skipped.
type Stream struct {
	Parse func([]byte) ([]Event, error)
	buf   []byte
}

// Feed returns the events of the lines b completes.
func (s *Stream) Feed(b []byte) []Event {
	s.buf = append(s.buf, b...)
	var out []Event
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			return out
		}
		out = append(out, s.line(s.buf[:i])...)
		s.buf = s.buf[i+1:]
	}
}

// Flush parses a last line the output ended without a newline.
func (s *Stream) Flush() []Event {
	var out []Event
	if len(bytes.TrimSpace(s.buf)) > 0 {
		out = s.line(s.buf)
	}
	s.buf = nil
	return out
}

func (s *Stream) line(l []byte) []Event {
	evs, err := s.Parse(bytes.TrimSpace(l))
	if err != nil {
		return nil
	}
	return evs
}
