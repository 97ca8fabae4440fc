package merge

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// A quality command that fails only on the merged tree: each branch passes
// alone, the merge of both does not. Main must not move.
func TestQualityFailsOnlyOnMergedTree(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"p.txt": "p\n"}, false)
	b2, _ := r.agentBranch("ch-2", "main", map[string]string{"q.txt": "q\n"}, false)
	h := start(t, r, func(o *Options) { o.Quality = quality("! { test -f p.txt && test -f q.txt; }") }, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	landed := r.git("rev-parse", "main")
	h.enqueue(Request{TaskID: "ch-2", Branch: b2})
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	if r.git("rev-parse", "main") != landed {
		t.Fatal("main moved to a failing tree")
	}
	if !strings.Contains(it.LastError, "q0") || it.Action == "" {
		t.Fatalf("item %+v", it)
	}
	// The branch is kept (no lost work).
	r.git("rev-parse", "--verify", "refs/heads/"+b2)
}

// Check 7: 20 branches appending to the learnings file and the task store
// merge with 0 conflicts; the same record changed on two branches is a
// conflict, not two lines.
func TestDriversMergeSharedFiles(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	h := start(t, r, nil, nil)
	base := r.git("rev-parse", "main")
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("ch-%d", i+1)
		b, _ := r.agentBranch(id, base, map[string]string{
			LearningsPath: "# Learnings\n- learned " + id + "\n",
			IssuesPath:    `{"id":"ch-0","status":"open"}` + "\n" + `{"id":"` + id + `","status":"closed"}` + "\n",
			id + ".txt":   id,
		}, false)
		h.enqueue(Request{TaskID: id, Branch: b})
	}
	for i := 0; i < 20; i++ {
		h.waitStatus(fmt.Sprintf("ch-%d", i+1), StatusLanded)
	}
	if c := h.svc.Snapshot().Stats.Conflicts; c != 0 {
		t.Fatalf("%d conflicts", c)
	}
	learn := r.show("main", LearningsPath) + "\n"
	issues := r.show("main", IssuesPath) + "\n"
	for i := 0; i < 20; i++ {
		id := fmt.Sprintf("ch-%d", i+1)
		if strings.Count(learn, "- learned "+id+"\n") != 1 || strings.Count(issues, `"id":"`+id+`"`) != 1 {
			t.Fatalf("%s missing or doubled:\n%s\n%s", id, learn, issues)
		}
	}
	if strings.Count(issues, "\n") != 21 {
		t.Fatalf("issues:\n%s", issues)
	}
	// Now two branches change record ch-0 differently.
	tip := r.git("rev-parse", "main")
	x, _ := r.agentBranch("ch-x", tip, map[string]string{IssuesPath: strings.Replace(issues, `{"id":"ch-0","status":"open"}`, `{"id":"ch-0","status":"closed"}`, 1)}, false)
	y, _ := r.agentBranch("ch-y", tip, map[string]string{IssuesPath: strings.Replace(issues, `{"id":"ch-0","status":"open"}`, `{"id":"ch-0","status":"in_progress"}`, 1)}, false)
	h.enqueue(Request{TaskID: "ch-x", Branch: x})
	h.waitStatus("ch-x", StatusLanded)
	h.enqueue(Request{TaskID: "ch-y", Branch: y})
	it := h.waitStatus("ch-y", StatusWaitingHuman)
	if strings.Join(it.ConflictFiles, ",") != IssuesPath {
		t.Fatalf("conflict files %v", it.ConflictFiles)
	}
	if n := strings.Count(r.show("main", IssuesPath), `"id":"ch-0"`); n != 1 {
		t.Fatalf("ch-0 appears %d times", n)
	}
}

const resolveScript = `set -e
for f in $CONFLICT_FILES; do printf 'a1\nBOTH\na3\na4\na5\n' > "$f"; git add "$f"; done
git commit -q --no-edit
echo '<chorus>RESOLVED</chorus>'`

// Two agents change the same lines: the second goes back to its own agent
// (a scripted test agent, a real child process) which resolves it; the
// resolution lands only after the quality commands pass.
func TestResolverOwnAgentResolves(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, true)
	agent := &scriptAgent{script: resolveScript}
	h := start(t, r, func(o *Options) { o.Quality = quality("! grep -q '<<<<<<<' a.txt") }, agent)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	it := h.waitStatus("ch-2", StatusLanded)
	if agent.calls.Load() != 1 {
		t.Fatalf("%d resolver calls", agent.calls.Load())
	}
	req := agent.last
	if !req.OwnAgent || req.Worktree != wt2 || strings.Join(req.ConflictFiles, ",") != "a.txt" {
		t.Fatalf("request %+v", req)
	}
	for _, want := range []string{"# Merge Conflict Resolution Task", "Conflicting Files: a.txt", "+TWO", "+ONE", "NEEDS_HUMAN"} {
		if !strings.Contains(req.Prompt, want) {
			t.Fatalf("prompt lacks %q:\n%s", want, req.Prompt)
		}
	}
	if got := r.show("main", "a.txt"); got != "a1\nBOTH\na3\na4\na5" {
		t.Fatalf("a.txt on main: %q", got)
	}
	if r.git("rev-parse", "HEAD") != it.MergeCommit || r.git("status", "--porcelain") != "" {
		t.Fatal("user checkout not at the merge, or dirty")
	}
	st := h.svc.Snapshot().Stats
	if st.Conflicts != 1 || st.Resolved != 1 || st.MergesAuto != 2 {
		t.Fatalf("stats %+v", st)
	}
}

