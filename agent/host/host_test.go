package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/agent/term"
	"github.com/chorus-dev/chorus/internal/testkit"
)

// TestMain lets the test binary be the host process for Local.
func TestMain(m *testing.M) {
	switch os.Getenv("CHORUS_HOST_TEST_MAIN") {
	case "writer":
		writerMain(os.Args[1])
		os.Exit(0)
	case "engine":
		engineMain(os.Args[1])
	case "signal":
		// `chorus signal` as an agent runs it.
		from, sg, err := signal.FromEnv(os.Args[1:], os.Getenv)
		if err == nil {
			err = signal.Send(from, sg)
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	case "ask":
		// `chorus ask` as an agent runs it: the answer on stdout.
		from, _, err := signal.FromEnv([]string{string(signal.NeedsHelp)}, os.Getenv)
		var q signal.Question
		if err == nil {
			q, err = signal.Ask(strings.Join(os.Args[1:], " "), nil)
		}
		if err == nil {
			err = signal.SendQuestion(from, q)
		}
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			var a signal.Answer
			a, err = signal.WaitAnswer(ctx, from.Dir, q.ID)
			cancel()
			os.Stdout.WriteString(a.Text + "\n")
		}
		if err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Exit(0)
	}
	if os.Getenv("CHORUS_HOST_TEST_MAIN") == "1" {
		if err := Main(os.Args[1:], "test"); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func shortDir(t *testing.T) string {
	t.Helper()
	d, err := os.MkdirTemp("", "chh")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(d) })
	return d
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// serve runs a host in this process and returns its socket and a channel
// closed when it ends.
func serve(t *testing.T, orphan time.Duration) (string, <-chan struct{}) {
	t.Helper()
	return serveWith(t, Options{Orphan: orphan})
}

// serveWith is serve with opt (its Ready is the helper's).
func serveWith(t *testing.T, opt Options) (string, <-chan struct{}) {
	t.Helper()
	sock := filepath.Join(shortDir(t), "a.sock")
	ready := make(chan struct{})
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		opt.Ready = func() { close(ready) }
		if err := Serve(context.Background(), sock, opt); err != nil {
			t.Error(err)
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(30 * time.Second):
		t.Fatal("host did not listen")
	}
	return sock, ended
}

// until reads c's output into an emulator until its screen shows want.
func until(t *testing.T, cl *Client, emu *term.Emulator, want string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	for !strings.Contains(emu.Text(), want) {
		select {
		case b, ok := <-cl.Output():
			if !ok {
				t.Fatalf("output ended before %q; screen:\n%s", want, emu.Text())
			}
			emu.Write(b)
		case <-deadline:
			t.Fatalf("no %q on screen:\n%s", want, emu.Text())
		}
	}
}

func TestHostOutlivesItsEngineConnection(t *testing.T) {
	sock, ended := serve(t, time.Minute)
	cl, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	script := `echo hello; read x; echo "got $x"; read y; echo "and $y"; exit 3`
	if err := cl.Start(ctx(t), Spec{Argv: []string{"sh", "-c", script}, Cols: 60, Rows: 10}); err != nil {
		t.Fatal(err)
	}
	pid := cl.Pid()
	if pid <= 0 || !ptyproc.Alive(pid, cl.StartTime()) {
		t.Fatalf("agent pid %d not alive", pid)
	}
	w0, h0, st0 := cl.Screen()
	emu := term.New(w0, h0)
	emu.Write(st0)
	until(t, cl, emu, "hello")
	if err := cl.Type(ctx(t), "one", ptyproc.TypeOptions{Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	until(t, cl, emu, "got one")

	// The engine goes away: the agent does not notice.
	cl.Close()
	cl2, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl2.Wait4Info(ctx(t)); err != nil {
		t.Fatal(err)
	}
	if cl2.Pid() != pid {
		t.Fatalf("re-connected to pid %d, want %d", cl2.Pid(), pid)
	}
	w, h, st := cl2.Screen()
	emu2 := term.New(w, h)
	emu2.Write(st)
	if !strings.Contains(emu2.Text(), "got one") {
		t.Fatalf("the screen did not come back:\n%s", emu2.Text())
	}
	if err := cl2.Resize(70, 12); err != nil {
		t.Fatal(err)
	}
	emu2.Resize(70, 12)
	sw, sh, _, err := cl2.Snapshot(ctx(t))
	if err != nil || sw != 70 || sh != 12 {
		t.Fatalf("snapshot %dx%d, %v; want 70x12", sw, sh, err)
	}
	if err := cl2.Type(ctx(t), "two", ptyproc.TypeOptions{Delay: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	until(t, cl2, emu2, "and two")
	for range cl2.Output() {
	}
	if code, err := cl2.Wait(); code != 3 || err != nil {
		t.Fatalf("exit %d, %v; want 3", code, err)
	}
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("the host did not end after its exit was taken")
	}
}

func TestOrphanHostStopsItsAgent(t *testing.T) {
	sock, ended := serve(t, 300*time.Millisecond)
	cl, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx(t), Spec{Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	pid, st := cl.Pid(), cl.StartTime()
	cl.Close()
	select {
	case <-ended:
	case <-time.After(40 * time.Second):
		t.Fatal("an orphaned host did not end")
	}
	if ptyproc.Alive(pid, st) {
		t.Fatal("the orphaned host left its agent running")
	}
}

func TestStopHostStopsAgentAndHost(t *testing.T) {
	sock, ended := serve(t, time.Minute)
	cl, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx(t), Spec{Argv: []string{"sleep", "600"}}); err != nil {
		t.Fatal(err)
	}
	pid, st := cl.Pid(), cl.StartTime()
	cl.Close()
	if err := StopHost(ctx(t), sock); err != nil {
		t.Fatal(err)
	}
	<-ended
	if ptyproc.Alive(pid, st) {
		t.Fatal("stop left the agent running")
	}
}

// A host that ended while an engine was connected but had not started
// its agent yet starts none: nobody would stop it.
func TestEndedHostStartsNoAgent(t *testing.T) {
	sock, ended := serve(t, time.Minute)
	cl, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := StopHost(ctx(t), sock); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("a stopped host did not end")
	}
	err = cl.Start(ctx(t), Spec{Argv: []string{"sleep", "600"}})
	if err == nil || !strings.Contains(err.Error(), "ending") {
		if pid := cl.Pid(); pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		t.Fatalf("an ended host started an agent: %v", err)
	}
}

func TestVersionMismatchIsNamed(t *testing.T) {
	// A host of another version: its hello says so.
	sock := filepath.Join(shortDir(t), "old.sock")
	ln, err := listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _, _ = readFrame(c, nil)
		_ = writeJSON(c, fHello, hello{Version: Version + 1, Role: "host"})
	}()
	_, err = Dial(ctx(t), sock, "")
	var ev ErrVersion
	if !errors.As(err, &ev) || ev.Host != Version+1 || ev.Engine != Version {
		t.Fatalf("err = %v, want ErrVersion{%d, %d}", err, Version+1, Version)
	}
	if !strings.Contains(err.Error(), "cannot be re-adopted") {
		t.Fatalf("unclear error: %v", err)
	}

	// An engine of another version is refused by a real host, which still
	// obeys a stop from it.
	sock2, ended := serve(t, time.Minute)
	c, err := net.Dial("unix", sock2)
	if err != nil {
		t.Fatal(err)
	}
	_ = writeJSON(c, fHello, hello{Version: Version + 7, Role: "engine"})
	typ, b, err := readFrame(c, nil)
	var h hello
	if err != nil || typ != fHello || json.Unmarshal(b, &h) != nil || h.Version != Version {
		t.Fatalf("hello back: %c %s %v", typ, b, err)
	}
	if _, _, err := readFrame(c, nil); err == nil {
		t.Fatal("a host kept talking to an engine of another version")
	}
	c.Close()
	if err := StopHost(ctx(t), sock2); err != nil {
		t.Fatal(err)
	}
	<-ended
}

func TestLocalRunnerHostInItsOwnSession(t *testing.T) {
	t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
	d := shortDir(t)
	l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Orphan: time.Minute, LogDir: filepath.Join(d, "logs")}
	cl, err := l.Start(ctx(t), Meta{AgentID: "claude/t-1", TaskID: "t-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Start(ctx(t), Spec{Argv: []string{"sh", "-c", "echo up; exec sleep 600"}}); err != nil {
		t.Fatal(err)
	}
	// Hosts share one log file: a start creates no file of its own there.
	if ents, err := os.ReadDir(l.LogDir); err != nil || len(ents) != 1 || ents[0].Name() != HostsLog {
		t.Fatalf("log folder holds %v (%v), want only %s", ents, err, HostsLog)
	}
	ms, err := l.List(ctx(t))
	if err != nil || len(ms) != 1 || ms[0].AgentID != "claude/t-1" || ms[0].Version != Version {
		t.Fatalf("List = %+v, %v", ms, err)
	}
	// Once ready its stderr is that log, not the pipe the engine read
	// up to "ready" and closed.
	if runtime.GOOS == "linux" {
		if p, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/2", ms[0].HostPID)); err != nil || p != filepath.Join(l.LogDir, HostsLog) {
			t.Fatalf("the host's stderr is %q (%v), want %s", p, err, filepath.Join(l.LogDir, HostsLog))
		}
	}
	if sid, err := ptyproc.SessionOf(ms[0].HostPID); err != nil || sid != ms[0].HostPID {
		t.Fatalf("host session %d (%v), want its own (%d)", sid, err, ms[0].HostPID)
	}
	other := &Local{Dir: l.Dir, Instance: "elsewhere"}
	if ms, _ := other.List(ctx(t)); len(ms) != 0 {
		t.Fatalf("another instance sees %+v", ms)
	}
	cl.Close()
	cl2, err := l.Connect(ctx(t), ms[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := cl2.Wait4Info(ctx(t)); err != nil || cl2.Pid() != cl.Pid() {
		t.Fatalf("re-connected to %d (%v), want %d", cl2.Pid(), err, cl.Pid())
	}
	cl2.Stop(time.Second)
	if code, _ := cl2.Wait(); code == 0 {
		t.Fatalf("a stopped agent exited 0")
	}
	// The host ends once its exit is taken, and its files go.
	if !testkit.WaitExit(t, ms[0].HostPID, 30*time.Second) {
		t.Fatal("the host outlived its agent's taken exit")
	}
	if ms, _ := l.List(ctx(t)); len(ms) != 0 {
		t.Fatalf("an ended host is still listed: %+v", ms)
	}
}

// The agent's next run may start its host while the host of the run
// before, its exit taken, is still ending: the two share no file, and
// the old one's end leaves the new one listed and reachable.
func TestNextHostWhileLastEnds(t *testing.T) {
	t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
	d := shortDir(t)
	l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Orphan: time.Minute, LogDir: filepath.Join(d, "logs")}
	m := Meta{AgentID: "claude/t-4", TaskID: "t-4"}
	last, err := l.Start(ctx(t), m)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := l.List(ctx(t))
	if err != nil || len(ms) != 1 {
		t.Fatalf("List = %+v, %v", ms, err)
	}
	lastPID := ms[0].HostPID
	next, err := l.Start(ctx(t), m)
	if err != nil {
		t.Fatalf("a host for the agent while its last one lives: %v", err)
	}
	if ms, err = l.List(ctx(t)); err != nil || len(ms) != 2 {
		t.Fatalf("List = %+v, %v", ms, err)
	}
	last.Stop(time.Second)
	if !testkit.WaitExit(t, lastPID, 30*time.Second) {
		t.Fatal("the last host did not end")
	}
	ms, err = l.List(ctx(t))
	if err != nil || len(ms) != 1 || ms[0].HostPID == lastPID {
		t.Fatalf("List = %+v, %v; want the next host alone", ms, err)
	}
	next.Close()
	cl, err := l.Connect(ctx(t), ms[0])
	if err != nil {
		t.Fatalf("the next host after the last one ended: %v", err)
	}
	cl.Stop(time.Second)
	if !testkit.WaitExit(t, ms[0].HostPID, 30*time.Second) {
		t.Fatal("the next host did not end")
	}
}

// A host that ends before it is ready is reported with what it said and
// how it ended.
func TestHostStartFailureSaysWhy(t *testing.T) {
	t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
	d := shortDir(t)
	l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Args: []string{"--bogus", "x"}, LogDir: filepath.Join(d, "logs")}
	_, err := l.Start(ctx(t), Meta{AgentID: "claude/t-6", TaskID: "t-6"})
	if err == nil || !strings.Contains(err.Error(), "unknown flag --bogus") || !strings.Contains(err.Error(), "exit status 2") {
		t.Fatalf("start of a host that cannot start: %v", err)
	}
}

func TestStartFailureEndsHost(t *testing.T) {
	sock, ended := serve(t, time.Minute)
	cl, err := Dial(ctx(t), sock, "")
	if err != nil {
		t.Fatal(err)
	}
	err = cl.Start(ctx(t), Spec{Argv: []string{filepath.Join(shortDir(t), "no-such-agent")}})
	if err == nil || !strings.Contains(err.Error(), "no-such-agent") {
		t.Fatalf("start of a missing command: %v", err)
	}
	cl.Stop(time.Second) // returns: there is nothing to stop
	select {
	case <-ended:
	case <-time.After(30 * time.Second):
		t.Fatal("a host whose agent could not start did not end")
	}
}

// A host the engine gives up before starting its agent (the run was held
// meanwhile) ends at once: it has no agent to wait for an engine for.
func TestStopBeforeStartEndsHost(t *testing.T) {
	t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
	d := shortDir(t)
	l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Orphan: time.Hour, LogDir: filepath.Join(d, "logs")}
	cl, err := l.Start(ctx(t), Meta{AgentID: "claude/t-2", TaskID: "t-2"})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := l.List(ctx(t))
	if err != nil || len(ms) != 1 {
		t.Fatalf("List = %+v, %v", ms, err)
	}
	cl.Stop(time.Second)
	if !testkit.WaitExit(t, ms[0].HostPID, 30*time.Second) {
		t.Fatal("a host given up before its start waits for an engine")
	}
	if ms, _ := l.List(ctx(t)); len(ms) != 0 {
		t.Fatalf("an ended host is still listed: %+v", ms)
	}
}

