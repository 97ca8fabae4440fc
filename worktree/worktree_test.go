package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/proc"
)

func TestMain(m *testing.M) {
	// Hermetic git: no user or system configuration leaks into the tests.
	dir, err := os.MkdirTemp("", "wt-gitconfig")
	if err != nil {
		panic(err)
	}
	empty := filepath.Join(dir, "gitconfig")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		panic(err)
	}
	os.Setenv("GIT_CONFIG_GLOBAL", empty)
	os.Setenv("GIT_CONFIG_NOSYSTEM", "1")
	for _, k := range []string{"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_DIR", "GIT_WORK_TREE"} {
		os.Unsetenv(k)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func run(t *testing.T, dir string, argv ...string) string {
	t.Helper()
	res, err := proc.Run(context.Background(), proc.Spec{Argv: argv, Dir: dir})
	if err != nil {
		t.Fatalf("%v: %v", argv, err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("%v: exit %d: %s%s", argv, res.ExitCode, res.Stdout, res.Stderr)
	}
	return strings.TrimSpace(string(res.Stdout))
}

// newRepo makes a repository on main with one commit. The commit itself
// uses -c identity so the repository's own config stays as asked.
func newRepo(t *testing.T, identity bool) string {
	t.Helper()
	dir := t.TempDir()
	run(t, dir, "git", "init", "-q", "-b", "main")
	if identity {
		run(t, dir, "git", "config", "user.name", "Repo Owner")
		run(t, dir, "git", "config", "user.email", "owner@example.com")
	}
	write(t, filepath.Join(dir, "README.md"), "hello\n")
	write(t, filepath.Join(dir, ".gitignore"), ".env\n")
	run(t, dir, "git", "add", "-A")
	run(t, dir, "git", "-c", "user.name=T", "-c", "user.email=t@t", "commit", "-q", "-m", "init")
	return dir
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

func TestNameIsSafe(t *testing.T) {
	hostile := []string{
		"ch-12", "bd-a3f8.1", "../../etc", "a/b", "a b", "a-b", "~root", "a:b", "a^b", "a?b", "a*b",
		"a[b", `a\b`, "a..b", "a@{1}", "@", "-rf", "--force", "x.lock", "x.lock.lock", "x.", ".hidden",
		"a\x00b", "a\nb", "a\x1b[31mb", "ümlaut", "..", ".", "/", "//", "refs/heads/main", "HEAD",
		strings.Repeat("x", 300), "a/../../b", "a.lock/b", "tab\tid", "del\x7f",
	}
	gitDir := t.TempDir()
	seen := map[string]string{}
	for _, id := range hostile {
		for _, agent := range []string{"claude", id} {
			dir, branch, err := Name(agent, id)
			if err != nil {
				t.Fatalf("Name(%q, %q): %v", agent, id, err)
			}
			if !filepath.IsLocal(dir) || filepath.Dir(dir) != Dir {
				t.Errorf("Name(%q, %q) dir %q escapes %s", agent, id, dir, Dir)
			}
			if err := checkRel(dir); err != nil {
				t.Error(err)
			}
			res, err := proc.Run(context.Background(), proc.Spec{Argv: []string{"git", "check-ref-format", "refs/heads/" + branch}, Dir: gitDir})
			if err != nil || res.ExitCode != 0 {
				t.Errorf("Name(%q, %q) branch %q rejected by git check-ref-format", agent, id, branch)
			}
			a, tk, ok := ParseBranch(branch)
			if !ok || a != Slug(agent) || tk != Slug(id) {
				t.Errorf("ParseBranch(%q) = %q %q %v", branch, a, tk, ok)
			}
			d2, b2, _ := Name(agent, id)
			if d2 != dir || b2 != branch {
				t.Errorf("Name(%q, %q) not deterministic", agent, id)
			}
		}
		s := Slug(id)
		if prev, dup := seen[s]; dup {
			t.Errorf("Slug(%q) == Slug(%q) == %q", id, prev, s)
		}
		seen[s] = id
	}
	for _, id := range []string{"ch-12", "bd-a3f8.1", "task_7"} {
		if Slug(id) != id {
			t.Errorf("safe id %q changed to %q", id, Slug(id))
		}
	}
	if _, _, err := Name("", "x"); !errors.Is(err, ErrEmptyName) {
		t.Errorf("empty agent: %v", err)
	}
	if _, _, err := Name("claude", ""); !errors.Is(err, ErrEmptyName) {
		t.Errorf("empty task: %v", err)
	}
}

func TestEnsureCreatesThenReuses(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	write(t, filepath.Join(repo, ".env"), "SECRET=1\n")
	m := &Manager{RepoDir: repo, Target: "main"}
	opts := Options{
		Scratchpad: "# Scratchpad\n",
		Copy:       []string{".env", "missing.txt"},
		Setup:      []string{"echo ran >> setup.log", `printf '%s' "$CHORUS_X" > env.txt`},
		Env:        []string{"CHORUS_X=from-env"},
	}
	wt, err := m.Ensure(ctx, "claude", "ch-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if !wt.Created || wt.Branch != "agent/claude/ch-1" || wt.Dir != filepath.Join(repo, ".worktrees", "claude-ch-1") {
		t.Fatalf("unexpected worktree %+v", wt)
	}
	mainHead := run(t, repo, "git", "rev-parse", "main")
	if wt.Head != mainHead {
		t.Errorf("head %s, want main tip %s", wt.Head, mainHead)
	}
	if got := run(t, wt.Dir, "git", "branch", "--show-current"); got != wt.Branch {
		t.Errorf("checked out %q", got)
	}
	if read(t, filepath.Join(wt.Dir, ".agent", "scratchpad.md")) != "# Scratchpad\n" {
		t.Error("scratchpad not written")
	}
	if read(t, filepath.Join(wt.Dir, ".env")) != "SECRET=1\n" {
		t.Error(".env not copied")
	}
	if read(t, filepath.Join(wt.Dir, "env.txt")) != "from-env" {
		t.Error("setup did not see Options.Env")
	}
	// The user's checkout shows nothing new: .worktrees/ is excluded.
	if st := run(t, repo, "git", "status", "--porcelain"); st != "" {
		t.Errorf("main checkout not clean:\n%s", st)
	}

	// The agent works; a retry must keep everything.
	write(t, filepath.Join(wt.Dir, ".agent", "scratchpad.md"), "notes\n")
	write(t, filepath.Join(wt.Dir, ".env"), "MINE=1\n")
	write(t, filepath.Join(wt.Dir, "work.go"), "package x\n")
	again, err := m.Ensure(ctx, "claude", "ch-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if again.Created || again.Dir != wt.Dir {
		t.Errorf("second Ensure should reuse: %+v", again)
	}
	if read(t, filepath.Join(wt.Dir, ".agent", "scratchpad.md")) != "notes\n" ||
		read(t, filepath.Join(wt.Dir, ".env")) != "MINE=1\n" || !exists(filepath.Join(wt.Dir, "work.go")) {
		t.Error("reuse clobbered the agent's files")
	}
	if got := read(t, filepath.Join(wt.Dir, "setup.log")); got != "ran\n" {
		t.Errorf("setup ran again: %q", got)
	}
	// A changed setup list runs again.
	opts.Setup = append(opts.Setup, "true")
	if _, err := m.Ensure(ctx, "claude", "ch-1", opts); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(wt.Dir, "setup.log")); got != "ran\nran\n" {
		t.Errorf("changed setup did not rerun: %q", got)
	}
	list, err := m.List(ctx)
	if err != nil || len(list) != 1 || list[0].Branch != wt.Branch || list[0].Missing {
		t.Errorf("List = %+v, %v", list, err)
	}
}

func TestCopyRefusesUnignoredFile(t *testing.T) {
	repo := newRepo(t, true)
	write(t, filepath.Join(repo, "secrets.txt"), "token\n")
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(context.Background(), "claude", "t9", Options{Copy: []string{"secrets.txt"}})
	if err == nil || !strings.Contains(err.Error(), "gitignore") {
		t.Fatalf("copying a file git would commit: %v", err)
	}
	if exists(filepath.Join(wt.Dir, "secrets.txt")) {
		t.Error("file copied anyway")
	}
}

func TestEnsureSetupFailureReported(t *testing.T) {
	ctx := context.Background()
	m := &Manager{RepoDir: newRepo(t, true), Target: "main"}
	wt, err := m.Ensure(ctx, "codex", "t2", Options{Setup: []string{"echo boom >&2; exit 3"}})
	var se *SetupError
	if !errors.As(err, &se) {
		t.Fatalf("want SetupError, got %v", err)
	}
	if se.ExitCode != 3 || !strings.Contains(se.Output, "boom") || !strings.Contains(err.Error(), "boom") {
		t.Errorf("setup error lacks detail: %+v", se)
	}
	if !exists(wt.Dir) {
		t.Error("worktree should exist despite setup failure")
	}
	// A failed setup runs again on retry.
	if _, err := m.Ensure(ctx, "codex", "t2", Options{Setup: []string{"echo boom >&2; exit 3"}}); !errors.As(err, &se) {
		t.Errorf("failed setup not retried: %v", err)
	}
}

func TestEnsureStaleRegistrationKeepsBranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "t3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Dir, "work.txt"), "work\n")
	if ok, err := m.CommitWIP(ctx, wt, "wip"); !ok || err != nil {
		t.Fatalf("CommitWIP = %v, %v", ok, err)
	}
	work := run(t, wt.Dir, "git", "rev-parse", "HEAD")
	if err := os.RemoveAll(wt.Dir); err != nil {
		t.Fatal(err)
	}
	list, _ := m.List(ctx)
	if len(list) != 1 || !list[0].Missing {
		t.Fatalf("deleted dir should list as missing: %+v", list)
	}
	again, err := m.Ensure(ctx, "claude", "t3", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !again.Created || again.Head != work || read(t, filepath.Join(again.Dir, "work.txt")) != "work\n" {
		t.Errorf("recreated worktree lost work: %+v", again)
	}
}

func TestEnsureAttachesExistingBranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	run(t, repo, "git", "branch", "agent/claude/t4", "main")
	// Give the branch a commit of its own, without touching the checkout.
	tree := run(t, repo, "git", "rev-parse", "main^{tree}")
	c := run(t, repo, "git", "commit-tree", tree, "-p", "main", "-m", "earlier work")
	run(t, repo, "git", "update-ref", "refs/heads/agent/claude/t4", c)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "t4", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if wt.Head != c {
		t.Errorf("attached at %s, want existing branch tip %s", wt.Head, c)
	}
}

func TestEnsureRefusesForeignDir(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	write(t, filepath.Join(repo, ".worktrees", "claude-t5", "precious.txt"), "x")
	if _, err := m.Ensure(ctx, "claude", "t5", Options{}); err == nil {
		t.Fatal("Ensure took over a directory git does not know")
	}
	if read(t, filepath.Join(repo, ".worktrees", "claude-t5", "precious.txt")) != "x" {
		t.Fatal("foreign file touched")
	}
	// Two names that map to one directory must not share it.
	if _, err := m.Ensure(ctx, "claude-x", "y", Options{}); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Ensure(ctx, "claude", "x-y", Options{}); err == nil {
		t.Fatal("second agent reused another agent's worktree")
	}
}

func TestRemoveOnlyWhenMerged(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "t6", Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Uncommitted work: refuse.
	write(t, filepath.Join(wt.Dir, "feature.txt"), "feature\n")
	if err := m.Remove(ctx, wt, ""); !errors.Is(err, ErrDirty) {
		t.Fatalf("dirty worktree: want ErrDirty, got %v", err)
	}
	if _, err := m.CommitWIP(ctx, wt, "feature"); err != nil {
		t.Fatal(err)
	}
	// Committed but not merged: refuse.
	if err := m.Remove(ctx, wt, "main"); !errors.Is(err, ErrUnmerged) {
		t.Fatalf("unmerged branch: want ErrUnmerged, got %v", err)
	}
	if !exists(wt.Dir) {
		t.Fatal("refused Remove deleted the worktree")
	}
	run(t, repo, "git", "show-ref", "--verify", "refs/heads/"+wt.Branch)

	run(t, repo, "git", "merge", "-q", "--ff-only", wt.Branch)
	write(t, filepath.Join(wt.Dir, ".env"), "ignored file\n")
	if err := m.Remove(ctx, wt, ""); err != nil {
		t.Fatal(err)
	}
	if exists(wt.Dir) {
		t.Error("worktree dir still there")
	}
	if res, _ := proc.Run(ctx, proc.Spec{Argv: []string{"git", "show-ref", "--verify", "--quiet", "refs/heads/" + wt.Branch}, Dir: repo}); res.ExitCode == 0 {
		t.Error("branch still there")
	}
	if list, _ := m.List(ctx); len(list) != 0 {
		t.Errorf("List after Remove = %+v", list)
	}
	// Remove refuses anything outside .worktrees/.
	if err := m.Remove(ctx, Worktree{Dir: repo, Branch: "agent/claude/t6"}, ""); err == nil {
		t.Error("Remove accepted the main checkout")
	}
}

func TestCommitWIPIdentity(t *testing.T) {
	ctx := context.Background()
	for _, withIdentity := range []bool{false, true} {
		repo := newRepo(t, withIdentity)
		m := &Manager{RepoDir: repo, Target: "main"}
		wt, err := m.Ensure(ctx, "claude", "t7", Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := m.CommitWIP(ctx, wt, "nothing"); ok || err != nil {
			t.Fatalf("clean worktree: CommitWIP = %v, %v", ok, err)
		}
		write(t, filepath.Join(wt.Dir, "README.md"), "changed\n")
		write(t, filepath.Join(wt.Dir, "new", "file.txt"), "untracked\n")
		// A hook that would fail must not block saving work.
		hooks := run(t, repo, "git", "rev-parse", "--git-path", "hooks")
		write(t, filepath.Join(repo, hooks, "pre-commit"), "#!/bin/sh\nexit 1\n")
		os.Chmod(filepath.Join(repo, hooks, "pre-commit"), 0o755)
		ok, err := m.CommitWIP(ctx, wt, "wip: stopped")
		if !ok || err != nil {
			t.Fatalf("CommitWIP = %v, %v", ok, err)
		}
		if st := run(t, wt.Dir, "git", "status", "--porcelain", "--untracked-files=all"); st != "" {
			t.Errorf("still dirty:\n%s", st)
		}
		author := run(t, wt.Dir, "git", "log", "-1", "--format=%an <%ae>|%s")
		want := "Chorus <chorus@localhost>|wip: stopped"
		if withIdentity {
			want = "Repo Owner <owner@example.com>|wip: stopped"
		}
		if author != want {
			t.Errorf("identity %v: got %q, want %q", withIdentity, author, want)
		}
		commits, err := m.CommitsSince(ctx, wt, "main")
		if err != nil || len(commits) != 1 {
			t.Errorf("CommitsSince = %v, %v", commits, err)
		}
		head, err := m.HeadCommit(ctx, wt)
		if err != nil || len(commits) == 1 && head != commits[0] {
			t.Errorf("HeadCommit = %q, %v", head, err)
		}
		// The user's checkout was not touched.
		if st := run(t, repo, "git", "status", "--porcelain"); st != "" {
			t.Errorf("main checkout changed:\n%s", st)
		}
		if cfg, _ := proc.Run(ctx, proc.Spec{Argv: []string{"git", "config", "user.name"}, Dir: repo}); !withIdentity && cfg.ExitCode == 0 {
			t.Error("fallback identity was written to the repository config")
		}
	}
}

// TestEnsureRemoveNoDeadlock runs the engine's pattern for claims lost after
// the worktree exists: several tasks at once, each Ensure followed by a
// Remove, while the others Ensure. With Remove taking the two locks in the
// opposite order to attach, this froze within a few rounds.
func TestEnsureRemoveNoDeadlock(t *testing.T) {
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	ctx := context.Background()
	const workers, rounds = 3, 6
	done := make(chan error, workers)
	for w := 0; w < workers; w++ {
		go func(w int) {
			for r := 0; r < rounds; r++ {
				wt, err := m.Ensure(ctx, "claude", fmt.Sprintf("ch-%d-%d", w, r), Options{})
				if err != nil {
					done <- err
					return
				}
				if err := m.Remove(ctx, wt, ""); err != nil {
					done <- err
					return
				}
			}
			done <- nil
		}(w)
	}
	// A deadlock never returns: give up well before the test binary's own
	// timeout so the failure shows where every goroutine was stuck.
	limit := 3 * time.Minute
	if d, ok := t.Deadline(); ok && time.Until(d)/2 < limit {
		limit = time.Until(d) / 2
	}
	watchdog := time.NewTimer(limit)
	defer watchdog.Stop()
	for w := 0; w < workers; w++ {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-watchdog.C:
			buf := make([]byte, 1<<20)
			t.Fatalf("Ensure/Remove deadlocked:\n%s", buf[:runtime.Stack(buf, true)])
		}
	}
	if list, err := m.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("worktrees left: %v %v", list, err)
	}
}

