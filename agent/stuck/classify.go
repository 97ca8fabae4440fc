// Package stuck tells from an interactive agent's screen that it cannot go
// on without a person: a login prompt, a first-run dialog waiting for an
// answer, model API errors that keep coming back, or a model endpoint
// that does not answer. The patterns are what Claude Code 2.1.330 and
// Codex 0.169.0 actually print (testdata holds recorded screens).
//
// Classify judges one screen; a Watcher adds time, so that one transient
// error that recovers raises nothing.
package stuck

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
)

// Cause is why an agent waits for a human.
type Cause string

// Causes.
const (
	None        Cause = ""
	Login       Cause = "login"       // not logged in / no credentials
	Dialog      Cause = "dialog"      // a trust or permission dialog waits for an answer
	APIError    Cause = "api-error"   // the model API answers with errors
	Unreachable Cause = "unreachable" // the model endpoint does not answer at all
)

// Finding is what one screen shows.
type Finding struct {
	Cause  Cause
	Detail string // the CLI's own words (one line)
	Status int    // HTTP status when the CLI shows one
	// Retrying: the CLI is still retrying (spinner line); otherwise the
	// turn has ended on the error or a dialog waits.
	Retrying          bool
	Attempt, Attempts int // "attempt 3/10" while retrying, when shown
}

// String is the finding for people: what is wrong, in the CLI's words.
func (f Finding) String() string {
	switch f.Cause {
	case Login:
		return "not logged in: " + f.Detail
	case Dialog:
		return "waiting on a dialog: " + f.Detail
	case APIError:
		s := "model API error"
		if f.Status != 0 {
			s += " " + strconv.Itoa(f.Status)
		}
		return s + " keeps failing: " + f.Detail
	case Unreachable:
		return "model endpoint unreachable: " + f.Detail
	}
	return ""
}

var (
	rule = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^─{10,}$`) })
	// Claude Code's spinner line while it retries a failed request, in
	// the forms 2.1.330 draws (the case of "retrying" varies):
	// "✻ 500 scripted error 500 · retrying in 3s · attempt 3/10",
	// "✻ API error · retrying… · attempt 1/10",
	// "✻ Unable to connect to API (ConnectionRefused) · Retrying in 40s · attempt 7/10",
	// "✻ … · retrying, waiting up to 30s · attempt 2/10",
	// "✻ … · retrying once, waiting up to 30s",
	// "✻ … · next try in 40s · attempt 7 · esc to interrupt".
	claudeRetry = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\S\s+(.+?) · (?:retrying|next try)\b[^·]*(?: · attempt (\d+)(?:(?:/| of )(\d+))?)?(?: · [^·]*)?\s*$`)
	})
	// A turn that ended on an error: "● API Error: Request rejected (429) · …"
	// or, before any reply, "⎿  Not logged in · Please run /login".
	claudeFinal = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\s*[●⎿][\s\x{00a0}]+((?:API Error|Not logged in|Invalid API key|OAuth token|Credit balance|Request timed out|Unable to connect).*)$`)
	})
	// The input box's placeholder after such an error.
	claudeResend = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^❯[ \x{00a0}](?:Resend your message to try again|Once fixed, resend your message)\s*$`)
	})
	// Codex: "■ <message>" ends a failed turn; "Reconnecting... 1/5 (…)"
	// (or "Reconnecting… 1/5", "Reconnecting... waiting for network") with
	// "└ <message>" below while it retries; "stream disconnected -
	// retrying sampling request (1/5 in 200ms)…" as a warning.
	codexFinal     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^■ (.+)$`) })
	codexReconnect = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)^\S\s+(?:Reconnecting(?:\.\.\.|…)\s*(?:(\d+)/(\d+)|waiting for network)?|(.+?) - retrying sampling request \((\d+)/(\d+))`)
	})
	codexWhy = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*└ (.+)$`) })
	statusIn = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?:^|\(|API Error: |status )([45]\d\d)\b`) })
)

