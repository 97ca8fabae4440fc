// Command bench-tui is the load generator behind scripts/bench-tui.sh.
//
//	bench-tui pace FILE RATE SECONDS   write FILE to stdout in a loop at RATE bytes/s,
//	                                   in $WPS writes a second (default 100)
//	bench-tui chorus FILE RATE SECONDS run the Chorus UI with 8 tiles, each fed by
//	                                   a pacer under its own PTY
//	bench-tui serve FILE RATE SECONDS  the same 8 agents served on the Unix socket
//	                                   $BENCH_SOCK by the remote package (no UI)
//	bench-tui attach - - SECONDS       the Chorus UI attached to that socket
//	bench-tui ingest FILE              cat FILE under a 120x40 PTY into one emulator,
//	                                   as the engine reads an agent; print the wall
//	                                   and CPU seconds it took; $COALESCE (a
//	                                   duration, negative: none) sets the
//	                                   reader's coalescing window; HOST=1
//	                                   reads it through an agent host (this
//	                                   binary as `agent-host`) and prints the
//	                                   host's CPU seconds third
//
// The chorus mode drives the real ui package through a stand-in engine
// whose agents are pacers, so the UI's cost (emulation, frames, drawing)
// is measured without git or agent CLIs.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
	"github.com/chorus-dev/chorus/remote"
	"github.com/chorus-dev/chorus/ui"
)

const tiles = 8

// root ends on SIGTERM or SIGINT, so a process killed by the bench script
// still returns through main and writes its CPU profile.
var root = func() context.Context {
	ctx, _ := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	return ctx
}()