// A worktree deleted behind Chorus's back is named as such, not as a
// failure to start git.
func TestDeletedWorktreeSaysSo(t *testing.T) {
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(context.Background(), "claude", "ch-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.RemoveAll(wt.Dir); err != nil {
		t.Fatal(err)
	}
	_, err = m.CommitWIP(context.Background(), wt, "wip")
	if !errors.Is(err, proc.ErrNoDir) || !strings.Contains(err.Error(), "was deleted while in use") || strings.Contains(err.Error(), "fork/exec") {
		t.Fatalf("got %v", err)
	}
}

func TestOwnWork(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "ch-1", Options{Scratchpad: "# Scratchpad\n"})
	if err != nil {
		t.Fatal(err)
	}
	has := func(committed bool, uncommitted []string, what string) {
		t.Helper()
		got, err := m.OwnWork(ctx, wt, "")
		if err != nil {
			t.Fatal(err)
		}
		if got.Committed != committed || !slices.Equal(got.Uncommitted, uncommitted) {
			t.Fatalf("%s: OwnWork = %+v, want committed %v, uncommitted %q", what, got, committed, uncommitted)
		}
		if got.Empty() != (!committed && len(uncommitted) == 0) {
			t.Fatalf("%s: Empty = %v", what, got.Empty())
		}
		// Committed work is read in-process, with git's answer.
		fast, err := m.committedWorkInProcess(ctx, wt)
		if err != nil {
			t.Fatalf("%s: not answered in-process: %v", what, err)
		}
		if slow, err := m.committedWorkGit(ctx, wt); err != nil || slow != fast {
			t.Fatalf("%s: committed work in-process %v, git says %v (%v)", what, fast, slow, err)
		}
	}
	has(false, nil, "a new worktree with its scratchpad")
	write(t, filepath.Join(wt.Dir, ".agent", "scratchpad.md"), "notes only\n")
	has(false, nil, "notes in the scratchpad")
	write(t, filepath.Join(wt.Dir, "new.txt"), "x\n")
	has(false, []string{"new.txt"}, "an untracked file")
	run(t, wt.Dir, "git", "add", "new.txt")
	run(t, wt.Dir, "git", "commit", "-q", "-m", "add")
	has(true, nil, "a commit of its own")
	write(t, filepath.Join(wt.Dir, "sub dir", "scratch.txt"), "y\n")
	run(t, wt.Dir, "git", "mv", "new.txt", "renamed.txt")
	has(true, []string{"renamed.txt", "sub dir/scratch.txt"}, "committed plus a staged rename and an untracked file")
	run(t, wt.Dir, "git", "mv", "renamed.txt", "new.txt")
	run(t, wt.Dir, "rm", "-r", "sub dir")
	run(t, wt.Dir, "git", "revert", "--no-edit", "HEAD")
	has(false, nil, "a commit and its revert")
	// The target moving on is not the branch's work.
	write(t, filepath.Join(repo, "other.txt"), "y\n")
	run(t, repo, "git", "add", "other.txt")
	run(t, repo, "git", "commit", "-q", "-m", "other")
	has(false, nil, "the target moved on")
	write(t, filepath.Join(wt.Dir, "README.md"), "changed\n")
	has(false, []string{"README.md"}, "a modified tracked file")
}

