package merge

import (
	"path/filepath"
	"strings"
	"testing"
)

// hostile holds what a task title or agent name must not carry into
// history: OSC 52 (sets the reader's clipboard), clear-screen, a bidi
// override, a bell and a second line.
const hostile = "fix\x1b]52;c;ZXZpbA==\x07 login\x1b[2J\x1b[H \u202eevil\x07\nSigned-off-by: nobody"

// controlBytes lists the control bytes in s other than newline.
func controlBytes(s string) []byte {
	var bad []byte
	for _, c := range []byte(s) {
		if (c < 0x20 && c != '\n') || c == 0x7f {
			bad = append(bad, c)
		}
	}
	return bad
}

func checkCleanLog(t *testing.T, r *repo, wantSubject string) {
	t.Helper()
	log := r.git("log", "--format=%B", "main")
	if bad := controlBytes(log); len(bad) > 0 || strings.Contains(log, "\u202e") {
		t.Fatalf("git log carries control bytes %q:\n%q", bad, log)
	}
	if strings.Contains(log, "Signed-off-by: nobody") {
		t.Fatalf("a title's second line reached the message:\n%s", log)
	}
	if !strings.Contains(log, wantSubject) {
		t.Fatalf("git log lacks %q:\n%s", wantSubject, log)
	}
}

// A landed task's title and agent reach `git log` with their escape
// sequences and control bytes removed, on the single-merge path.
func TestTitleSanitisedInMergeCommit(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	branch, wt := r.agentBranch("ch-1", "main", map[string]string{"new.txt": "new\n"}, true)
	h := start(t, r, nil, nil)
	h.enqueue(Request{TaskID: "ch-1", Branch: branch, Title: hostile, Agent: "a\x1b[31m", Worktree: wt})
	h.waitStatus("ch-1", StatusLanded)
	checkCleanLog(t, r, "Merge "+branch+": fix login evil")
	if log := r.git("log", "--format=%B", "main"); !strings.Contains(log, "Chorus-Agent: a\n") {
		t.Fatalf("agent trailer not cleaned:\n%q", log)
	}
}

// The same on the batch path (quality commands configured, several
// items merged one on another).
func TestTitleSanitisedInBatch(t *testing.T) {
	t.Parallel()
	r := newRepo(t)
	opt := baseOptions(r.dir)
	opt.Quality = quality("true")
	store := &fileStore{path: filepath.Join(r.dir, ".chorus", "state.json")}
	svc, err := New(opt, store.persist, nil)
	if err != nil {
		t.Fatal(err)
	}
	var branches []string
	for _, id := range []string{"b-1", "b-2"} {
		b, _ := r.agentBranch(id, "main", map[string]string{id + ".txt": id + "\n"}, false)
		branches = append(branches, b)
		if err := svc.Enqueue(Request{TaskID: id, Branch: b, Title: hostile}); err != nil {
			t.Fatal(err)
		}
	}
	h := &harness{t: t, r: r, svc: svc, store: store, done: make(chan error, 1)}
	h.run()
	t.Cleanup(h.stop)
	h.waitStatus("b-1", StatusLanded)
	h.waitStatus("b-2", StatusLanded)
	checkCleanLog(t, r, "Merge "+branches[1]+": fix login evil")
}
