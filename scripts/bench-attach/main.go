// Command bench-attach is the program behind scripts/bench-attach.sh:
// attaching to 8 agents that printed many lines, and the memory that
// holds them, Chorus against tmux in the same run.
//
//	bench-attach print LINES I      print LINES lines of agent-like output,
//	                                then END-I, then wait to be killed
//	bench-attach print-task LINES   the same as a real engine's agent, I
//	                                its task's place in $BENCH_TASKS
//	bench-attach serve LINES        8 agents (print under PTYs), their
//	                                emulators served on $BENCH_SOCK by the
//	                                remote package, as chorus engine does
//	bench-attach attach             the real TUI attached to that socket
//	bench-attach run LINES ROUNDS   the driver: the tmux server and the
//	                                engine, then ROUNDS interleaved attaches
//	                                of each, then memory
//
// The driver times each attach from the client's start until every
// agent's END-i has been drawn on the client's terminal (a PTY of
// 200x60 read as fast as it writes). tmux runs the same 8 printers in 8
// tiled panes of one window with history-limit equal to the scrollback.
// Memory is each process's VmRSS and Pss (smaps_rollup) with one client
// of each attached: the engine and the TUI against the tmux server and
// its client. $BENCH_BASE names a bench-attach built from an older
// revision, measured as another side (its own engine and TUI), and
// $BENCH_CHORUS_BASE that revision's chorus, run as $BENCH_CHORUS is.
package main

import (
	"bufio"
	"bytes"
	"context"
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

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
	"github.com/chorus-dev/chorus/ui"
)

const (
	agents     = 8
	scrollback = 10000 // the engine's history, and tmux's history-limit
	cols, rows = 200, 60
)

var root = func() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	return ctx
}()

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "print":
		err = printLines(atoi(os.Args[2]), atoi(os.Args[3]))
	case len(os.Args) >= 3 && os.Args[1] == "print-task": // then the prompt
		err = printLines(atoi(os.Args[2]), taskIndex())
	case len(os.Args) == 3 && os.Args[1] == "serve":
		err = serve(os.Getenv("BENCH_SOCK"), atoi(os.Args[2]))
	case len(os.Args) == 2 && os.Args[1] == "attach":
		err = attach(os.Getenv("BENCH_SOCK"))
	case len(os.Args) == 4 && os.Args[1] == "run":
		err = run(atoi(os.Args[2]), atoi(os.Args[3]))
	default:
		err = errors.New("usage: bench-attach print LINES I | print-task LINES | serve LINES | attach | run LINES ROUNDS")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench-attach:", err)
		os.Exit(1)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench-attach: %q is not a number\n", s)
		os.Exit(2)
	}
	return n
}

// printLines writes what a busy agent leaves in its terminal: numbered,
// coloured lines of varying length, some wider than a tile.
func printLines(n, id int) error {
	w := bufio.NewWriterSize(os.Stdout, 64<<10)
	words := strings.Fields("edited read ran the tests in package internal module handler config parser and checked returned a result of")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(w, "\x1b[2m%5d\x1b[0m \x1b[32m✓\x1b[0m agent %d:", i, id)
		for k := 0; k < 4+(i*7+id)%14; k++ {
			w.WriteString(" " + words[(i+k*3+id)%len(words)])
		}
		if i%10 == 0 {
			fmt.Fprintf(w, " \x1b[33mpkg/mod%03d/file_%04d.go\x1b[0m", i%97, i)
		}
		w.WriteString("\n")
	}
	fmt.Fprintf(w, "END-%d\n", id)
	if err := w.Flush(); err != nil {
		return err
	}
	<-root.Done()
	return nil
}

// engine stands in for the orchestrator: agents whose terminals are
// printers under PTYs, read into emulators as the engine reads them.
type engine struct {
	snap    orchestrator.Snapshot
	emus    map[string]*term.Emulator
	ptys    map[string]*ptyproc.Proc
	changed chan struct{}
}