// A branch that only fast-forwarded to the target (other tasks' merged
// commits, nothing of its own) has no work, though its worktree's HEAD
// moved since it was made.
func TestOwnWorkFastForwardOnly(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "claude", "ch-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(repo, "landed.txt"), "another task's\n")
	run(t, repo, "git", "add", "landed.txt")
	run(t, repo, "git", "commit", "-q", "-m", "another task landed")
	run(t, wt.Dir, "git", "merge", "-q", "--ff-only", "main")
	if head := run(t, wt.Dir, "git", "rev-parse", "HEAD"); head == wt.Head {
		t.Fatal("the branch did not move")
	}
	w, err := m.OwnWork(ctx, wt, "")
	if err != nil || !w.Empty() {
		t.Fatalf("OwnWork = %+v, %v; want nothing of its own", w, err)
	}
	if slow, err := m.committedWorkGit(ctx, wt); err != nil || slow {
		t.Fatalf("git: committed = %v, %v", slow, err)
	}
	// Following the queue's landings is not moving the target onto it.
	if w, err := m.OwnWork(ctx, wt, run(t, repo, "git", "rev-parse", "main")); err != nil || !w.Empty() {
		t.Fatalf("OwnWork with main verified = %+v, %v; want nothing of its own", w, err)
	}
	// Its own commit on top counts.
	write(t, filepath.Join(wt.Dir, "mine.txt"), "mine\n")
	run(t, wt.Dir, "git", "add", "mine.txt")
	run(t, wt.Dir, "git", "commit", "-q", "-m", "mine")
	if w, err := m.OwnWork(ctx, wt, ""); err != nil || !w.Committed {
		t.Fatalf("OwnWork = %+v, %v; want committed", w, err)
	}
}

