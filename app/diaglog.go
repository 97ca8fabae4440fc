package app

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/orchestrator"
)

// openDiagLog opens .chorus/logs/chorus.log for a session. A bad
// CHORUS_LOG_LEVEL is an error; a log that cannot be written is only a
// warning, since the session can run without it.
func openDiagLog(p *project, stderr io.Writer) (*slog.Logger, func(), error) {
	if _, err := chorusdir.ParseLogLevel(os.Getenv(chorusdir.LogLevelEnv)); err != nil {
		return nil, nil, withCode(ExitUsage, err)
	}
	stopCPU := startCPUProfile(stderr)
	stopHeap := startHeapProfile(stderr)
	stopProfile := func() { stopHeap(); stopCPU() }
	log, c, err := p.dir.OpenDiagLog()
	if err == nil {
		return log, func() { _ = c.Close(); stopProfile() }, nil
	}
	fmt.Fprintf(stderr, "chorus: no diagnostic log (%v); continuing without it\n", err)
	return slog.New(slog.DiscardHandler), stopProfile, nil
}

// CPUProfileEnv names a file that receives a Go CPU profile of the session
// (for `go tool pprof`), when set. "%p" in it is replaced by the process
// id, so a TUI and the background engine it starts write apart.
const CPUProfileEnv = "CHORUS_CPUPROFILE"

func startCPUProfile(stderr io.Writer) func() {
	path := os.Getenv(CPUProfileEnv)
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	f, err := os.Create(path)
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "chorus: no CPU profile (%s): %v\n", CPUProfileEnv, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// HeapProfileEnv names a file that receives a Go heap profile of the
// session every 5 seconds while it runs (the last one stays), when set;
// "%p" as for CPUProfileEnv. What a long session holds is what matters,
// not what is left at its end.
const HeapProfileEnv = "CHORUS_HEAPPROFILE"

// keepsMemProfile reports whether a process keeps the runtime's heap
// profiling on: when a heap profile is asked for, or GODEBUG sets its
// rate. Linking runtime/pprof (for these profiles) leaves it on in every
// process otherwise, and its table of sampled stacks grew to megabytes
// in a long-lived engine or TUI.
func keepsMemProfile(getenv func(string) string) bool {
	return getenv(HeapProfileEnv) != "" || strings.Contains(getenv("GODEBUG"), "memprofilerate=")
}

func startHeapProfile(stderr io.Writer) func() {
	path := os.Getenv(HeapProfileEnv)
	if path == "" {
		return func() {}
	}
	path = strings.ReplaceAll(path, "%p", strconv.Itoa(os.Getpid()))
	write := func() error {
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		runtime.GC() // the profile's in-use figures are as of the last collection
		err = pprof.Lookup("heap").WriteTo(f, 0)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		return err
	}
	if err := write(); err != nil {
		fmt.Fprintf(stderr, "chorus: no heap profile (%s): %v\n", HeapProfileEnv, err)
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				_ = write()
			case <-done:
				return
			}
		}
	}()
	return sync.OnceFunc(func() { close(done) })
}

// logSessionStart records what this session is: enough to tell runs apart
// when reading the log after a problem.
func logSessionStart(log *slog.Logger, p *project, target string) {
	cfgPath, userPath := p.dir.Config(), ""
	if p.loaded != nil {
		cfgPath, userPath = p.loaded.Path, p.loaded.UserPath
	}
	log.Info("session started",
		"args", strings.Join(os.Args, " "), "pid", os.Getpid(), "version", buildVersion(),
		"os", runtime.GOOS+"/"+runtime.GOARCH, "root", p.root, "mode", p.cfg.Mode,
		"maxAgents", p.cfg.Agents.MaxParallel, "target", target,
		"config", cfgPath, "userConfig", userPath)
	if p.loaded != nil {
		for _, w := range p.loaded.Warnings {
			log.Warn("config", "warning", w)
		}
	}
}

// logEvents copies engine events into the diagnostic log until the
// returned function is called; that function returns once what was
// already delivered is written.
func logEvents(log *slog.Logger, events <-chan orchestrator.Event) (stop func()) {
	quit, done := make(chan struct{}), make(chan struct{})
	write := func(ev orchestrator.Event) {
		attrs := []any{"kind", ev.Kind}
		if ev.Agent != "" {
			attrs = append(attrs, "agent", ev.Agent)
		}
		if ev.Task != "" {
			attrs = append(attrs, "task", ev.Task)
		}
		if ev.Text != "" {
			attrs = append(attrs, "text", ev.Text)
		}
		for k, v := range ev.Fields {
			attrs = append(attrs, k, v)
		}
		log.Log(context.Background(), eventLevel(ev.Kind), "event", attrs...)
	}
	go func() {
		defer close(done)
		for {
			select {
			case ev := <-events:
				write(ev)
			case <-quit:
				for {
					select {
					case ev := <-events:
						write(ev)
					default:
						return
					}
				}
			}
		}
	}()
	return func() { close(quit); <-done }
}

// eventLevel: what a person debugging a run looks for first is at info
// and above; the rest (iterations, signals, quality runs) at debug.
func eventLevel(kind orchestrator.EventKind) slog.Level {
	switch kind {
	case orchestrator.EvError:
		return slog.LevelError
	case orchestrator.EvFailed, orchestrator.EvBlocked, orchestrator.EvAlert, orchestrator.EvNeedsHelp,
		mergeKind(merge.EventFailed), mergeKind(merge.EventConflict), mergeKind(merge.EventQualityFailed),
		mergeKind(merge.EventWaitingHuman), mergeKind(merge.EventHeld), mergeKind(merge.EventPaused):
		return slog.LevelWarn
	case orchestrator.EvAssigned, orchestrator.EvStarted, orchestrator.EvAgentExit, orchestrator.EvFinished,
		orchestrator.EvCompleted, orchestrator.EvReleased, orchestrator.EvMode, orchestrator.EvPaused,
		orchestrator.EvResumed, orchestrator.EvRecovered, orchestrator.EvCheckpoint, orchestrator.EvRollback,
		orchestrator.EvMergeQueued, mergeKind(merge.EventLanded), mergeKind(merge.EventResolved):
		return slog.LevelInfo
	}
	return slog.LevelDebug
}

// mergeKind is the engine's event kind for a merge service event (see
// orchestrator's merge link: "merge_" and the kind with underscores).
func mergeKind(k merge.EventKind) orchestrator.EventKind {
	return orchestrator.EventKind("merge_" + strings.ReplaceAll(string(k), "-", "_"))
}
