package host

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chorus-dev/chorus/agent/ptyproc"
	"github.com/chorus-dev/chorus/memtrim"
)

// Runner starts agent hosts, finds the live ones of an instance and
// connects to them. Local runs them as processes on this machine; a
// runner placing them elsewhere (a pod per agent, reached through a
// stream) implements the same three calls.
type Runner interface {
	// Start starts a host for the agent named by m and connects to it;
	// the caller then sends Start with the agent's Spec.
	Start(ctx context.Context, m Meta) (*Client, error)
	// List returns the hosts of this runner's instance that still live.
	List(ctx context.Context) ([]Meta, error)
	// Connect connects to a listed host.
	Connect(ctx context.Context, m Meta) (*Client, error)
	// Stop asks a listed host, whatever its version, to stop its agent
	// and end.
	Stop(ctx context.Context, m Meta) error
}

// Ending is what became of a host whose connection ended before it
// reported its agent's exit.
type Ending struct {
	// Gone: the host is gone (its pod deleted or evicted, its node lost,
	// its process killed), so the agent's turn ended with the machine,
	// not by the agent's doing. Otherwise the host still lives and only
	// the connection to it broke.
	Gone bool
	Why  string // for the task's record: what the runner saw
}

// Ender is a Runner that can tell what became of a host whose connection
// ended without the agent's exit, and clean up after a lost one (nothing
// the agent started may outlive it). Runners without it are asked List.
type Ender interface {
	Ended(ctx context.Context, in Info) Ending
}

// Local runs each host as a process of this machine in a session of its
// own, so it lives on when the engine's process group is killed.
type Local struct {
	Dir      string        // where sockets and metadata live (e.g. .chorus/hosts)
	Instance string        // the engine instance (its .chorus dir): List returns only its hosts
	Exe      string        // the chorus executable
	Args     []string      // before the host's flags: e.g. ["agent-host"]
	Orphan   time.Duration // a host's wait for an engine (0: DefaultOrphan)
	LogDir   string        // where hosts write their own diagnostics, in HostsLog ("" discards them)
	Binary   string        // this chorus's version, told to hosts
}

// maxSocketPath is below the shortest sun_path limit (104 on macOS).
const maxSocketPath = 100

// slug makes an agent id a file name.
func slug(id string) string {
	var b strings.Builder
	for _, r := range id {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	sum := sha256.Sum256([]byte(id))
	return b.String() + "-" + hex.EncodeToString(sum[:4])
}

// hostName is a new host's file name stem (socket, metadata,
// checkpoint): its agent's, and a part of its own. A host ends after its
// agent's exit was taken, closing its socket and removing its files on
// its way out, while the agent's next run may already start a host: with
// names of the agent's alone the new host found the old one still
// listening, or lost its metadata to the old one's removal.
func hostName(id string) string {
	return slug(id) + "-" + strconv.FormatUint(uint64(rand.Uint32()), 36)
}

func (l *Local) socketPath(name string) string {
	p := filepath.Join(l.Dir, name+".sock")
	if len(p) <= maxSocketPath {
		return p
	}
	sum := sha256.Sum256([]byte(l.Dir + "\x00" + name))
	return filepath.Join(os.TempDir(), "chorus-"+strconv.Itoa(os.Getuid()), "h-"+hex.EncodeToString(sum[:10])+".sock")
}

func (l *Local) metaPath(name string) string { return filepath.Join(l.Dir, name+".json") }

// HostsLog is the file in Local.LogDir that local hosts' stderr goes to.
const HostsLog = "hosts.log"

// Start runs `Exe Args... --socket … --meta … --orphan … --log …` and
// waits for it to listen. Until then the host's stdout and stderr are
// one pipe to this process: a host that ends first is reported with what
// it said and how it ended. Once ready, it writes to HostsLog.
func (l *Local) Start(ctx context.Context, m Meta) (*Client, error) {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return nil, err
	}
	name := hostName(m.AgentID)
	m.Instance, m.Version = l.Instance, Version
	m.Socket = l.socketPath(name)
	mj, _ := json.Marshal(m)
	orphan := l.Orphan
	if orphan <= 0 {
		orphan = DefaultOrphan
	}
	// One file for every host, appended to: a file of its own per host
	// cost each agent start a file creation (on ext4 up to a millisecond
	// of kernel time), for a log that is nearly always empty. A host's
	// own lines name its agent (logf).
	logPath := os.DevNull
	if l.LogDir != "" && os.MkdirAll(l.LogDir, 0o700) == nil {
		logPath = filepath.Join(l.LogDir, HostsLog)
	}
	args := append(append([]string(nil), l.Args...), "--socket", m.Socket, "--meta", l.metaPath(name),
		"--orphan", orphan.String(), "--log", logPath, "--info", string(mj))
	cmd := exec.Command(l.Exe, args...)
	// Its own session: the engine's group, terminal and death are not its.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	cmd.Env = hostEnv(os.Environ())
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting the agent host: %w", err)
	}
	ready := make(chan string, 1)
	go func() {
		said, ok := readReady(out)
		_ = out.Close()
		if ok {
			if said != "" {
				// Kept where the host's later lines go.
				logLine(logPath, fmt.Sprintf("agent host: %s (pid %d) before ready: %s\n", m.AgentID, cmd.Process.Pid, said))
			}
			said = ""
		} else if said == "" {
			said = "nothing"
		}
		ready <- said
	}()
	t := time.NewTimer(15 * time.Second)
	defer t.Stop()
	select {
	case said := <-ready:
		if said != "" {
			// Its output is closed: it has ended or is ending.
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			return nil, fmt.Errorf("the agent host ended before it was ready (%s), saying: %s", cmd.ProcessState, said)
		}
	case <-t.C:
		_ = cmd.Process.Kill()
		reap(cmd.Process)
		return nil, errors.New("the agent host did not start within 15s")
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		reap(cmd.Process)
		return nil, ctx.Err()
	}
	// Reaped when it ends, so it leaves no zombie while this engine lives.
	reap(cmd.Process)
	return Dial(ctx, m.Socket, l.Binary)
}