// A structural conflict (modify/delete) goes to a resolver agent on a
// throwaway branch in Chorus's own worktree.
func TestResolverAgentOnThrowawayBranch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"b.txt": "b1\nB2\nb3\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"c.txt": "c\n"}, true)
	r.gitIn(wt2, "rm", "-q", "b.txt")
	r.gitIn(wt2, "commit", "-q", "-m", "[ch-2] drop b")
	agent := &scriptAgent{script: `set -e; git rm -q b.txt; git commit -q --no-edit -m "resolve: keep the deletion"; echo '<chorus>RESOLVED</chorus>'`}
	h := start(t, r, nil, agent)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	h.waitStatus("ch-2", StatusLanded)
	if agent.last.OwnAgent || agent.last.Branch != resolveBranch("ch-2") {
		t.Fatalf("request %+v", agent.last)
	}
	if _, err := git(t.Context(), r.dir, "cat-file", "-e", "main:b.txt"); err == nil {
		t.Fatal("b.txt still on main")
	}
	if _, err := git(t.Context(), r.dir, "rev-parse", "--verify", "-q", "refs/heads/"+resolveBranch("ch-2")); err == nil {
		t.Fatal("throwaway branch left")
	}
}

// A resolver that gives up: the item waits for a person with the files and
// the agent's explanation; headless, the run ends listing it, and it stays
// queued for the next run.
func TestResolverGivesUpWaitsForHuman(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, true)
	agent := &scriptAgent{script: `echo '<chorus>NEEDS_HUMAN: both sides rename the same constant</chorus>'`}
	h := start(t, r, func(o *Options) { o.Headless = true }, agent)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	h.enqueue(Request{TaskID: "ch-3", Branch: "agent/a/ch-3-missing", DependsOn: []string{"ch-2"}})
	h.svc.Drain()
	err := <-h.done
	h.cancel = nil
	var we *WaitingError
	if !errors.As(err, &we) {
		t.Fatalf("Run returned %v", err)
	}
	if len(we.Items) != 2 || we.Items[0].TaskID != "ch-2" || we.Items[1].TaskID != "ch-3" {
		t.Fatalf("waiting %+v", we.Items)
	}
	it := we.Items[0]
	if it.Status != StatusWaitingHuman || it.Explanation != "both sides rename the same constant" ||
		strings.Join(it.ConflictFiles, ",") != "a.txt" || !strings.Contains(it.Action, "retry ch-2") {
		t.Fatalf("item %+v", it)
	}
	// The agent's worktree is left clean, on its branch.
	if st := r.gitIn(wt2, "status", "--porcelain"); st != "" {
		t.Fatalf("worktree left dirty: %s", st)
	}
	// Next run: still queued.
	h2 := start(t, r, nil, agent)
	snap := h2.svc.Snapshot()
	if it, ok := item(snap, "ch-2"); !ok || it.Status != StatusWaitingHuman {
		t.Fatalf("after restart: %+v", snap.Items)
	}
	if !h2.svc.Idle() {
		// Idle only after the restart's reconcile pass.
		h2.waitFor("idle", func(s Snapshot) bool { return s.Idle })
	}
}

// A resolver that claims success without resolving fails three times; then
// the item waits for a person.
func TestResolverFailsThreeTimes(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	b1, _ := r.agentBranch("ch-1", "main", map[string]string{"a.txt": "a1\nONE\na3\na4\na5\n"}, false)
	b2, wt2 := r.agentBranch("ch-2", "main", map[string]string{"a.txt": "a1\nTWO\na3\na4\na5\n"}, true)
	agent := &scriptAgent{script: `echo '<chorus>RESOLVED</chorus>'`}
	h := start(t, r, nil, agent)
	h.enqueue(Request{TaskID: "ch-1", Branch: b1})
	h.waitStatus("ch-1", StatusLanded)
	h.enqueue(Request{TaskID: "ch-2", Branch: b2, Agent: "a", Worktree: wt2})
	it := h.waitStatus("ch-2", StatusWaitingHuman)
	if it.Retries != 3 || agent.calls.Load() != 3 {
		t.Fatalf("retries %d calls %d", it.Retries, agent.calls.Load())
	}
	if !strings.Contains(it.LastError, "unmerged") && !strings.Contains(it.LastError, "not concluded") {
		t.Fatalf("last error %q", it.LastError)
	}
	// A person resolves on the branch and retries.
	cmdMerge := []string{"merge", "-q", "main"}
	if _, err := git(t.Context(), wt2, cmdMerge...); err == nil {
		t.Fatal("expected a conflict")
	}
	r.writeIn(wt2, "a.txt", "a1\nONE+TWO\na3\na4\na5\n")
	r.gitIn(wt2, "commit", "-q", "-am", "merge main by hand")
	if err := h.svc.Retry("ch-2"); err != nil {
		t.Fatal(err)
	}
	h.waitStatus("ch-2", StatusLanded)
	if h.svc.Snapshot().Stats.MergesManual != 1 {
		t.Fatal("want a manual merge")
	}
}
