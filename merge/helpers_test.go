package merge

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/merge/driver"
	"github.com/chorus-dev/chorus/proc"
	"github.com/chorus-dev/chorus/worktree"
)

// TestMain doubles as the merge driver git runs and as the crash-test
// worker, so both are real child processes of the test.
func TestMain(m *testing.M) {
	if os.Getenv("CHORUS_MERGE_DRIVER") == "1" {
		os.Exit(driver.Main(os.Args[1:]))
	}
	if phase := os.Getenv("CHORUS_MERGE_CRASH"); phase != "" {
		os.Exit(crashChild(phase))
	}
	// A GIT_DIR inherited from a hook or `git rebase --exec` would point
	// these tests' git at the checkout they run from.
	for _, k := range []string{"GIT_DIR", "GIT_WORK_TREE", "GIT_COMMON_DIR", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	if n := refusedTransitions.Load(); n > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "the merge service attempted %d status changes the transition table refuses\n", n)
		code = 1
	}
	os.Exit(code)
}

func driverCommand() string {
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	return "CHORUS_MERGE_DRIVER=1 " + shellQuote(exe)
}

type repo struct {
	t   testing.TB
	dir string
}

func newRepo(t testing.TB) *repo {
	t.Helper()
	dir := t.TempDir()
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	r := &repo{t: t, dir: dir}
	r.git("init", "-q", "-b", "main")
	r.git("config", "user.name", "Test")
	r.git("config", "user.email", "test@example.com")
	r.git("config", "commit.gpgsign", "false")
	r.write("README.md", "readme\n")
	r.write("a.txt", "a1\na2\na3\na4\na5\n")
	r.write("b.txt", "b1\nb2\nb3\n")
	r.write(LearningsPath, "# Learnings\n")
	r.write(IssuesPath, `{"id":"ch-0","status":"open"}`+"\n")
	r.git("add", "-A")
	r.git("commit", "-q", "-m", "initial")
	// chorus init keeps its runtime state out of the user's status.
	r.write(".git/info/exclude", "/.chorus/\n")
	return r
}

func (r *repo) git(args ...string) string {
	r.t.Helper()
	return r.gitIn(r.dir, args...)
}

func (r *repo) gitIn(dir string, args ...string) string {
	r.t.Helper()
	if len(args) > 0 && args[0] == "worktree" {
		// The service adds and prunes worktrees concurrently, and git
		// is not safe against that: take the lock the service takes.
		defer worktreesOf(dir).LockRegistry()()
	}
	out, err := git(context.Background(), dir, args...)
	if err != nil {
		r.t.Fatalf("git %v in %s: %v", args, dir, err)
	}
	return out
}

func (r *repo) write(rel, content string) { r.writeIn(r.dir, rel, content) }

func (r *repo) writeIn(dir, rel, content string) {
	r.t.Helper()
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *repo) read(rel string) string {
	b, _ := os.ReadFile(filepath.Join(r.dir, rel))
	return string(b)
}

func (r *repo) show(rev, path string) string {
	out, _ := git(context.Background(), r.dir, "show", rev+":"+path)
	return out
}

// agentBranch makes branch agent/a/<task> from start in a worktree under
// .worktrees (as the engine does), commits files there, and removes the
// worktree unless keep.
func (r *repo) agentBranch(task, start string, files map[string]string, keep bool) (string, string) {
	r.t.Helper()
	branch := "agent/a/" + task
	wt := filepath.Join(r.dir, ".worktrees", "a-"+task)
	r.git("worktree", "add", "-q", "-b", branch, wt, start)
	r.commitIn(wt, "["+task+"] work", files)
	if !keep {
		r.git("worktree", "remove", "--force", wt)
		wt = ""
	}
	return branch, wt
}

func (r *repo) commitIn(wt, msg string, files map[string]string) {
	r.t.Helper()
	for k, v := range files {
		r.writeIn(wt, k, v)
	}
	r.gitIn(wt, "add", "-A")
	r.gitIn(wt, "commit", "-q", "-m", msg)
}

// fileStore persists the queue the way the engine does: atomically.
type fileStore struct {
	path  string
	count atomic.Int64

	mu      sync.Mutex
	cleaned []int // cleaned-up items in each persisted queue
}

type persisted struct {
	Items []Item `json:"items"`
	Stats Stats  `json:"stats"`
}

