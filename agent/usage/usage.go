// Package usage recognises an agent CLI telling that the account hit its
// rate limit or its plan's usage limit, and when the limit resets if it
// says so: from headless JSON events (Claude Code's stream-json
// `api_retry` and `result` events, codex's and opencode's error events)
// and from screen or error text. The forms were recorded from Claude Code
// 2.1.330 against a model server answering 429; the plan-limit wordings
// are those the CLIs print for subscription accounts.
package usage

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Finding is a usage limit the agent reported.
type Finding struct {
	Text string // what the CLI said, one line
	// Reset is when the limit lifts, when the CLI said; zero otherwise.
	Reset time.Time
}

// limitText matches the wordings of a rate or usage limit.
var limitText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)rate[ _-]?limit|usage limit|hit your (usage )?limit|limit reached|too many requests|\(429\)|\b429\b|quota exceeded|exceeded your (current )?quota`)
})

// Line recognises a limit in one line of a headless CLI's output (a JSON
// event) or of text; now anchors relative reset times.
func Line(line string, now time.Time) (Finding, bool) {
	line = strings.TrimSpace(line)
	if line == "" {
		return Finding{}, false
	}
	if strings.HasPrefix(line, "{") {
		return event(line, now)
	}
	return Screen(line, now)
}

// event reads one JSON event.
func event(line string, now time.Time) (Finding, bool) {
	var ev struct {
		Type         string `json:"type"`
		Subtype      string `json:"subtype"`
		Error        any    `json:"error"`
		ErrorStatus  int    `json:"error_status"`
		RetryDelayMS int64  `json:"retry_delay_ms"`
		APIStatus    int    `json:"api_error_status"`
		APIType      string `json:"api_error_type"`
		Result       string `json:"result"`
		Message      any    `json:"message"`
	}
	if json.Unmarshal([]byte(line), &ev) != nil {
		return Screen(line, now)
	}
	errText := ""
	switch e := ev.Error.(type) {
	case string:
		errText = e
	case map[string]any:
		b, _ := json.Marshal(e)
		errText = string(b)
	}
	switch {
	case ev.Type == "system" && ev.Subtype == "api_retry" && (ev.ErrorStatus == 429 || errText == "rate_limit"):
		// Claude Code retries a 429 after the server's retry-after: that
		// is when the window lets requests through again.
		f := Finding{Text: "rate limited (429); the CLI retries"}
		if ev.RetryDelayMS > 0 {
			f.Reset = now.Add(time.Duration(ev.RetryDelayMS) * time.Millisecond)
		}
		return f, true
	case ev.APIStatus == 429 || ev.APIType == "rate_limit_error" || errText == "rate_limit":
		text := ev.Result
		if text == "" {
			text = "rate limited (429)"
		}
		f, _ := Text(text, now)
		f.Text = oneLine(text)
		return f, true
	case ev.Type == "error" || ev.Type == "turn.failed" || strings.Contains(ev.Type, "error"):
		// codex exec --json and opencode: the message says what happened.
		if errText == "" {
			b, _ := json.Marshal(ev.Message)
			errText = string(b)
		}
		return Text(errText, now)
	}
	return Finding{}, false
}

// screenText matches what the CLIs show for a limit, strictly enough that
// an agent's own work on a screen (code about rate limits, a log with
// "429" in it) does not count.
var screenText = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)API Error:?[^\n]{0,40}(\(429\)|\b429\b|rate.?limit)|usage limit reached|(hour|weekly|session|opus) limit reached|you've hit your (usage )?limit|you have hit your (usage )?limit|rate limit reached for|last status: 429|\b429\b[^\n]{0,160}retrying in|rate.?limit[^\n]{0,120}retrying in|limit reached\|\d{10}`)
})

