// Package hooks runs the user's executables in .chorus/hooks/ when an
// engine or merge event happens: the event as JSON on stdin, an optional
// JSON answer on stdout. A hook that is missing costs one stat; one that
// fails, times out or answers garbage is reported and counts as continue.
package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode"

	"github.com/chorus-dev/chorus/proc"
)

// Event names a hook and the moment it runs.
type Event string

// The events, named as the files in .chorus/hooks/.
const (
	PreAgentStart    Event = "pre-agent-start"
	PostAgentStart   Event = "post-agent-start"
	PreTaskClaim     Event = "pre-task-claim"
	PostTaskClaim    Event = "post-task-claim"
	PreIteration     Event = "pre-iteration"
	PostIteration    Event = "post-iteration"
	PreTaskComplete  Event = "pre-task-complete"
	PostTaskComplete Event = "post-task-complete"
	PreMerge         Event = "pre-merge"
	PostMerge        Event = "post-merge"
	OnAgentError     Event = "on-agent-error"
	OnAgentTimeout   Event = "on-agent-timeout"
	OnConflict       Event = "on-conflict"
)

// Events lists every event.
var Events = []Event{PreAgentStart, PostAgentStart, PreTaskClaim, PostTaskClaim, PreIteration, PostIteration,
	PreTaskComplete, PostTaskComplete, PreMerge, PostMerge, OnAgentError, OnAgentTimeout, OnConflict}

// Result is a hook's verdict.
type Result string

// Results. Only pre-events act on block; only post-iteration on complete.
const (
	Continue Result = "continue"
	Block    Result = "block"
	Complete Result = "complete"
)

// Agent, Task, Iteration and Output are the parts of Input.
type Agent struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Worktree string `json:"worktree,omitempty"`
}

type Task struct {
	ID     string `json:"id"`
	Title  string `json:"title"`
	Status string `json:"status"`
}

type Iteration struct {
	Number        int `json:"number"`
	MaxIterations int `json:"maxIterations"`
}

type Output struct {
	Stdout   string `json:"stdout"`
	ExitCode int    `json:"exitCode"`
}

// Merge describes the queue item for the merge events.
type Merge struct {
	Branch        string   `json:"branch"`
	Target        string   `json:"target"`
	Commit        string   `json:"commit,omitempty"` // post-merge: what landed
	ConflictFiles []string `json:"conflictFiles,omitempty"`
}

// Input is what a hook reads on stdin.
type Input struct {
	Event     Event      `json:"event"`
	Agent     *Agent     `json:"agent,omitempty"`
	Task      *Task      `json:"task,omitempty"`
	Iteration *Iteration `json:"iteration,omitempty"`
	Output    *Output    `json:"output,omitempty"`
	Merge     *Merge     `json:"merge,omitempty"`
	Reason    string     `json:"reason,omitempty"` // why an error, timeout or conflict happened
}

// Answer is what came of running a hook.
type Answer struct {
	Result  Result
	Message string // the hook's message, sanitised to one line
	Ran     bool   // an executable hook exists for the event
	// Problem says what went wrong (failed, timed out, not executable,
	// garbage on stdout); Result is then Continue.
	Problem string
}

// Runner finds and runs hooks in Dir.
type Runner struct {
	Dir     string        // .chorus/hooks
	WorkDir string        // where hooks run (the repository root)
	Timeout time.Duration // per hook; 0 means 30 s
	Env     []string      // added to the environment
}

// MaxOutput caps what a hook's stdout and stderr may hold in memory.
const MaxOutput = 64 << 10

// maxMessage caps a hook's message as shown in events.
const maxMessage = 500

// StdoutLines is how much of an agent's output goes into Output.Stdout.
const StdoutLines = 100

// Run runs the hook for in.Event, if there is one. It never fails: a
// problem is in Answer.Problem and the result is then Continue.
func (r *Runner) Run(ctx context.Context, in Input) Answer {
	if r == nil || r.Dir == "" {
		return Answer{Result: Continue}
	}
	path := filepath.Join(r.Dir, string(in.Event))
	st, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return Answer{Result: Continue}
		}
		return Answer{Result: Continue, Ran: true, Problem: err.Error()}
	}
	if st.IsDir() {
		return Answer{Result: Continue, Ran: true, Problem: path + " is a directory, not an executable"}
	}
	if st.Mode()&0o111 == 0 {
		return Answer{Result: Continue, Ran: true, Problem: path + " is not executable (chmod +x it to enable the hook, or remove it)"}
	}
	data, err := json.Marshal(in)
	if err != nil {
		return Answer{Result: Continue, Ran: true, Problem: "encoding the event: " + err.Error()}
	}
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	env := append([]string{"CHORUS_HOOK_EVENT=" + string(in.Event)}, r.Env...)
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{path}, Dir: r.WorkDir, Env: env, Stdin: bytes.NewReader(data),
		Timeout: timeout, Grace: time.Second, MaxOutput: MaxOutput})
	if err != nil {
		if res.TimedOut {
			return Answer{Result: Continue, Ran: true, Problem: fmt.Sprintf("timed out after %s and was killed (hooks.timeoutSeconds)", timeout)}
		}
		return Answer{Result: Continue, Ran: true, Problem: err.Error()}
	}
	if res.ExitCode != 0 {
		p := fmt.Sprintf("exited with code %d", res.ExitCode)
		if l := proc.FirstLine(res.Stderr); l != "" {
			p += ": " + clean(l)
		}
		return Answer{Result: Continue, Ran: true, Problem: p}
	}
	return parse(res.Stdout)
}

// parse reads a hook's stdout: nothing means continue; otherwise one JSON
// object with a known result.
func parse(out []byte) Answer {
	out = bytes.TrimSpace(out)
	if len(out) == 0 {
		return Answer{Result: Continue, Ran: true}
	}
	var a struct {
		Result  *string `json:"result"`
		Message any     `json:"message"`
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	if err := dec.Decode(&a); err != nil || dec.More() {
		return Answer{Result: Continue, Ran: true, Problem: fmt.Sprintf("printed something that is not one JSON object (%q); print nothing or {\"result\": \"continue\"|\"block\"|\"complete\", \"message\": \"…\"}", clip(string(out), 80))}
	}
	msg := ""
	switch m := a.Message.(type) {
	case nil:
	case string:
		msg = clean(m)
	default:
		return Answer{Result: Continue, Ran: true, Problem: "its message is not a string"}
	}
	res := Continue
	if a.Result != nil {
		res = Result(strings.ToLower(strings.TrimSpace(*a.Result)))
	}
	switch res {
	case Continue, Block, Complete:
	default:
		return Answer{Result: Continue, Ran: true, Message: msg, Problem: fmt.Sprintf("unknown result %q (want continue, block or complete)", clip(string(res), 40))}
	}
	return Answer{Result: res, Message: msg, Ran: true}
}

// clean makes text safe for one line of a terminal: control characters
// (escape sequences included) become spaces, and it is capped.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return ' '
		}
		return r
	}, s)
	return clip(strings.Join(strings.Fields(s), " "), maxMessage)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8Start(s[n]) {
		n--
	}
	return s[:n] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Tail returns the last n lines of text, for Output.Stdout.
func Tail(text string, n int) string {
	text = strings.TrimRight(text, "\n ")
	i := len(text)
	for k := 0; k < n; k++ {
		j := strings.LastIndexByte(text[:i], '\n')
		if j < 0 {
			return text
		}
		i = j
	}
	return text[i+1:]
}
