package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"
)

// defaultShutdownGrace bounds shutdown before a config is loaded.
const defaultShutdownGrace = 30 * time.Second

// errStopSignal is the cancel cause when SIGINT or SIGTERM arrived.
var errStopSignal = errors.New("stop signal received")

var (
	// shutdownGrace is how long a stop signal may take to end the process
	// (nanoseconds); set from completion.shutdownGraceSeconds once the
	// project's config is loaded.
	shutdownGrace atomic.Int64
	// engineHere says an engine runs in this process (a session is open):
	// a stop signal then stops its agents.
	engineHere atomic.Bool
	// shutdownDump is the .chorus directory where the goroutine dump of a
	// shutdown that overran goes ("" before a project is known).
	shutdownDump atomic.Value
)

// setShutdown records the grace period and dump directory of the project
// this process runs for.
func setShutdown(grace time.Duration, chorusDir string) {
	if grace > 0 {
		shutdownGrace.Store(int64(grace))
	}
	shutdownDump.Store(chorusDir)
}

func graceNow() time.Duration {
	if g := shutdownGrace.Load(); g > 0 {
		return time.Duration(g)
	}
	return defaultShutdownGrace
}

// repeatWindow is how soon after the first stop signal another one is
// taken as the same stop: cron and timeout(1) signal the process and then
// its whole process group, so one stop arrives as two signals within
// microseconds of each other.
const repeatWindow = time.Second

// secondStop says whether a stop signal arriving at now, after the first
// one at first, asks for the emergency exit: only one sent on purpose, a
// moment later, does.
func secondStop(first, now time.Time) bool {
	return now.Sub(first) > repeatWindow
}

// watchStopSignals cancels ctx on the first SIGINT or SIGTERM, which starts
// the normal shutdown (agents stopped, work committed, tasks released). If
// that has not ended the process within the grace period, or a second
// signal arrives more than repeatWindow later, the process exits anyway: a
// stop signal must always stop Chorus, even when the engine is stuck.
// Agents that were still running are found and reconciled by the next
// start, as after a crash. The returned function ends the watch once the
// command has returned.
func watchStopSignals(stderr io.Writer, exit func(int)) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	finished := make(chan struct{})
	go func() {
		var first os.Signal
		select {
		case first = <-sigs:
		case <-finished:
			return
		}
		at := time.Now()
		cancel(errStopSignal)
		grace := graceNow()
		if engineHere.Load() {
			// Only an engine in this process has agents to stop; `chorus
			// events` or a TUI attached elsewhere just ends.
			fmt.Fprintf(stderr, "chorus: %v: stopping: agents are stopped, their work committed and their tasks released (at most %s); a second stop signal exits at once\n", first, grace)
		}
		timer := time.NewTimer(grace)
		defer timer.Stop()
		var why string
	wait:
		for {
			select {
			case <-finished:
				return
			case s := <-sigs:
				if !secondStop(at, time.Now()) {
					continue // the same stop, delivered to the process and its group
				}
				why = fmt.Sprintf("second stop signal (%v) while shutting down", s)
				break wait
			case <-timer.C:
				why = fmt.Sprintf("shutdown did not finish within %s of %v", grace, first)
				break wait
			}
		}
		msg := "chorus: " + why + "; exiting now without finishing it."
		if p := dumpStacks(); p != "" {
			msg += " What every goroutine was doing is in " + p + "."
		}
		msg += " Agents may still be running and tasks may still show in progress: run chorus again in this repository to recover them (or `chorus doctor`)."
		fmt.Fprintln(stderr, msg)
		exit(ExitInterrupted)
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(finished)
		cancel(nil)
	}
}

// dumpStacks writes every goroutine's stack to .chorus/shutdown-stacks.txt,
// for finding out why shutdown hung; it returns the path, or "" when there
// is no project directory or writing failed.
func dumpStacks() string {
	dir, _ := shutdownDump.Load().(string)
	if dir == "" {
		return ""
	}
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	p := filepath.Join(dir, "shutdown-stacks.txt")
	if err := os.WriteFile(p, buf, 0o600); err != nil {
		return ""
	}
	return p
}
