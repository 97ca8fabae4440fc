package signal

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
)

// EventKind classifies a headless agent event.
type EventKind int

// Event kinds.
const (
	// Text is assistant text as it arrives.
	Text EventKind = iota + 1
	// Usage reports the run's usage so far (cumulative, not a delta).
	Usage
	// Completed ends a run that succeeded; Text is the final answer and
	// Usage the run's totals.
	Completed
	// Failed reports a run error (the process exit remains the final word).
	Failed
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

// Event is what a headless run reported, in a form common to all CLIs.
type Event struct {
	Kind      EventKind
	Text      string
	Usage     TokenUsage
	SessionID string // to resume the session (claude session_id, codex thread_id)
	// Signals are the <chorus> tags in a Completed or Failed event's final
	// text. A headless run has no echo, so every valid tag counts.
	Signals []Signal
}

// ErrNotJSON is returned for a line that is not a JSON object (stray
// output); callers skip it.
var ErrNotJSON = errors.New("not a JSON event")

// ClaudeParser reads `claude -p --output-format stream-json --verbose`
// output, one line per Parse call.
type ClaudeParser struct {
	session string
	perMsg  map[string]TokenUsage // message id -> latest usage
	order   []string
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

type claudeLine struct {
	Type      string       `json:"type"`
	Subtype   string       `json:"subtype"`
	SessionID string       `json:"session_id"`
	IsError   bool         `json:"is_error"`
	Result    *string      `json:"result"`
	CostUSD   float64      `json:"total_cost_usd"`
	Usage     *claudeUsage `json:"usage"`
	Errors    []string     `json:"errors"`
	Message   *struct {
		ID      string `json:"id"`
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Usage *claudeUsage `json:"usage"`
	} `json:"message"`
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
		var evs []Event
		for _, c := range l.Message.Content {
			if c.Type == "text" && c.Text != "" {
				evs = append(evs, Event{Kind: Text, Text: c.Text, SessionID: p.session})
			}
		}
		// Each content block arrives as its own line repeating the message's
		// usage: keep the latest per message, then sum.
		if u := l.Message.Usage; u != nil && l.Message.ID != "" {
			if p.perMsg == nil {
				p.perMsg = map[string]TokenUsage{}
			}
			if _, ok := p.perMsg[l.Message.ID]; !ok {
				p.order = append(p.order, l.Message.ID)
			}
			if p.perMsg[l.Message.ID] != u.tokens() {
				p.perMsg[l.Message.ID] = u.tokens()
				var sum TokenUsage
				for _, id := range p.order {
					sum = sum.add(p.perMsg[id])
				}
				evs = append(evs, Event{Kind: Usage, Usage: sum, SessionID: p.session})
			}
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
			if ev.Text == "" {
				ev.Text = strings.TrimSpace(l.Subtype + " " + strings.Join(l.Errors, "; "))
			}
		}
		ev.Signals = SignalsIn(ev.Text)
		return []Event{ev}, nil
	}
	return nil, nil
}

// CodexParser reads `codex exec --json` output, one line per Parse call.
type CodexParser struct {
	thread string
	last   string // latest agent message: the final answer at turn end
	total  TokenUsage
}

type codexLine struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"`
	Message  string `json:"message"`
	Item     *struct {
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
	case "item.completed":
		if l.Item == nil {
			return nil, nil
		}
		switch t := l.Item.Type + l.Item.ItemType; t {
		case "agent_message", "assistant_message":
			p.last = l.Item.Text
			return []Event{{Kind: Text, Text: l.Item.Text, SessionID: p.thread}}, nil
		}
	case "turn.completed":
		if u := l.Usage; u != nil {
			// OpenAI counts cached tokens inside input_tokens.
			p.total = p.total.add(TokenUsage{Input: u.Input - u.CacheRead, CacheRead: u.CacheRead, Output: u.Output})
		}
		return []Event{
			{Kind: Usage, Usage: p.total, SessionID: p.thread},
			{Kind: Completed, Text: p.last, Usage: p.total, SessionID: p.thread, Signals: SignalsIn(p.last)},
		}, nil
	case "turn.failed", "error":
		msg := l.Message
		if l.Error != nil && l.Error.Message != "" {
			msg = l.Error.Message
		}
		return []Event{{Kind: Failed, Text: msg, Usage: p.total, SessionID: p.thread, Signals: SignalsIn(p.last)}}, nil
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

var tagAnywhere = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`<chorus>([^<]{0,1000})</chorus>`) })

// SignalsIn returns the valid signals tagged anywhere in text, in order.
// For text with no echo to fear, such as a headless run's final answer.
func SignalsIn(text string) []Signal {
	var out []Signal
	for _, m := range tagAnywhere().FindAllStringSubmatch(text, -1) {
		if s, err := Parse(m[1]); err == nil {
			out = append(out, s)
		}
	}
	return out
}