// logLine appends line to the file at path.
func logLine(path, line string) {
	if f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600); err == nil {
		_, _ = f.WriteString(line)
		f.Close()
	}
}

// maxSaid bounds what a host that failed to start said, as reported.
const maxSaid = 4 << 10

// readReady reads a starting host's output up to its "ready" line: ok
// when it came, and what came before it (a host says nothing else
// before; what a failing one said, its last maxSaid bytes, otherwise).
func readReady(r io.Reader) (said string, ok bool) {
	br := bufio.NewReader(r)
	var b []byte
	for {
		line, err := br.ReadString('\n')
		if err == nil && line == "ready\n" {
			return strings.TrimSpace(string(b)), true
		}
		b = append(b, line...)
		if len(b) > maxSaid {
			b = b[len(b)-maxSaid:]
		}
		if err != nil {
			return strings.TrimSpace(string(b)), false
		}
	}
}

// envOwnProcs, set beside GOMAXPROCS=1 by hostEnv, says that GOMAXPROCS
// is the host's own: Main takes both out before the agent inherits them.
const envOwnProcs = "CHORUS_HOST_OWN_GOMAXPROCS"

// hostEnv is a local host's environment: env, and one processor from its
// start unless env chooses. Main would switch to one anyway, but a
// runtime that starts on more makes threads (each with its stacks) and
// caches it keeps for the host's life: a quarter megabyte a host.
func hostEnv(env []string) []string {
	for _, kv := range env {
		if strings.HasPrefix(kv, "GOMAXPROCS=") {
			return env
		}
	}
	return append(env[:len(env):len(env)], "GOMAXPROCS=1", envOwnProcs+"=1")
}