// A host's lines name its agent and process: local hosts share a log.
func TestLogfNamesTheAgent(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	old, oldName := os.Stderr, logName
	os.Stderr, logName = w, "claude/t-9"
	logf("kept %s", "refs/x")
	os.Stderr, logName = old, oldName
	w.Close()
	b, _ := io.ReadAll(r)
	want := fmt.Sprintf(" agent host: claude/t-9 (pid %d): kept refs/x\n", os.Getpid())
	if !strings.HasSuffix(string(b), want) {
		t.Fatalf("logf wrote %q, want it to end in %q", b, want)
	}
}

// A local host keeps its engine's checkpoints in a file beside its
// metadata, not in its memory; a host killed outright leaves it behind,
// and the next List removes it with the metadata.
func TestKilledHostsCheckpointGoes(t *testing.T) {
	t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
	d := shortDir(t)
	l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Orphan: time.Minute, LogDir: filepath.Join(d, "logs")}
	cl, err := l.Start(ctx(t), Meta{AgentID: "claude/t-3", TaskID: "t-3"})
	if err != nil {
		t.Fatal(err)
	}
	cl.cad = fastCadence()
	if err := cl.Start(ctx(t), Spec{Argv: []string{"sh", "-c", "seq 1 3000; exec sleep 600"}, Cols: 80, Rows: 24}); err != nil {
		t.Fatal(err)
	}
	emu := term.New(80, 24, term.WithScrollback(300))
	stop := cl.Track(emu)
	defer stop()
	go func() {
		for chunk := range cl.Output() {
			emu.Write(chunk)
		}
	}()
	ms, err := l.List(ctx(t))
	if err != nil || len(ms) != 1 {
		t.Fatalf("List = %+v, %v", ms, err)
	}
	metas, _ := filepath.Glob(filepath.Join(l.Dir, "*.json"))
	if len(metas) != 1 {
		t.Fatalf("metadata files: %v", metas)
	}
	ck := checkpointPath(metas[0])
	waitNonEmpty(t, ck, 30*time.Second)
	if err := syscall.Kill(ms[0].HostPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if !testkit.WaitExit(t, ms[0].HostPID, 30*time.Second) {
		t.Fatal("a killed host did not exit")
	}
	// Not yet reaped by Local's own goroutine, perhaps: gone all the same.
	if ms, _ := l.List(ctx(t)); len(ms) != 0 {
		t.Fatalf("a killed host is still listed: %+v", ms)
	}
	ents, _ := os.ReadDir(l.Dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".ckpt") || strings.HasSuffix(e.Name(), ".json") {
			t.Errorf("left behind: %s", e.Name())
		}
	}
}

