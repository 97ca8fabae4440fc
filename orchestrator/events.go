package orchestrator

import (
	"bytes"
	"strings"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/config"
)

// eventParser splits a headless profile's output (claude stream-json,
// codex exec --json, opencode run --format json) into lines for the matching signal parser and
// collects the signals and token usage they report. Terminal profiles
// produce none.
type eventParser struct {
	parse func([]byte) ([]signal.Event, error)
	buf   []byte
	usage signal.TokenUsage
	meter usageMeter
	fails []string // the CLI's own reasons for failing, not yet taken
	// failure is the CLI's own report of why its run failed (the last
	// Failed event's text), to name the cause when the process exits.
	failure string
	// held are signals read before the run's usage is final: they are
	// delivered at the turn's end (result, turn.completed) or the end of
	// the output, so a completion finds its whole cost booked. Progress
	// goes at once.
	held []signal.Signal
}

// failures returns the failure reasons reported since the last call.
func (p *eventParser) failures() []string {
	f := p.fails
	p.fails = nil
	return f
}

// usageDelta is the usage reported since the last call: the CLIs report
// running totals per process.
func (p *eventParser) usageDelta() Usage {
	return p.meter.delta(fromTokens(p.usage))
}

func newEventParser(format string) *eventParser {
	p := &eventParser{}
	switch format {
	case config.FormatClaudeJSON:
		p.parse = (&signal.ClaudeParser{}).Parse
	case config.FormatCodexJSON:
		p.parse = (&signal.CodexParser{}).Parse
	case config.FormatOpenCode:
		p.parse = (&signal.OpenCodeParser{}).Parse
	}
	return p
}

func (p *eventParser) feed(b []byte) []signal.Signal {
	if p.parse == nil {
		return nil
	}
	p.buf = append(p.buf, b...)
	var out []signal.Signal
	for {
		i := bytes.IndexByte(p.buf, '\n')
		if i < 0 {
			return out
		}
		out = append(out, p.line(p.buf[:i])...)
		p.buf = p.buf[i+1:]
	}
}

func (p *eventParser) flush() []signal.Signal {
	if p.parse == nil {
		return nil
	}
	var out []signal.Signal
	if len(p.buf) > 0 {
		out = p.line(p.buf)
		p.buf = nil
	}
	out = append(out, p.held...)
	p.held = nil
	return out
}

func (p *eventParser) line(l []byte) []signal.Signal {
	evs, err := p.parse(bytes.TrimSpace(l))
	if err != nil {
		return nil // stray non-JSON output
	}
	var out []signal.Signal
	for _, ev := range evs {
		if ev.Kind == signal.Usage || ev.Kind == signal.Completed || ev.Kind == signal.Failed {
			p.usage = ev.Usage
		}
		if ev.Kind == signal.Failed && strings.TrimSpace(ev.Text) != "" {
			p.fails = append(p.fails, ev.Text)
			p.failure = strings.TrimSpace(ev.Text)
		}
		for _, s := range ev.Signals {
			if s.Type == signal.Progress {
				out = append(out, s)
			} else {
				p.held = append(p.held, s)
			}
		}
		if ev.Kind == signal.Completed || ev.Kind == signal.Failed {
			out = append(out, p.held...)
			p.held = nil
		}
	}
	return out
}