// Screen recognises a limit on an interactive agent's screen (or a line
// of its output that is not an event), with its reset time when the
// screen gives one.
func Screen(text string, now time.Time) (Finding, bool) {
	// Every form screenText knows lies within one line and holds "429"
	// or "limit": the machine runs only on such lines, first to last (its
	// first match in the text is the first in them). Over a whole screen,
	// or a history of line numbers that contain 429, it cost 20 µs a line.
	var loc []int
	for at := 0; at < len(text) && loc == nil; {
		end := strings.IndexByte(text[at:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += at
		}
		if line := text[at:end]; mayShowLimit(line) {
			if m := screenText().FindStringIndex(line); m != nil {
				loc = []int{at + m[0], at + m[1]}
			}
		}
		at = end + 1
	}
	if loc == nil {
		return Finding{}, false
	}
	// The line that says it, and what follows (the reset time).
	start := strings.LastIndexByte(text[:loc[0]], '\n') + 1
	end := len(text)
	if i := strings.IndexByte(text[loc[1]:], '\n'); i >= 0 {
		end = loc[1] + i
		if j := strings.IndexByte(text[end+1:], '\n'); j >= 0 {
			end = end + 1 + j // and the next line
		}
	}
	said := text[start:end]
	return Finding{Text: oneLine(said), Reset: resetIn(said, now)}, true
}

// mayShowLimit is a quick test screenText cannot match without: each of
// its forms has "429" or "limit" (any case; no other letter folds to
// those of "limit"). An agent's screen is read on every change, and the
// case-folding machine over a whole screen cost more than the emulator.
func mayShowLimit(text string) bool {
	if strings.Contains(text, "429") {
		return true
	}
	for i := 0; ; {
		j := strings.IndexAny(text[i:], "lL")
		if j < 0 || i+j+5 > len(text) {
			return false
		}
		i += j
		if strings.EqualFold(text[i:i+5], "limit") {
			return true
		}
		i++
	}
}

// Text recognises a limit in text known to be an error (a CLI's failure
// report, an API error message), with its reset time when it gives one.
func Text(text string, now time.Time) (Finding, bool) {
	if !limitText().MatchString(text) {
		return Finding{}, false
	}
	return Finding{Text: oneLine(text), Reset: resetIn(text, now)}, true
}

var (
	// "Claude AI usage limit reached|1764300000"
	epochRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`limit reached\|(\d{10})`) })
	// "try again in 20 minutes", "retry after 30s", "resets in 2h"
	inRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:try again|retrying|retry|resets?|reset)\s+(?:in|after)\s+(\d+)\s*(s|sec|secs|seconds?|m|min|mins|minutes?|h|hr|hrs|hours?)\b`)
	})
	// "resets at 3am", "resets 3:45 PM", "try again at 15:04", "reset at 03:00:00"
	atRe = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)(?:resets?|try again|available again)(?:\s+at)?\s+(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s*(am|pm)?`)
	})
)

// resetIn finds the reset time in text, or zero.
func resetIn(text string, now time.Time) time.Time {
	if m := epochRe().FindStringSubmatch(text); m != nil {
		if s, err := strconv.ParseInt(m[1], 10, 64); err == nil {
			return time.Unix(s, 0)
		}
	}
	if m := inRe().FindStringSubmatch(text); m != nil {
		n, _ := strconv.Atoi(m[1])
		unit := time.Minute
		switch strings.ToLower(m[2])[0] {
		case 's':
			unit = time.Second
		case 'h':
			unit = time.Hour
		}
		return now.Add(time.Duration(n) * unit)
	}
	if m := atRe().FindStringSubmatch(text); m != nil {
		h, _ := strconv.Atoi(m[1])
		mi, _ := strconv.Atoi(m[2])
		se, _ := strconv.Atoi(m[3])
		switch strings.ToLower(m[4]) {
		case "pm":
			if h < 12 {
				h += 12
			}
		case "am":
			if h == 12 {
				h = 0
			}
		case "":
			if m[2] == "" {
				return time.Time{} // a bare number is no time of day
			}
		}
		if h > 23 || mi > 59 || se > 59 {
			return time.Time{}
		}
		t := time.Date(now.Year(), now.Month(), now.Day(), h, mi, se, 0, now.Location())
		if !t.After(now) {
			t = t.Add(24 * time.Hour) // a time of day already past is tomorrow's
		}
		return t
	}
	return time.Time{}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