func (f *fileStore) persist(items []Item, st Stats) error {
	f.count.Add(1)
	n := 0
	for _, it := range items {
		if it.Cleaned {
			n++
		}
	}
	f.mu.Lock()
	f.cleaned = append(f.cleaned, n)
	f.mu.Unlock()
	b, err := json.Marshal(persisted{items, st})
	if err != nil {
		return err
	}
	// Temp file + rename: atomic against kill -9, which is what the tests
	// exercise; the engine's writer also fsyncs for power loss.
	if err := os.MkdirAll(filepath.Dir(f.path), 0o755); err != nil {
		return err
	}
	tmp := f.path + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f.path)
}

func (f *fileStore) load(t testing.TB) persisted {
	t.Helper()
	var p persisted
	b, err := os.ReadFile(f.path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return p
		}
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatal(err)
	}
	return p
}

// worktreesOf is the one worktree owner of the test repository holding
// dir, shared by its services and the fixtures' own worktree commands.
func worktreesOf(dir string) *worktree.Manager {
	root := dir
	if i := strings.Index(dir, string(filepath.Separator)+".worktrees"+string(filepath.Separator)); i >= 0 {
		root = dir[:i]
	}
	m, _ := owners.LoadOrStore(root, &worktree.Manager{RepoDir: root, Target: "main"})
	return m.(*worktree.Manager)
}

var owners sync.Map // repository root → *worktree.Manager

func baseOptions(dir string) Options {
	return Options{
		RepoDir: dir, Target: "main", ChorusDir: filepath.Join(dir, ".chorus"), Worktrees: worktreesOf(dir),
		Merge:         config.Merge{AutoResolve: true, AgentResolve: true, MaxAttempts: 3},
		Checkpoints:   config.Checkpoints{Enabled: true, BeforeMerge: true, Periodic: 5},
		DriverCommand: driverCommand(),
	}
}

func quality(cmds ...string) []config.QualityCommand {
	var q []config.QualityCommand
	for i, c := range cmds {
		q = append(q, config.QualityCommand{Name: fmt.Sprintf("q%d", i), Command: c, Required: true, Order: i})
	}
	return q
}

type harness struct {
	t      testing.TB
	r      *repo
	svc    *Service
	store  *fileStore
	cancel context.CancelFunc
	done   chan error
}

func start(t testing.TB, r *repo, mod func(*Options), res Resolver) *harness {
	t.Helper()
	opt := baseOptions(r.dir)
	if mod != nil {
		mod(&opt)
	}
	store := &fileStore{path: filepath.Join(r.dir, ".chorus", "state.json")}
	svc, err := New(opt, store.persist, res)
	if err != nil {
		t.Fatal(err)
	}
	if p := store.load(t); len(p.Items) > 0 || p.Stats.NextSeq > 0 {
		svc.Restore(p.Items, p.Stats)
	}
	h := &harness{t: t, r: r, svc: svc, store: store, done: make(chan error, 1)}
	h.run()
	t.Cleanup(h.stop)
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	done := make(chan error, 1)
	h.done = done
	go func() { done <- h.svc.Run(ctx) }()
}

func (h *harness) stop() {
	if h.cancel != nil {
		h.cancel()
		<-h.done
		h.cancel = nil
	}
}

func (h *harness) enqueue(r Request) {
	h.t.Helper()
	if err := h.svc.Enqueue(r); err != nil {
		h.t.Fatal(err)
	}
}

// waitFor blocks until cond holds on a snapshot. The deadline only guards
// against a hang; nothing is timed.
func (h *harness) waitFor(what string, cond func(Snapshot) bool) Snapshot {
	h.t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	for {
		s := h.svc.Snapshot()
		if cond(s) {
			return s
		}
		select {
		case <-h.svc.Changed():
		case err := <-h.done:
			h.done <- err
			s := h.svc.Snapshot()
			if cond(s) {
				return s
			}
			h.t.Fatalf("Run ended (%v) while waiting for %s; snapshot %+v", err, what, s)
		case <-deadline.C:
			h.t.Fatalf("hang waiting for %s; snapshot %+v", what, h.svc.Snapshot())
		}
	}
}

func item(s Snapshot, id string) (Item, bool) {
	for _, it := range s.Items {
		if it.TaskID == id {
			return it, true
		}
	}
	return Item{}, false
}

func (h *harness) waitStatus(id string, st ...Status) Item {
	h.t.Helper()
	snap := h.waitFor(id+" "+fmt.Sprint(st), func(s Snapshot) bool {
		it, ok := item(s, id)
		if !ok {
			return false
		}
		for _, x := range st {
			if it.Status == x && (x != StatusLanded || it.Cleaned) && s.Current != id {
				return true
			}
		}
		return false
	})
	it, _ := item(snap, id)
	return it
}

