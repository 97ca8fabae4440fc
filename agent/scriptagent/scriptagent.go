// Package scriptagent is a scripted coding agent: a real child process that
// Chorus runs under a PTY like any agent CLI, doing what a small script
// says — print, wait, edit files, commit, signal, echo its prompt, read
// typed input, exit. It backs the built-in "script" agent profile used by
// the demo and by end-to-end tests, so the whole engine runs for real
// without a model.
//
// A script is a list of sections. Each starts with a line "@ cond cond…"
// and holds one operation per line. The first section whose conditions all
// hold runs; conditions are iteration=N, iteration>=N, task=ID,
// prompt~TEXT (the prompt contains TEXT) and * (always). Lines before any
// section header form a section that always matches.
//
// Operations (arguments may be Go-quoted strings):
//
//	print TEXT            write TEXT and a newline
//	sleep DURATION        e.g. 200ms
//	write PATH TEXT       create or replace a file (relative to the worktree;
//	                      $VAR in PATH is expanded, e.g. f-$CHORUS_TASK_ID)
//	append PATH TEXT      append TEXT and a newline to a file (PATH as write)
//	run SHELL             run a shell command, output shown
//	commit MESSAGE        git add -A and commit
//	signal TYPE [TEXT]    run `chorus signal TYPE TEXT`, like an agent would
//	send TYPE [TEXT]      send the same signal from this process, as an agent
//	                      whose signals Chorus reads from its own files does
//	                      (no process started for it)
//	note TEXT             run `chorus note TEXT` (a line for the task's ledger)
//	tag TYPE [TEXT]       print a <chorus> tag on its own line
//	split-tag TYPE        print a tag in two writes
//	echo-prompt           print the prompt, as interactive CLIs do
//	wait-input            read one line of input and acknowledge it
//	ignore-term           ignore SIGTERM from now on
//	flood BYTES           print that many bytes of text
//	hang                  wait until killed
//	exit CODE             exit with CODE
//
// Reaching the end of the section exits 0.
package scriptagent

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Op is one parsed operation.
type Op struct {
	Name string
	Args []string
	Line int
}

// Section is a condition list with its operations.
type Section struct {
	Conds []string
	Ops   []Op
}

// Parse reads a script.
func Parse(src string) ([]Section, error) {
	var secs []Section
	cur := -1
	for i, raw := range strings.Split(src, "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "@") {
			secs = append(secs, Section{Conds: strings.Fields(strings.TrimPrefix(line, "@"))})
			cur = len(secs) - 1
			continue
		}
		if cur < 0 {
			secs = append(secs, Section{Conds: []string{"*"}})
			cur = 0
		}
		words, err := splitArgs(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		op := Op{Name: words[0], Args: words[1:], Line: i + 1}
		if err := check(op); err != nil {
			return nil, fmt.Errorf("line %d: %v", i+1, err)
		}
		secs[cur].Ops = append(secs[cur].Ops, op)
	}
	return secs, nil
}

var arity = map[string][2]int{
	"print": {0, 1}, "sleep": {1, 1}, "write": {2, 2}, "append": {2, 2}, "run": {1, 1},
	"commit": {1, 1}, "signal": {1, 2}, "send": {1, 2}, "note": {1, 1}, "tag": {1, 2}, "split-tag": {1, 1}, "echo-prompt": {0, 0},
	"wait-input": {0, 0}, "ignore-term": {0, 0}, "flood": {1, 1}, "hang": {0, 0}, "exit": {1, 1},
}

func check(op Op) error {
	a, ok := arity[op.Name]
	if !ok {
		return fmt.Errorf("unknown operation %q", op.Name)
	}
	if len(op.Args) < a[0] || len(op.Args) > a[1] {
		return fmt.Errorf("%s takes %d to %d arguments, got %d", op.Name, a[0], a[1], len(op.Args))
	}
	return nil
}

// splitArgs splits on spaces; a word starting with " is a Go string, and
// the rest of the line after the last fixed argument is taken whole.
func splitArgs(line string) ([]string, error) {
	name, rest, _ := strings.Cut(line, " ")
	out := []string{name}
	fixed := map[string]int{"write": 1, "append": 1, "signal": 1, "send": 1, "tag": 1}[name]
	rest = strings.TrimSpace(rest)
	for rest != "" {
		if strings.HasPrefix(rest, `"`) {
			end, err := quotedEnd(rest)
			if err != nil {
				return nil, err
			}
			s, err := strconv.Unquote(rest[:end])
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			rest = strings.TrimSpace(rest[end:])
			continue
		}
		if len(out)-1 >= fixed {
			out = append(out, rest)
			break
		}
		w, r, _ := strings.Cut(rest, " ")
		out = append(out, w)
		rest = strings.TrimSpace(r)
	}
	return out, nil
}

func quotedEnd(s string) (int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i + 1, nil
		}
	}
	return 0, errors.New("unterminated string")
}

// Env is what the agent knows about its run.
type Env struct {
	Iteration int
	TaskID    string
	Prompt    string
	Chorus    string // the chorus executable, for `signal`
	// Send delivers a signal from this process (the `send` operation):
	// the same transport `chorus signal` writes to.
	Send func(args []string) error
}

// Select returns the first section whose conditions hold.
func Select(secs []Section, e Env) (Section, bool) {
	for _, s := range secs {
		if matches(s.Conds, e) {
			return s, true
		}
	}
	return Section{}, false
}

