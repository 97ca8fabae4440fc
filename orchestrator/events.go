package orchestrator

import (
	"strings"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/config"
)

// eventParser splits a headless profile's output (claude stream-json,
// codex exec --json, opencode run --format json) into lines for the matching signal parser and
// collects the signals and token usage they report. Terminal profiles
// produce none.
type eventParser struct {
	stream *signal.Stream
	usage  signal.TokenUsage
	meter  usageMeter
	fails  []string // the CLI's own reasons for failing, not yet taken
	// failure is the CLI's own report of why its run failed (the last
	// Failed event's text), to name the cause when the process exits.
	failure string
	// held are signals read before the run's usage is final: they are
	// delivered at the turn's end (result, turn.completed) or the end of
	// the output, so a completion finds its whole cost booked. Progress
	// goes at once.
	held []signal.Signal
	// misses are turns that ended on a tag that did not count, not yet
	// taken (signal.Verdict.NearMiss).
	misses []signal.Verdict
}

// nearMisses returns the near misses read since the last call.
func (p *eventParser) nearMisses() []signal.Verdict {
	m := p.misses
	p.misses = nil
	return m
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
		p.stream = &signal.Stream{Parse: (&signal.ClaudeParser{}).Parse}
	case config.FormatCodexJSON:
		p.stream = &signal.Stream{Parse: (&signal.CodexParser{}).Parse}
	case config.FormatOpenCode:
		p.stream = &signal.Stream{Parse: (&signal.OpenCodeParser{}).Parse}
	}
	return p
}

func (p *eventParser) feed(b []byte) []signal.Signal {
	if p.stream == nil {
		return nil
	}
	return p.take(p.stream.Feed(b))
}

func (p *eventParser) flush() []signal.Signal {
	if p.stream == nil {
		return nil
	}
	out := append(p.take(p.stream.Flush()), p.held...)
	p.held = nil
	return out
}

func (p *eventParser) take(evs []signal.Event) []signal.Signal {
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
		if ev.Verdict.NearMiss {
			p.misses = append(p.misses, ev.Verdict)
		}
		if ev.Kind == signal.Completed || ev.Kind == signal.Failed || ev.Kind == signal.TurnEnd {
			out = append(out, p.held...)
			p.held = nil
		}
	}
	return out
}