// waitNonEmpty waits on the file's directory for the file to hold bytes:
// the host tells nobody when it has written a checkpoint.
func waitNonEmpty(t *testing.T, path string, limit time.Duration) {
	t.Helper()
	w, err := fsnotify.NewWatcher()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Add(filepath.Dir(path)); err != nil {
		t.Fatal(err)
	}
	timeout := time.After(limit)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			return
		}
		select {
		case <-w.Events:
		case err := <-w.Errors:
			t.Fatal(err)
		case <-timeout:
			t.Fatalf("no checkpoint in %s after the agent's output", path)
		}
	}
}

// A local host starts on one processor, unless the engine's environment
// chooses, and its agent sees the engine's GOMAXPROCS, not the host's.
func TestLocalHostStartsOnOneProcessor(t *testing.T) {
	for _, engine := range []string{"", "3"} {
		t.Run("GOMAXPROCS="+engine, func(t *testing.T) {
			t.Setenv("CHORUS_HOST_TEST_MAIN", "1")
			t.Setenv("GOMAXPROCS", engine)
			if engine == "" {
				os.Unsetenv("GOMAXPROCS")
			}
			d := shortDir(t)
			l := &Local{Dir: filepath.Join(d, "hosts"), Instance: d, Exe: os.Args[0], Orphan: time.Minute}
			cl, err := l.Start(ctx(t), Meta{AgentID: "a", TaskID: "t"})
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			if err := cl.Start(ctx(t), Spec{Argv: []string{"sh", "-c",
				`echo "procs=[${GOMAXPROCS-unset}] own=[${` + envOwnProcs + `-unset}]"; exec sleep 600`}}); err != nil {
				t.Fatal(err)
			}
			defer cl.Stop(time.Second)
			want := "procs=[unset] own=[unset]"
			if engine != "" {
				want = "procs=[" + engine + "] own=[unset]"
			}
			until(t, cl, term.New(80, 24), want)
			// Where /proc shows it: the host itself started with one.
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", cl.Info().Meta.HostPID))
			if err != nil {
				t.Skipf("no host environment to read: %v", err)
			}
			procs := "1"
			if engine != "" {
				procs = engine
			}
			if env := strings.Split(string(b), "\x00"); !slices.Contains(env, "GOMAXPROCS="+procs) {
				t.Fatalf("the host started with %q, want GOMAXPROCS=%s", env, procs)
			}
		})
	}
}