func main() {
	if len(os.Args) > 1 && os.Args[1] == "agent-host" {
		if err := host.Main(os.Args[2:], "bench"); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) == 3 && os.Args[1] == "ingest" {
		if err := ingest(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 5 && os.Args[1] == "pace" {
		// Started as an agent, it is given the prompt last: ignored.
		os.Args = os.Args[:5]
	}
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: bench-tui pace|chorus|serve|attach FILE RATE SECONDS, or bench-tui ingest FILE")
		os.Exit(2)
	}
	rate, _ := strconv.Atoi(os.Args[3])
	secs, _ := strconv.Atoi(os.Args[4])
	d := time.Duration(secs) * time.Second
	if p := os.Getenv("CPUPROFILE"); p != "" && os.Args[1] != "pace" {
		if os.Args[1] != "chorus" { // serve and attach run side by side
			p += "." + os.Args[1]
		}
		f, _ := os.Create(p)
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if os.Args[1] == "attach" {
		if err := attach(os.Getenv("BENCH_SOCK"), d); err != nil {
			fmt.Fprintln(os.Stderr, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
		return
	}
	data, err := os.ReadFile(os.Args[2])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	switch os.Args[1] {
	case "serve":
		if err := serve(os.Getenv("BENCH_SOCK"), os.Args[2], rate, d); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	case "pace":
		pace(os.Stdout, data, rate, d)
	case "chorus":
		if err := chorus(os.Args[2], rate, d); err != nil {
			fmt.Fprintln(os.Stderr, err)
			pprof.StopCPUProfile()
			os.Exit(1)
		}
	}
}

// pace writes data in a loop at rate bytes/s, in $WPS writes a second
// (default 100: a chunk every 10 ms); with rate 0 it writes one screenful
// and stays quiet (idle agents).
func pace(w io.Writer, data []byte, rate int, d time.Duration) {
	end := time.Now().Add(d)
	if rate == 0 {
		w.Write(data[:min(len(data), 2000)])
		time.Sleep(time.Until(end))
		return
	}
	wps, _ := strconv.Atoi(os.Getenv("WPS"))
	if wps <= 0 {
		wps = 100
	}
	tick := time.NewTicker(time.Second / time.Duration(wps))
	defer tick.Stop()
	// What is owed is counted from the start, so ticks a loaded machine
	// drops are made up by the next write: the rate holds at any load.
	start := time.Now()
	var sent int64
	off := 0
	for time.Now().Before(end) {
		<-tick.C
		owed := int64(time.Since(start).Seconds()*float64(rate)) - sent
		if owed <= 0 {
			continue
		}
		n := min(int(owed), len(data)-off)
		sent += int64(n)
		w.Write(data[off : off+n])
		off += n
		if off == len(data) {
			// Start the next loop clean, as a new agent screen would.
			w.Write([]byte("\x1b[?1049l\x1b[!p\x1b[2J\x1b[H"))
			off = 0
		}
	}
}

// engine stands in for the orchestrator: fixed agents whose screens are
// fed by pacers under PTYs.
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
func (e *engine) Resize(id string, cols, rows int) {
	e.emus[id].Resize(cols, rows)
	e.ptys[id].Resize(uint16(cols), uint16(rows))
}

type store struct {
	beads.Store
	tasks []beads.Task
}

func (s store) List(context.Context) ([]beads.Task, error) { return s.tasks, nil }

// newEngine starts the 8 pacers under PTYs; stop ends them.
func newEngine(file string, rate int, d time.Duration) (e *engine, st store, stop func(), err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, st, nil, err
	}
	e = &engine{emus: map[string]*term.Emulator{}, ptys: map[string]*ptyproc.Proc{}, changed: make(chan struct{})}
	e.snap.Mode = config.ModeSemiAuto
	e.snap.StartedAt = time.Now()
	e.snap.MaxParallel, e.snap.Running = tiles, tiles
	e.snap.Agents = map[string]*orchestrator.AgentState{}
	e.snap.Tasks = map[string]*orchestrator.TaskRun{}
	var procs []*ptyproc.Proc
	stop = func() {
		for _, f := range procs {
			f.Stop(0)
		}
	}
	for i := range tiles {
		id := fmt.Sprintf("claude-t-%d", i)
		task := fmt.Sprintf("t-%d", i)
		e.snap.Agents[id] = &orchestrator.AgentState{ID: id, Type: "claude", TaskID: task, Iteration: 1, StartedAt: time.Now().Add(time.Duration(i) * time.Millisecond), Status: orchestrator.AgentRunning}
		st.tasks = append(st.tasks, beads.Task{ID: task, Title: "replay " + task, Status: beads.StatusInProgress, Priority: 2})
		// The engine's own PTY process type, so its reads cost what they
		// cost in a real session.
		f, err := ptyproc.Start(ptyproc.Spec{Argv: []string{exe, "pace", file, strconv.Itoa(rate), strconv.Itoa(int(d.Seconds()) + 5)}, Cols: 80, Rows: 24})
		if err != nil {
			stop()
			return nil, st, nil, err
		}
		procs = append(procs, f)
		emu := term.New(80, 24, term.WithScrollback(5000), term.WithReplies(f))
		e.emus[id], e.ptys[id] = emu, f
		// The engine's output pump: chunks straight into the emulator.
		go func() {
			for chunk := range f.Output() {
				emu.Write(chunk)
			}
		}()
	}
	return e, st, stop, nil
}

func chorus(file string, rate int, d time.Duration) error {
	e, st, stop, err := newEngine(file, rate, d)
	if err != nil {
		return err
	}
	defer stop()
	ctx, cancel := context.WithTimeout(root, d)
	defer cancel()
	cfg := config.Default()
	cfg.Agents.MaxParallel = tiles
	ms, _ := strconv.Atoi(os.Getenv("FRAME_MS"))
	return ui.Run(ctx, ui.Options{Engine: e, Store: st, Config: cfg, Version: "bench", FrameInterval: time.Duration(ms) * time.Millisecond})
}

// serve is the engine side of a background engine: the agents and their
// emulators, served on a socket as chorus engine serves them.
func serve(sock, file string, rate int, d time.Duration) error {
	e, _, stop, err := newEngine(file, rate, d)
	if err != nil {
		return err
	}
	defer stop()
	ln, err := remote.Listen(sock)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(root, d+5*time.Second)
	defer cancel()
	srv := &remote.Server{Eng: e, Stop: cancel}
	if ms, _ := strconv.Atoi(os.Getenv("BATCH_MS")); ms > 0 {
		srv.Interval = time.Duration(ms) * time.Millisecond
	}
	return srv.Serve(ctx, ln)
}

// attach is the TUI side: the real ui package on a remote client.
func attach(sock string, d time.Duration) error {
	ctx, cancel := context.WithTimeout(root, d)
	defer cancel()
	var c *remote.Client
	var err error
	for range 100 { // the server may still be starting
		if c, err = remote.Dial(ctx, sock, remote.RoleTUI); err == nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	defer c.Close()
	var st store
	for id, a := range c.Snapshot().Agents {
		st.tasks = append(st.tasks, beads.Task{ID: a.TaskID, Title: "replay " + id, Status: beads.StatusInProgress, Priority: 2})
	}
	cfg := config.Default()
	cfg.Agents.MaxParallel = tiles
	ms, _ := strconv.Atoi(os.Getenv("FRAME_MS"))
	_, err = ui.RunAttached(ctx, ui.Options{Engine: c, Store: st, Config: cfg, Version: "bench", FrameInterval: time.Duration(ms) * time.Millisecond})
	return err
}

// ingest reads FILE the way the engine reads an agent: through a PTY (the
// engine's own process type) into an emulator, until the writer is done.
// It prints "wall CPU" in seconds; CPU is this process's own (user+system),
// the emulator's and the reading's.
func ingest(file string) error {
	var r0 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r0); err != nil {
		return err
	}
	start := time.Now()
	coalesce, err := coalesceEnv()
	if err != nil {
		return err
	}
	argv := []string{"sh", "-c", "stty raw -echo; exec cat \"$0\"", file}
	emu := term.New(120, 40, term.WithScrollback(10000), term.WithReplies(io.Discard))
	hostCPU := -1.0
	if os.Getenv("HOST") == "1" {
		if hostCPU, err = ingestHosted(argv, emu); err != nil {
			return err
		}
	} else {
		dir, err := os.MkdirTemp("", "bench-direct")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		// A log, as the engine keeps for every agent.
		f, err := ptyproc.Start(ptyproc.Spec{Argv: argv, Cols: 120, Rows: 40, LogCap: -1, Coalesce: coalesce,
			LogPath: filepath.Join(dir, "agent.log")})
		if err != nil {
			return err
		}
		for chunk := range f.Output() {
			emu.Write(chunk)
		}
	}
	wall := time.Since(start)
	var r1 syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &r1); err != nil {
		return err
	}
	cpu := time.Duration(r1.Utime.Nano()-r0.Utime.Nano()) + time.Duration(r1.Stime.Nano()-r0.Stime.Nano())
	if hostCPU >= 0 {
		fmt.Printf("%.3f %.3f %.3f\n", wall.Seconds(), cpu.Seconds(), hostCPU)
		return nil
	}
	fmt.Printf("%.3f %.3f\n", wall.Seconds(), cpu.Seconds())
	return nil
}

// ingestHosted runs argv in an agent host (this binary) and feeds what it
// streams to emu, as the engine does with agents.host on; it returns the
// host's own CPU seconds.
func ingestHosted(argv []string, emu *term.Emulator) (float64, error) {
	dir, err := os.MkdirTemp("", "bench-host")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	exe, err := os.Executable()
	if err != nil {
		return 0, err
	}
	l := &host.Local{Dir: dir, Instance: dir, Exe: exe, Args: []string{"agent-host"}}
	ctx, cancel := context.WithTimeout(root, time.Minute)
	defer cancel()
	cl, err := l.Start(ctx, host.Meta{AgentID: "bench"})
	if err != nil {
		return 0, err
	}
	// With a log, as the engine starts every agent: the host hands the
	// terminal over only then (the log is how it catches up after).
	if err := cl.Start(ctx, host.Spec{Argv: argv, Cols: 120, Rows: 40, Scrollback: 10000,
		LogPath: filepath.Join(dir, "agent.log")}); err != nil {
		return 0, err
	}
	stop := cl.Track(emu)
	for chunk := range cl.Output() {
		emu.Write(chunk)
	}
	stop()
	return cl.Exit().HostCPU, nil
}

// coalesceEnv is $COALESCE as ptyproc.Spec.Coalesce (unset: the default).
func coalesceEnv() (time.Duration, error) {
	v := os.Getenv("COALESCE")
	if v == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, fmt.Errorf("COALESCE=%q: want a duration such as 33ms, or -1ns for none", v)
	}
	return d, nil
}