func matches(conds []string, e Env) bool {
	for _, c := range conds {
		switch {
		case c == "*":
		case strings.HasPrefix(c, "iteration>="):
			n, _ := strconv.Atoi(strings.TrimPrefix(c, "iteration>="))
			if e.Iteration < n {
				return false
			}
		case strings.HasPrefix(c, "iteration="):
			n, _ := strconv.Atoi(strings.TrimPrefix(c, "iteration="))
			if e.Iteration != n {
				return false
			}
		case strings.HasPrefix(c, "task="):
			if e.TaskID != strings.TrimPrefix(c, "task=") {
				return false
			}
		case strings.HasPrefix(c, "prompt~"):
			if !strings.Contains(e.Prompt, strings.TrimPrefix(c, "prompt~")) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// Main runs the agent: script file, prompt; send is the `send` operation
// (nil: the operation fails). It returns the exit code.
func Main(scriptPath, prompt string, send func(args []string) error, stdin io.Reader, stdout io.Writer) int {
	src, err := os.ReadFile(scriptPath)
	if err != nil {
		fmt.Fprintf(stdout, "script agent: %v\n", err)
		return 2
	}
	secs, err := Parse(string(src))
	if err != nil {
		fmt.Fprintf(stdout, "script agent: %s: %v\n", scriptPath, err)
		return 2
	}
	it, _ := strconv.Atoi(os.Getenv("CHORUS_ITERATION"))
	exe, _ := os.Executable()
	// Under an engine, `chorus` is the one on the PATH it gave, like an
	// agent's (chorus-signal when installed beside chorus).
	if os.Getenv("CHORUS_EXE") != "" {
		if p, err := exec.LookPath("chorus"); err == nil {
			exe = p
		}
	}
	e := Env{Iteration: it, TaskID: os.Getenv("CHORUS_TASK_ID"), Prompt: prompt, Chorus: exe, Send: send}
	sec, ok := Select(secs, e)
	if !ok {
		fmt.Fprintf(stdout, "script agent: no section matches iteration %d of %s\n", it, e.TaskID)
		return 0
	}
	return Run(sec.Ops, e, stdin, stdout)
}

// Run executes ops and returns the exit code.
func Run(ops []Op, e Env, stdin io.Reader, stdout io.Writer) int {
	in := bufio.NewReader(stdin)
	for _, op := range ops {
		code, done := step(op, e, in, stdout)
		if done {
			return code
		}
	}
	return 0
}

func step(op Op, e Env, in *bufio.Reader, out io.Writer) (int, bool) {
	arg := func(i int) string {
		if i < len(op.Args) {
			return op.Args[i]
		}
		return ""
	}
	fail := func(err error) (int, bool) {
		fmt.Fprintf(out, "script agent: line %d: %s: %v\n", op.Line, op.Name, err)
		return 1, true
	}
	switch op.Name {
	case "print":
		fmt.Fprintln(out, arg(0))
	case "sleep":
		d, err := time.ParseDuration(arg(0))
		if err != nil {
			return fail(err)
		}
		time.Sleep(d)
	case "write":
		if err := os.WriteFile(os.ExpandEnv(arg(0)), []byte(arg(1)), 0o644); err != nil {
			return fail(err)
		}
	case "append":
		f, err := os.OpenFile(os.ExpandEnv(arg(0)), os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			return fail(err)
		}
		_, err = fmt.Fprintln(f, arg(1))
		f.Close()
		if err != nil {
			return fail(err)
		}
	case "run":
		c := exec.Command("sh", "-c", arg(0))
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			fmt.Fprintf(out, "$ %s: %v\n", arg(0), err)
		}
	case "commit":
		for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "--no-verify", "-m", arg(0)}} {
			c := exec.Command("git", args...)
			c.Stdout, c.Stderr = out, out
			if err := c.Run(); err != nil {
				return fail(err)
			}
		}
		fmt.Fprintf(out, "committed: %s\n", arg(0))
	case "signal":
		args := []string{"signal", arg(0)}
		if len(op.Args) > 1 {
			args = append(args, arg(1))
		}
		c := exec.Command(e.Chorus, args...)
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			return fail(err)
		}
	case "send":
		if e.Send == nil {
			return fail(errors.New("this agent cannot send signals itself"))
		}
		if err := e.Send(op.Args); err != nil {
			return fail(err)
		}
	case "note":
		c := exec.Command(e.Chorus, "note", arg(0))
		c.Stdout, c.Stderr = out, out
		if err := c.Run(); err != nil {
			return fail(err)
		}
	case "tag":
		fmt.Fprintln(out, tag(arg(0), arg(1)))
	case "split-tag":
		t := tag(arg(0), "")
		half := len(t) / 2
		fmt.Fprint(out, t[:half])
		if f, ok := out.(*os.File); ok {
			_ = f.Sync()
		}
		time.Sleep(50 * time.Millisecond) // two separate reads on the other side
		fmt.Fprintln(out, t[half:])
	case "echo-prompt":
		for _, l := range strings.Split(e.Prompt, "\n") {
			fmt.Fprintln(out, "> "+l)
		}
	case "wait-input":
		line, err := in.ReadString('\n')
		if err != nil && line == "" {
			return fail(err)
		}
		fmt.Fprintf(out, "received: %s\n", strings.TrimSpace(line))
	case "ignore-term":
		signal.Ignore(syscall.SIGTERM)
	case "flood":
		n, err := strconv.Atoi(arg(0))
		if err != nil {
			return fail(err)
		}
		line := strings.Repeat("flood ", 13) + "\n"
		for n > 0 {
			k := min(n, len(line))
			fmt.Fprint(out, line[len(line)-k:])
			n -= k
		}
	case "hang":
		select {}
	case "exit":
		n, err := strconv.Atoi(arg(0))
		if err != nil {
			return fail(err)
		}
		return n, true
	}
	return 0, false
}

func tag(typ, payload string) string {
	if payload != "" {
		return "<chorus>" + typ + ": " + payload + "</chorus>"
	}
	return "<chorus>" + typ + "</chorus>"
}