func (e *engine) Changed() <-chan struct{}                                { return e.changed }
func (e *engine) Snapshot() orchestrator.Snapshot                         { return e.snap }
func (e *engine) Subscribe() <-chan orchestrator.Event                    { return nil }
func (e *engine) Do(context.Context, orchestrator.Command) error          { return nil }
func (e *engine) Screen(id string) *term.Emulator                         { return e.emus[id] }
func (e *engine) Input(id string) io.Writer                               { return e.ptys[id] }
func (e *engine) Checkpoints(context.Context) ([]merge.Checkpoint, error) { return nil, nil }
func (e *engine) Dependents(context.Context, string) ([]string, error)    { return nil, nil }
func (e *engine) TaskDiff(context.Context, string, bool) (orchestrator.TaskDiff, error) {
	return orchestrator.TaskDiff{}, nil
}
func (e *engine) ChangeTask(context.Context, orchestrator.TaskOp) (beads.Task, error) {
	return beads.Task{}, errors.New("the benchmark has no task store")
}
func (e *engine) Resize(id string, w, h int) {
	e.emus[id].Resize(w, h)
	e.ptys[id].Resize(uint16(w), uint16(h))
}

// serve starts the agents, waits until each has printed everything, says
// "ready" on stdout and serves them until killed.
func serve(sock string, lines int) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	e := &engine{emus: map[string]*term.Emulator{}, ptys: map[string]*ptyproc.Proc{}, changed: make(chan struct{})}
	e.snap.Mode = config.ModeSemiAuto
	e.snap.StartedAt = time.Now()
	e.snap.MaxParallel, e.snap.Running = agents, agents
	e.snap.Agents = map[string]*orchestrator.AgentState{}
	e.snap.Tasks = map[string]*orchestrator.TaskRun{}
	done := make(chan struct{}, agents)
	for i := range agents {
		id := fmt.Sprintf("claude-t-%d", i)
		e.snap.Agents[id] = &orchestrator.AgentState{ID: id, Type: "claude", TaskID: fmt.Sprintf("t-%d", i), Iteration: 1,
			StartedAt: time.Now().Add(time.Duration(i) * time.Millisecond), Status: orchestrator.AgentRunning}
		// The engine's own default size until a TUI resizes it.
		f, err := ptyproc.Start(ptyproc.Spec{Argv: []string{exe, "print", strconv.Itoa(lines), strconv.Itoa(i)}, Cols: 120, Rows: 40, LogCap: -1})
		if err != nil {
			return err
		}
		defer f.Stop(0)
		emu := term.New(120, 40, term.WithScrollback(scrollback), term.WithReplies(f))
		e.emus[id], e.ptys[id] = emu, f
		marker := []byte(fmt.Sprintf("END-%d", i))
		go func() {
			seen := false
			for chunk := range f.Output() {
				emu.Write(chunk)
				if !seen && bytes.Contains(chunk, marker) {
					seen = true
					done <- struct{}{}
				}
			}
		}()
	}
	for range agents {
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			return errors.New("the agents did not finish printing in 5 minutes")
		}
	}
	ln, err := remote.Listen(sock)
	if err != nil {
		return err
	}
	fmt.Println("ready")
	srv := &remote.Server{Eng: e, Stop: func() {}}
	return srv.Serve(root, ln)
}

// attach is the TUI side: the real ui package on a remote client.
func attach(sock string) error {
	// As chorus attach: the terminal set up while the engine is dialed.
	withTerm, closeTerm := openTerminal()
	defer closeTerm()
	c, err := remote.Dial(root, sock, remote.RoleTUI)
	if err != nil {
		return err
	}
	defer c.Close()
	var st store
	for id, a := range c.Snapshot().Agents {
		st.tasks = append(st.tasks, beads.Task{ID: a.TaskID, Title: "replay " + id, Status: beads.StatusInProgress, Priority: 2})
	}
	cfg := config.Default()
	cfg.Agents.MaxParallel = agents
	o := ui.Options{Engine: c, Store: st, Config: cfg, Version: "bench"}
	withTerm(&o)
	_, err = ui.RunAttached(root, o)
	return err
}

type store struct {
	beads.Store
	tasks []beads.Task
}

func (s store) List(context.Context) ([]beads.Task, error) { return s.tasks, nil }

// waitCmd runs argv and fails with its output when it does.
func waitCmd(argv ...string) (string, error) {
	out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s: %v: %s", strings.Join(argv, " "), err, out)
	}
	return strings.TrimSpace(string(out)), nil
}
