package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

// silentAgent resolves and commits like an agent (a real child process),
// then never answers: it returns only when its context ends.
type silentAgent struct {
	script  string
	started chan ResolveRequest
	calls   atomic.Int32
	cause   atomic.Pointer[error]
}

func (a *silentAgent) Resolve(ctx context.Context, req ResolveRequest) (ResolveResult, error) {
	a.calls.Add(1)
	// The work itself is not cut short (a short limit could fire first).
	if _, err := proc.Run(context.WithoutCancel(ctx), proc.Spec{Argv: []string{"sh", "-c", a.script}, Dir: req.Worktree,
		Env: []string{"CONFLICT_FILES=" + strings.Join(req.ConflictFiles, " ")}, Timeout: time.Minute}); err != nil {
		return ResolveResult{}, err
	}
	a.started <- req
	<-ctx.Done()
	err := context.Cause(ctx)
	a.cause.Store(&err)
	return ResolveResult{}, err
}

// commitScript resolves a.txt and commits, but says nothing.
const commitScript = `set -e
printf 'a1\nBOTH\na3\na4\na5\n' > a.txt; git add a.txt
git commit -q --no-edit`

// conflictPair lands ch-1 (a.txt line 2 = ONE) and returns ch-2's branch
// and worktree (line 2 = TWO): merging ch-2 conflicts.
func conflictPair(t *testing.T, r *repo, h *harness, b1 string) {
	t.Helper()
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
}

// A resolver that commits but never says RESOLVED does not freeze the
// queue: unrelated finished tasks land while it works. Stopping it then
// lands nothing of its work, keeps that work under refs/chorus/kept/, puts
// the task branch back and hands the conflict to a person.
func TestSilentResolverDoesNotFreezeQueueAndStopLandsNothing(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, true)
	head2 := r.git("rev-parse", b2)
	agent := &silentAgent{script: commitScript, started: make(chan ResolveRequest, 1)}
	h := start(t, r, nil, agent)
	conflictPair(t, r, h, b1)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	req := <-agent.started
	if !req.OwnAgent || req.Worktree != wt2 {
		t.Fatalf("request %+v", req)
	}
	for _, id := range []string{"ch-3", "ch-4", "ch-5"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
	}
	for _, id := range []string{"ch-3", "ch-4", "ch-5"} {
		h.waitStatus(id, StatusLanded)
	}
	snap := h.svc.Snapshot()
	if it, _ := item(snap, "ch-2"); it.Status != StatusResolving || snap.Idle {
		t.Fatalf("ch-2 %s idle %v while its resolver works", it.Status, snap.Idle)
	}
	resolved := r.gitIn(wt2, "rev-parse", "HEAD")
	if resolved == head2 {
		t.Fatal("the resolver did not commit")
	}
	mainBefore := r.git("rev-parse", "main")

	if err := h.svc.StopResolver("ch-2"); err != nil {
		t.Fatal(err)
	}
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	if c := agent.cause.Load(); c == nil || !errors.Is(*c, errResolverStopped) {
		t.Fatalf("resolver context ended with %v", c)
	}
	if r.mergesOf("ch-2") != 0 || r.git("rev-parse", "main") != mainBefore || r.show("main", "a.txt") != "a1\nONE\na3\na4\na5" {
		t.Fatal("a stopped resolver's work reached main")
	}
	if !strings.Contains(it.LastError, "stopped") || !strings.Contains(it.Action, "retry ch-2") {
		t.Fatalf("item %+v", it)
	}
	ref := refIn(it.LastError, "refs/chorus/kept/ch-2/")
	if r.show(ref, "a.txt") != "a1\nBOTH\na3\na4\na5" || r.git("rev-parse", ref) != resolved {
		t.Fatalf("the resolver's work is not on %s", ref)
	}
	if r.git("rev-parse", b2) != head2 || r.gitIn(wt2, "status", "--porcelain") != "" {
		t.Fatal("the task branch was not put back, or its worktree is dirty")
	}
	h.waitFor("idle", func(s Snapshot) bool { return s.Idle })
	// Stopping again: nothing is resolving.
	if err := h.svc.StopResolver("ch-2"); !errors.Is(err, ErrNoResolver) {
		t.Fatalf("second stop: %v", err)
	}
}

// refIn finds the ref starting with prefix in a message.
func refIn(msg, prefix string) string {
	i := strings.Index(msg, prefix)
	if i < 0 {
		return ""
	}
	return strings.Fields(msg[i:])[0]
}