// List reads the hosts' metadata; a host whose process is gone is left
// out (and its file removed).
func (l *Local) List(ctx context.Context) ([]Meta, error) {
	ents, err := os.ReadDir(l.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var ms []Meta
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(l.Dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var m Meta
		if json.Unmarshal(b, &m) != nil || m.Instance != l.Instance {
			continue
		}
		// A host killed is gone from its exit on, not only once reaped.
		if m.HostPID <= 0 || syscall.Kill(m.HostPID, 0) != nil || ptyproc.Exiting(m.HostPID) {
			removeHostFiles(p, ents)
			continue
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// Connect dials a listed host.
func (l *Local) Connect(ctx context.Context, m Meta) (*Client, error) {
	return Dial(ctx, m.Socket, l.Binary)
}

// Stop asks a listed host to stop its agent and end.
func (l *Local) Stop(ctx context.Context, m Meta) error { return StopHost(ctx, m.Socket) }

// Ended looks at the host's process. A host killed (kill -9, the OOM
// killer) is gone: its agent, which lost its terminal with it, is killed
// too if it still runs, so the task's next run is alone in the worktree.
func (l *Local) Ended(ctx context.Context, in Info) Ending {
	pid := in.Meta.HostPID
	// A host killed closes its connection before it is a zombie: one
	// already exiting is not running.
	if st, err := ptyproc.StartTimeOf(pid); err == nil && pid > 0 && ptyproc.Alive(pid, st) && !ptyproc.Exiting(pid) {
		return Ending{Why: fmt.Sprintf("the connection to the agent host (pid %d) broke; the host still runs", pid)}
	}
	why := fmt.Sprintf("the agent host (pid %d) ended without reporting its agent's exit (killed?)", pid)
	if ptyproc.StopOrphan(in.Pid, in.StartTime, time.Second) {
		why += fmt.Sprintf("; its agent (pid %d), left without a terminal, was stopped", in.Pid)
	}
	l.forget(pid)
	return Ending{Gone: true, Why: why}
}

// forget removes the metadata and checkpoint of the host with process
// pid, which is gone.
func (l *Local) forget(pid int) {
	ents, _ := os.ReadDir(l.Dir)
	for _, e := range ents {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		p := filepath.Join(l.Dir, e.Name())
		var m Meta
		if b, err := os.ReadFile(p); err == nil && json.Unmarshal(b, &m) == nil && m.HostPID == pid {
			removeHostFiles(p, ents)
		}
	}
}

// removeHostFiles removes the metadata at p and its host's checkpoint
// (and one it was still receiving), ents being the folder's entries.
func removeHostFiles(p string, ents []os.DirEntry) {
	os.Remove(p)
	ck := filepath.Base(checkpointPath(p))
	for _, k := range ents {
		if k.Name() == ck || strings.HasPrefix(k.Name(), ck+".") {
			os.Remove(filepath.Join(filepath.Dir(p), k.Name()))
		}
	}
}

// checkpointPath is where the host whose metadata is at meta keeps its
// checkpoint (Options.CheckpointPath), beside it.
func checkpointPath(meta string) string { return strings.TrimSuffix(meta, ".json") + ".ckpt" }

// Main is `chorus agent-host`: it serves one agent on the socket named by
// args until the host ends.
func Main(args []string, binary string) error {
	if os.Getenv(envOwnProcs) != "" {
		// The runtime read it at the start: the agent gets what the
		// engine had.
		_ = os.Unsetenv("GOMAXPROCS")
		_ = os.Unsetenv(envOwnProcs)
	}
	var socket, meta, info, logPath string
	orphan := DefaultOrphan
	for i := 0; i+1 < len(args); i += 2 {
		switch args[i] {
		case "--socket":
			socket = args[i+1]
		case "--meta":
			meta = args[i+1]
		case "--info":
			info = args[i+1]
		case "--log":
			logPath = args[i+1]
		case "--orphan":
			d, err := time.ParseDuration(args[i+1])
			if err != nil {
				return fmt.Errorf("--orphan %q: want a duration such as 10m", args[i+1])
			}
			orphan = d
		default:
			return fmt.Errorf("agent-host: unknown flag %s", args[i])
		}
	}
	if socket == "" {
		return errors.New("agent-host: --socket is required (the engine starts agent hosts itself)")
	}
	var m Meta
	if info != "" {
		if err := json.Unmarshal([]byte(info), &m); err != nil {
			return fmt.Errorf("agent-host: --info: %w", err)
		}
	}
	logName = m.AgentID
	// The engine's signals and terminal are not ours: a SIGHUP or SIGINT
	// meant for it must not end the agent.
	signalIgnore()
	// The host holds little besides output on its way (the chunks it
	// keeps until a checkpoint): collecting less often costs little
	// memory and saves CPU on a busy agent.
	debug.SetGCPercent(400)
	// One processor: the host mostly hands chunks from one goroutine to
	// the next, which costs less without waking other threads.
	runtime.GOMAXPROCS(1)
	// The collections are rare: give back what a burst of output left
	// once the agent is quiet.
	memtrim.Start(memtrim.Period, memtrim.Default)
	// A pod told to go (SIGTERM, its grace before the kill) stops its
	// agent, so its work goes back to the remote (Spec.Git).
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	ck := ""
	if meta != "" {
		ck = checkpointPath(meta)
	}
	return Serve(ctx, socket, Options{Meta: m, MetaPath: meta, Orphan: orphan, Binary: binary, CheckpointPath: ck,
		Ready: func() {
			if logPath != "" {
				// Before "ready": the engine reads up to it, and then
				// no longer.
				stderrTo(logPath)
			}
			fmt.Fprintln(os.Stdout, "ready")
			os.Stdout.Close()
		}})
}

// Remote is a Runner whose hosts cannot see this machine's files (pods
// on a cluster): each agent works in a clone of the remote at
// RemoteURL, as the hosts reach it (Spec.Git).
type Remote interface {
	Runner
	RemoteURL() string
}