func TestStatusPaths(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"?? a.txt\x00", []string{"a.txt"}},
		{" M b\x00?? c d\x00", []string{"b", "c d"}},
		{"R  new\x00old\x00?? x\x00", []string{"new", "x"}},
		{"C  copy\x00orig\x00", []string{"copy"}},
	} {
		if got := statusPaths(c.in); !slices.Equal(got, c.want) {
			t.Errorf("statusPaths(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestClearStaleLocksBranchRef: a commit killed between writing its object
// and moving the branch leaves refs/heads/<branch>.lock in the shared git
// directory; until it goes, every commit on that branch fails.
func TestClearStaleLocksBranchRef(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	wt, err := m.Ensure(ctx, "script", "t9", Options{})
	if err != nil {
		t.Fatal(err)
	}
	common := run(t, wt.Dir, "git", "rev-parse", "--path-format=absolute", "--git-common-dir")
	private := run(t, wt.Dir, "git", "rev-parse", "--path-format=absolute", "--git-dir")
	locks := []string{
		filepath.Join(common, "refs", "heads", filepath.FromSlash(wt.Branch)+".lock"),
		filepath.Join(private, "index.lock"),
	}
	for _, l := range locks {
		write(t, l, "")
	}
	write(t, filepath.Join(wt.Dir, "work.txt"), "work\n")
	if ok, err := m.CommitWIP(ctx, wt, "blocked"); ok || err == nil {
		t.Fatalf("commit with the locks held: %v, %v (want an error)", ok, err)
	}
	removed, err := m.ClearStaleLocks(wt)
	if err != nil {
		t.Fatal(err)
	}
	if len(removed) != len(locks) {
		t.Errorf("removed %v, want %v", removed, locks)
	}
	if ok, err := m.CommitWIP(ctx, wt, "saved"); !ok || err != nil {
		t.Fatalf("CommitWIP after clearing = %v, %v", ok, err)
	}
	// The main checkout's own locks are not the worktree's to clear.
	if exists(filepath.Join(common, "index.lock")) {
		t.Error("index.lock appeared in the main checkout")
	}
}

// A branch the target contains because something moved the target onto
// it outside the merge queue (an agent's update-ref) keeps the work it
// gained since the worktree was made: the queue, held by the move, lands
// it once a person accepts the target.
func TestOwnWorkWhenTargetMovedOntoBranch(t *testing.T) {
	ctx := context.Background()
	repo := newRepo(t, true)
	m := &Manager{RepoDir: repo, Target: "main"}
	verified := run(t, repo, "git", "rev-parse", "main")
	wt, err := m.Ensure(ctx, "claude", "ch-1", Options{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(wt.Dir, "new.txt"), "x\n")
	run(t, wt.Dir, "git", "add", "new.txt")
	run(t, wt.Dir, "git", "commit", "-q", "-m", "add")
	run(t, wt.Dir, "git", "update-ref", "refs/heads/main", "HEAD")
	if w, err := m.OwnWork(ctx, wt, verified); err != nil || !w.Committed {
		t.Fatalf("OwnWork = %+v, %v; want committed", w, err)
	}
	// Judged against the target alone, it has nothing left to add.
	if w, err := m.OwnWork(ctx, wt, ""); err != nil || w.Committed {
		t.Fatalf("OwnWork without a verified tip = %+v, %v", w, err)
	}
}