// A resolver that never answers times out on its own limit: its work (a
// commit and an unfinished edit) is kept under refs/chorus/kept/, the
// throwaway branch goes back, and the conflict goes to a person with the
// reason.
func TestResolverTimeoutKeepsWorkAndWaitsForHuman(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"b.txt": "b1\nB2\nb3\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"c.txt": "c\n"}, true)
	r.gitIn(wt2, "rm", "-q", "b.txt")
	r.gitIn(wt2, "commit", "-q", "-m", "[ch-2] drop b")
	head2 := r.git("rev-parse", b2)
	// Structural conflict: a resolver agent on the throwaway branch.
	agent := &silentAgent{script: `set -e; git rm -q b.txt; git commit -q --no-edit; echo half > notes.txt`,
		started: make(chan ResolveRequest, 1)}
	h := start(t, r, func(o *Options) { o.ResolverTimeout = 300 * time.Millisecond }, agent)
	conflictPair(t, r, h, b1)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	req := <-agent.started
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	if c := agent.cause.Load(); c == nil || !errors.Is(*c, errResolverTimeout) {
		t.Fatalf("resolver context ended with %v", c)
	}
	if !strings.Contains(it.LastError, "did not answer within 300ms") || it.Action == "" {
		t.Fatalf("item %+v", it)
	}
	ref := refIn(it.LastError, "refs/chorus/kept/ch-2/")
	if r.show(ref, "notes.txt") != "half" {
		t.Fatalf("unfinished work not kept on %q", ref)
	}
	if _, err := git(t.Context(), r.dir, "cat-file", "-e", ref+"^:b.txt"); err == nil {
		t.Fatal("the resolver's commit is not under the kept work")
	}
	if r.gitIn(req.Worktree, "rev-parse", "HEAD") != head2 || r.git("rev-parse", b2) != head2 {
		t.Fatal("branches not put back")
	}
	if r.mergesOf("ch-2") != 0 {
		t.Fatal("landed")
	}
}

// The stop is a fence: a resolver that already answered RESOLVED, whose
// resolution is being tested, is stopped; the quality command then passes
// and the resolution still does not land.
func TestStopAfterResolvedFencesLanding(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	fifo := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, true)
	head2 := r.git("rev-parse", b2)
	agent := &scriptAgent{script: resolveScript}
	h := start(t, r, func(o *Options) {
		o.Quality = quality(fmt.Sprintf(`[ "$CHORUS_TASK_ID" != ch-2 ] || cat %s >/dev/null`, fifo))
	}, agent)
	conflictPair(t, r, h, b1)
	mainBefore := r.git("rev-parse", "main")
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	h.waitFor("ch-2 testing its resolution", func(s Snapshot) bool {
		it, _ := item(s, "ch-2")
		return it.Status == StatusTesting && it.ResolvedFrom != "" && s.Current == "ch-2"
	})
	resolved := r.git("rev-parse", b2)
	if err := h.svc.StopResolver("ch-2"); err != nil {
		t.Fatal(err)
	}
	// Let the quality command pass.
	f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	if r.mergesOf("ch-2") != 0 || r.git("rev-parse", "main") != mainBefore {
		t.Fatal("a stopped resolution landed")
	}
	ref := refIn(it.LastError, "refs/chorus/kept/ch-2/")
	if ref == "" || r.git("rev-parse", ref) != resolved {
		t.Fatalf("resolution not kept: %q", it.LastError)
	}
	if r.git("rev-parse", b2) != head2 {
		t.Fatal("task branch not put back")
	}
}

// An agent that moves main itself (git update-ref from its worktree) while
// the queue is idle is noticed: the queue holds with the old and new tips,
// the next task is not blamed, and putting main back resumes the queue.
func TestTargetMovedByAgentHoldsQueue(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"1.txt": "1"}, false)
	h := start(t, r, func(o *Options) { o.WatchInterval = 20 * time.Millisecond }, nil)
	events := collect(t, h.svc)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	good := r.git("rev-parse", "main")
	_, wt := r.agentBranch("ch-x", "main", map[string]string{"a.txt": "red\n"}, true)
	red := r.gitIn(wt, "rev-parse", "HEAD")
	r.gitIn(wt, "update-ref", "refs/heads/main", red)
	snap := h.waitFor("hold", func(s Snapshot) bool { return s.Stats.Moved != nil })
	if m := snap.Stats.Moved; m.From != good || m.To != red || !snap.Stats.Paused {
		t.Fatalf("moved %+v paused %v", m, snap.Stats.Paused)
	}
	ev := events.wait(t, EventTargetMoved)
	if ev.Commit != red || !strings.Contains(ev.Message, short(good)) || !strings.Contains(ev.Message, "accept-target") {
		t.Fatalf("event %+v", ev)
	}
	b2, _ := r.agentBranch("ch-2", good, map[string]string{"2.txt": "2"}, false)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	h.waitFor("idle", func(s Snapshot) bool { return s.Idle })
	it, _ := item(h.svc.Snapshot(), "ch-2")
	if it.Status != StatusPending || it.LastError != "" || it.Retries != 0 || r.mergesOf("ch-2") != 0 {
		t.Fatalf("ch-2 blamed or landed: %+v", it)
	}
	// The restore command from the message puts main back; the queue goes on.
	r.git("update-ref", "refs/heads/main", good, red)
	it = h.waitStatus("ch-2", StatusLanded)
	if r.git("rev-parse", it.MergeCommit+"^1") != good {
		t.Fatal("ch-2 not landed on the verified tip")
	}
	events.wait(t, EventResumed)
}

// readTarget reads loose and packed refs without git.
func TestReadTargetLooseAndPacked(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, nil, nil)
	want := r.git("rev-parse", "main")
	if got, err := h.svc.readTarget(); err != nil || got != want {
		t.Fatalf("loose: %q %v", got, err)
	}
	r.git("pack-refs", "--all")
	if _, err := os.Stat(filepath.Join(r.dir, ".git", "refs", "heads", "main")); !os.IsNotExist(err) {
		t.Fatal("main still loose")
	}
	if got, err := h.svc.readTarget(); err != nil || got != want {
		t.Fatalf("packed: %q %v", got, err)
	}
}
