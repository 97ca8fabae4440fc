// Package signal turns what agents say into Signals: the `chorus signal`
// command's socket transport (Send, Listen, Serve), the one rule for
// <chorus>TYPE[: payload]</chorus> tags (InMessage) applied to the turns
// of every structured channel (ClaudeParser, ClaudeTranscriptParser,
// CodexParser, CodexRolloutParser, OpenCodeParser) and, stricter, to a
// custom agent's screen (Detector).
package signal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// Type is a signal's kind.
type Type string

// The signal protocol's types.
const (
	Complete   Type = "COMPLETE"    // task finished
	Blocked    Type = "BLOCKED"     // cannot proceed; payload says why
	Progress   Type = "PROGRESS"    // payload is a percentage 0–100
	NeedsHelp  Type = "NEEDS_HELP"  // payload is a question for the user
	Resolved   Type = "RESOLVED"    // merge conflict resolved (resolver agent)
	NeedsHuman Type = "NEEDS_HUMAN" // resolver gives up; payload says why
	Note       Type = "NOTE"        // a discovery, decision or blocker for the task's ledger
)

// Types lists every known type.
var Types = []Type{Complete, Blocked, Progress, NeedsHelp, Resolved, NeedsHuman, Note}

// Signal is one message from an agent.
type Signal struct {
	Type    Type   `json:"type"`
	Payload string `json:"payload,omitempty"`
}

// String renders the signal as the agent would write it: "BLOCKED: reason".
func (s Signal) String() string {
	if s.Payload == "" {
		return string(s.Type)
	}
	return string(s.Type) + ": " + s.Payload
}

// Percent returns a PROGRESS signal's percentage.
func (s Signal) Percent() (int, bool) {
	if s.Type != Progress {
		return 0, false
	}
	n, err := parsePercent(s.Payload)
	return n, err == nil
}

// ErrUnknownType is wrapped by Parse's error for a well-formed signal of a
// type this version does not know; callers log it and carry on.
var ErrUnknownType = errors.New("unknown signal type")

// ErrMalformed is wrapped by Parse's error for text that is not a signal.
var ErrMalformed = errors.New("malformed signal")

// maxPayload bounds a payload; longer ones are cut.
const maxPayload = 2000

// Parse reads "TYPE" or "TYPE: payload". The type is case-insensitive.
// Control characters in the payload are removed (payloads end up on
// screen) and whitespace runs are collapsed. A PROGRESS payload must be a
// whole number from 0 to 100 (a trailing % is accepted).
func Parse(text string) (Signal, error) {
	text = strings.TrimSpace(text)
	head, payload, hasColon := strings.Cut(text, ":")
	head = strings.TrimSpace(head)
	if head == "" || !isTypeName(head) {
		return Signal{}, fmt.Errorf("%w: %q", ErrMalformed, clip(text, 80))
	}
	t := Type(strings.ToUpper(head))
	payload = cleanPayload(payload)
	if !known(t) {
		return Signal{Type: t, Payload: payload}, fmt.Errorf("%w %q", ErrUnknownType, string(t))
	}
	if hasColon && payload == "" && t == Progress {
		return Signal{}, fmt.Errorf("%w: PROGRESS needs a percentage", ErrMalformed)
	}
	if t == Progress {
		n, err := parsePercent(payload)
		if err != nil {
			return Signal{}, err
		}
		payload = strconv.Itoa(n)
	}
	return Signal{Type: t, Payload: payload}, nil
}

func isTypeName(s string) bool {
	for i, r := range s {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r == '_' || i > 0 && r >= '0' && r <= '9') {
			return false
		}
	}
	return len(s) <= 32
}

func known(t Type) bool {
	for _, k := range Types {
		if k == t {
			return true
		}
	}
	return false
}

func parsePercent(s string) (int, error) {
	s = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(s), "%"))
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 || n > 100 {
		return 0, fmt.Errorf("%w: PROGRESS wants 0-100, got %q", ErrMalformed, clip(s, 20))
	}
	return n, nil
}

func cleanPayload(s string) string {
	var b strings.Builder
	space := false
	for _, r := range s {
		switch {
		case unicode.IsSpace(r):
			space = true
		case unicode.IsControl(r) || r == '\u2028' || r == '\u2029':
		default:
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
		}
	}
	return clip(b.String(), maxPayload)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	// Cut on a rune boundary.
	for n > 0 && (s[n]&0xC0) == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// NothingToChange starts the payload of a COMPLETE for a task that needs
// no change: `COMPLETE: nothing to change: why`. Chorus closes such a task
// without a merge, when the branch indeed holds no work.
const NothingToChange = "nothing to change"

// NoChange returns why a COMPLETE says its task needs no change, and
// whether it says so with a reason ("nothing to change: why").
func (s Signal) NoChange() (string, bool) {
	if s.Type != Complete || len(s.Payload) < len(NothingToChange) || !strings.EqualFold(s.Payload[:len(NothingToChange)], NothingToChange) {
		return "", false
	}
	why := strings.TrimLeft(s.Payload[len(NothingToChange):], " :-–—,.")
	if why == "" {
		return "", false
	}
	return why, true
}
