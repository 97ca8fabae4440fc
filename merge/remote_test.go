package merge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// remoteOf gives r a bare remote "origin" holding its main, and a
// teammate's clone of it.
func remoteOf(t *testing.T, r *repo) (bare, mate string) {
	t.Helper()
	bare = filepath.Join(t.TempDir(), "remote.git")
	r.git("clone", "-q", "--bare", r.dir, bare)
	r.git("remote", "add", "origin", bare)
	r.git("fetch", "-q", "origin")
	mate = filepath.Join(t.TempDir(), "mate")
	r.git("clone", "-q", bare, mate)
	r.gitIn(mate, "config", "user.name", "Mate")
	r.gitIn(mate, "config", "user.email", "mate@example.com")
	return bare, mate
}

// With merge.remote, a candidate lands by a push that holds only if the
// remote's main has not moved. Here a teammate lands while the candidate
// is being checked: the push is refused, the candidate is built again on
// the teammate's tip and checked again, and then lands; the remote's main
// is that checked commit, and the local main follows it.
func TestRemoteLandingRebuildsWhenATeammateLandedFirst(t *testing.T) {
	r := newRepo(t)
	bare, mate := remoteOf(t, r)
	r.commitIn(mate, "teammate's work", map[string]string{"team.txt": "from the team\n"})
	dir := t.TempDir()
	runs, once := filepath.Join(dir, "runs"), filepath.Join(dir, "pushed")
	// The check records the tree it checked; its first run is when the
	// teammate's push happens.
	check := fmt.Sprintf(`git write-tree >> %q 2>/dev/null || ls >> %q; if [ ! -e %q ]; then touch %q; git -C %q push -q origin HEAD:main; fi`,
		runs, runs, once, once, mate)
	h := start(t, r, func(o *Options) {
		o.Quality = quality(check)
		o.Merge.Remote = "origin"
	}, nil)
	b, _ := r.agentBranch("ch-1", "main", map[string]string{"mine.txt": "mine\n"}, false)
	h.enqueue(Request{TaskID: "ch-1", Branch: b})
	it := h.waitStatus("ch-1", StatusLanded)
	remoteMain := r.gitIn(bare, "rev-parse", "main")
	if remoteMain != it.Candidate {
		t.Fatalf("remote main %s, landed candidate %s", remoteMain, it.Candidate)
	}
	for _, f := range []string{"team.txt", "mine.txt"} {
		if _, err := git(t.Context(), bare, "cat-file", "-e", "main:"+f); err != nil {
			t.Fatalf("remote main lacks %s: %v", f, err)
		}
	}
	if local := r.git("rev-parse", "main"); local != remoteMain {
		t.Fatalf("local main %s, remote %s", local, remoteMain)
	}
	b2, _ := os.ReadFile(runs)
	if n := len(strings.Fields(string(b2))); n != 2 {
		t.Fatalf("the check ran %d times; want 2 (on the first tip, then on the teammate's)", n)
	}
}

// The team's landings reach a queue that was idle: the next candidate is
// built on the remote's tip, and the local main follows it.
func TestRemoteTipIsTheBase(t *testing.T) {
	r := newRepo(t)
	bare, mate := remoteOf(t, r)
	h := start(t, r, func(o *Options) { o.Merge.Remote = "origin" }, nil)
	r.commitIn(mate, "teammate's work", map[string]string{"team.txt": "from the team\n"})
	r.gitIn(mate, "push", "-q", "origin", "HEAD:main")
	b, _ := r.agentBranch("ch-1", "main~0", map[string]string{"mine.txt": "mine\n"}, false)
	h.enqueue(Request{TaskID: "ch-1", Branch: b})
	it := h.waitStatus("ch-1", StatusLanded)
	if got := r.gitIn(bare, "rev-parse", "main"); got != it.Candidate {
		t.Fatalf("remote main %s, landed %s", got, it.Candidate)
	}
	if got := r.show("main", "team.txt"); got != "from the team" {
		t.Fatalf("local main lacks the team's work: %q", got)
	}
}