// mergesOf counts commits on main's first-parent line carrying the task's trailer.
func (r *repo) mergesOf(task string) int {
	out := r.git("log", "--first-parent", "--format=%(trailers:key=Chorus-Task,valueonly)", "main")
	n := 0
	for _, l := range strings.Split(out, "\n") {
		if strings.TrimSpace(l) == task {
			n++
		}
	}
	return n
}

// scriptAgent is the scripted test agent: a real child process that runs
// a shell script in the worktree and answers like an agent does.
type scriptAgent struct {
	script string
	calls  atomic.Int32
	mu     sync.Mutex
	last   ResolveRequest
}

var needsHumanRE = regexp.MustCompile(`<chorus>NEEDS_HUMAN: ?(.*?)</chorus>`)

func (a *scriptAgent) Resolve(ctx context.Context, req ResolveRequest) (ResolveResult, error) {
	a.calls.Add(1)
	a.mu.Lock()
	a.last = req
	a.mu.Unlock()
	res, err := proc.Run(ctx, proc.Spec{Argv: []string{"sh", "-c", a.script}, Dir: req.Worktree,
		Env:   []string{"CONFLICT_FILES=" + strings.Join(req.ConflictFiles, " ")},
		Stdin: strings.NewReader(req.Prompt), Timeout: time.Minute})
	if err != nil {
		return ResolveResult{}, err
	}
	out := string(res.Stdout)
	if m := needsHumanRE.FindStringSubmatch(out); m != nil {
		return ResolveResult{Explanation: m[1]}, nil
	}
	if strings.Contains(out, "<chorus>RESOLVED</chorus>") {
		return ResolveResult{Resolved: true, Explanation: "resolved by script"}, nil
	}
	return ResolveResult{}, fmt.Errorf("agent ended without an answer (exit %d): %s", res.ExitCode, res.Stderr)
}

// crashChild runs the worker for one task and SIGKILLs itself at phase.
func crashChild(phase string) int {
	dir := os.Getenv("CHORUS_MERGE_REPO")
	opt := baseOptions(dir)
	opt.Quality = quality("true")
	store := &fileStore{path: filepath.Join(dir, ".chorus", "state.json")}
	svc, err := New(opt, store.persist, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	svc.hook = func(p string) {
		if p == phase {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
	reqs := []Request{{TaskID: os.Getenv("CHORUS_MERGE_TASK"), Branch: os.Getenv("CHORUS_MERGE_BRANCH"),
		Worktree: os.Getenv("CHORUS_MERGE_WORKTREE"), Agent: "a", Title: "crash test"}}
	if batch := os.Getenv("CHORUS_MERGE_BATCH"); batch != "" {
		// id=branch pairs, queued together: the worker takes them as a batch.
		reqs = nil
		for _, pair := range strings.Split(batch, ",") {
			id, branch, _ := strings.Cut(pair, "=")
			reqs = append(reqs, Request{TaskID: id, Branch: branch, Agent: "a", Title: "crash test"})
		}
	}
	for _, req := range reqs {
		if err := svc.Enqueue(req); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	svc.Drain()
	if err := svc.Run(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	return 3 // the phase never came
}

// eventLog records a service's events (it becomes their only reader).
type eventLog struct {
	mu   sync.Mutex
	evs  []Event
	more chan struct{}
}

func collect(t testing.TB, s *Service) *eventLog {
	l := &eventLog{more: make(chan struct{}, 1)}
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	go func() {
		for {
			select {
			case e := <-s.Events():
				l.mu.Lock()
				l.evs = append(l.evs, e)
				l.mu.Unlock()
				select {
				case l.more <- struct{}{}:
				default:
				}
			case <-done:
				return
			}
		}
	}()
	return l
}

// wait returns the first event of kind, waiting for it if need be.
func (l *eventLog) wait(t testing.TB, kind EventKind) Event {
	t.Helper()
	deadline := time.NewTimer(90 * time.Second)
	defer deadline.Stop()
	for {
		l.mu.Lock()
		for _, e := range l.evs {
			if e.Kind == kind {
				l.mu.Unlock()
				return e
			}
		}
		l.mu.Unlock()
		select {
		case <-l.more:
		case <-deadline.C:
			t.Fatalf("no %s event", kind)
		}
	}
}