// Classify reads a screen (term.Emulator.Text: plain text, one row per
// line) and reports what blocks the agent, or a zero Finding. Only the
// places where the CLIs show these states count — the dialog area, the
// spinner line, the last message above the input box with the box's
// "resend" placeholder — so text the agent itself writes about such
// errors does not.
func Classify(screen string) Finding {
	lines := strings.Split(screen, "\n")
	for i := range lines {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	if f := dialog(lines); f.Cause != None {
		return f
	}
	if f := claude(lines); f.Cause != None {
		return f
	}
	return codex(lines)
}

// dialogFooters end the dialogs the CLIs draw in place of their input:
// Claude Code's "Enter to confirm · Esc to cancel", Codex's "enter
// continue · esc back".
// Compared without case: the two CLIs capitalise them differently.
var dialogFooters = []string{"enter to confirm · esc to", "enter continue · esc"}

// dialog finds a first-run or permission dialog at the bottom of the screen.
func dialog(lines []string) Finding {
	footer := -1
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-8 && footer < 0; i-- {
		for _, f := range dialogFooters {
			if strings.Contains(strings.ToLower(lines[i]), f) {
				footer = i
			}
		}
	}
	if footer < 0 {
		return Finding{}
	}
	top := max(0, footer-30)
	area := lines[top:footer]
	for i, l := range area {
		if strings.Contains(l, "Yes, I trust this folder") || strings.Contains(l, "Is this a project you created or one you trust") {
			path := ""
			for j, m := range area[:i] {
				if strings.Contains(m, "Accessing workspace:") {
					if next := lastNonEmpty(area[j+1:i], 100); len(next) > 0 {
						path = strings.TrimSpace(next[0])
					}
				}
			}
			d := "Claude Code asks whether to trust the folder"
			if path != "" {
				d += " " + path
			}
			return Finding{Cause: Dialog, Detail: d + " (its default answer, \"No, exit\", ends the agent)"}
		}
	}
	for i, l := range area {
		if strings.Contains(l, "Trust this folder?") {
			path := ""
			for j, m := range area[:i] {
				if strings.TrimSpace(m) == "Folder access" {
					if next := lastNonEmpty(area[j+1:i], 100); len(next) > 0 {
						path = strings.TrimSpace(next[0])
					}
				}
			}
			d := "Codex asks whether to trust the folder"
			if path != "" {
				d += " " + path
			}
			return Finding{Cause: Dialog, Detail: d}
		}
	}
	// Any other confirmation: name its question.
	q := ""
	for _, l := range area {
		if t := strings.TrimSpace(l); strings.HasSuffix(t, "?") {
			q = t
		}
	}
	if q == "" {
		q = "a confirmation"
	}
	return Finding{Cause: Dialog, Detail: "the agent asks: " + q}
}

// claude reads Claude Code's screen: the conversation's last lines above
// the bottom input box.
func claude(lines []string) Finding {
	// The input box: a rule, "❯ …", a rule, near the bottom.
	box := -1
	for i := len(lines) - 2; i >= 1 && i >= len(lines)-12; i-- {
		if strings.HasPrefix(lines[i], "❯") && rule().MatchString(strings.TrimSpace(lines[i-1])) {
			box = i
			break
		}
	}
	if box < 0 {
		return Finding{}
	}
	tail := lastNonEmpty(lines[:box-1], 3)
	for _, l := range tail {
		if m := claudeRetry().FindStringSubmatch(l); m != nil {
			f := classifyText(strings.TrimSpace(m[1]))
			f.Retrying = true
			f.Attempt, _ = strconv.Atoi(m[2])
			f.Attempts, _ = strconv.Atoi(m[3])
			return f
		}
	}
	if !claudeResend().MatchString(lines[box]) {
		return Finding{}
	}
	// The error is the last message: the line just above may be the right-
	// aligned status ("Not logged in · run /login"), so look at a few.
	for i := len(tail) - 1; i >= 0; i-- {
		if m := claudeFinal().FindStringSubmatch(tail[i]); m != nil {
			return classifyText(strings.TrimSpace(m[1]))
		}
	}
	return Finding{}
}

// codex reads Codex's screen: the lines above its composer ("› …").
func codex(lines []string) Finding {
	comp := -1
	for i := len(lines) - 1; i >= 1 && i >= len(lines)-10; i-- {
		if strings.HasPrefix(lines[i], "› ") {
			comp = i
			break
		}
	}
	if comp < 0 {
		return Finding{}
	}
	tail := lastNonEmpty(lines[:comp], 3)
	for i, l := range tail {
		if m := codexReconnect().FindStringSubmatch(l); m != nil {
			why := "reconnecting"
			if m[3] != "" {
				why = strings.TrimSpace(m[3])
			}
			if i+1 < len(tail) {
				if w := codexWhy().FindStringSubmatch(tail[i+1]); w != nil {
					why = strings.TrimSpace(w[1])
				}
			}
			f := classifyText(why)
			if strings.Contains(strings.ToLower(l), "waiting for network") {
				f.Cause = Unreachable
			}
			f.Retrying = true
			f.Attempt, _ = strconv.Atoi(m[1] + m[4])
			f.Attempts, _ = strconv.Atoi(m[2] + m[5])
			return f
		}
	}
	if n := len(tail); n > 0 {
		if m := codexFinal().FindStringSubmatch(tail[n-1]); m != nil {
			return classifyText(strings.TrimSpace(m[1]))
		}
	}
	return Finding{}
}

// classifyText sorts an error message the CLI printed into a cause.
func classifyText(msg string) Finding {
	f := Finding{Cause: APIError, Detail: msg}
	if m := statusIn().FindStringSubmatch(msg); m != nil {
		f.Status, _ = strconv.Atoi(m[1])
	}
	low := strings.ToLower(msg)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	switch {
	case has("not logged in", "/login", "invalid api key", "missing environment variable", "oauth token", "unauthorized", "authentication_error") || f.Status == 401:
		f.Cause = Login
	case has("connection refused", "connectionrefused", "econnrefused", "enotfound", "unable to connect", "error sending request",
		"connection failed", "etimedout", "econnreset", "network", "stream disconnected", "failed to connect", "timed out"):
		f.Cause = Unreachable
	}
	return f
}

func lastNonEmpty(lines []string, n int) []string {
	var out []string
	for i := len(lines) - 1; i >= 0 && len(out) < n; i-- {
		if strings.TrimSpace(lines[i]) != "" {
			out = append(out, lines[i])
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// GoString helps test failures.
func (f Finding) GoString() string {
	return fmt.Sprintf("{%s %q status=%d retrying=%v %d/%d}", f.Cause, f.Detail, f.Status, f.Retrying, f.Attempt, f.Attempts)
}
