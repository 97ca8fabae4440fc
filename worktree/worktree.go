// Package worktree is the one owner of worktrees and branches: it creates,
// reuses and removes the git worktrees agents work in (one per agent and
// task, at .worktrees/{agent}-{task} on branch agent/{agent}/{task}, made
// from the target branch's tip) and Chorus's own (scratch.go), deletes
// branches, and keeps under refs/chorus/kept/ whatever a removal would lose
// (keep.go). No other package runs `git worktree add/remove/prune` or
// `git branch -D`; internal/layers checks it.
//
// Every git call goes through proc (argv only, with a timeout). Ids and
// branch names are argv elements, never shell text; the only shell strings
// run here are the user's own setup commands.
package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/proc"
)

// Worktree is one agent worktree.
type Worktree struct {
	Dir    string // absolute path
	Branch string // short name, e.g. agent/claude/ch-12
	Head   string // commit checked out when last looked at
	// Created is true when Ensure made the worktree now (false: reused).
	Created bool
	// Missing is set by List for a registration whose directory is gone.
	Missing bool
}

// Options tune Ensure.
type Options struct {
	// Scratchpad is written to .agent/scratchpad.md when that file does not
	// exist yet; empty means do not write one.
	Scratchpad string
	// Copy names files or folders (relative to the repository root) that
	// git does not carry, e.g. ".env"; each is copied from the main checkout
	// when it exists there and not yet in the worktree.
	Copy []string
	// Setup holds the user's shell commands, run in order with sh -c in the
	// worktree. They run once per worktree: again only when the list changes
	// or an earlier run failed.
	Setup []string
	// SetupTimeout bounds each setup command (default 10 minutes).
	SetupTimeout time.Duration
	// Env is added to the environment of setup commands.
	Env []string
}

// Manager handles the agent worktrees of one repository. The zero value is
// not usable: set RepoDir and Target.
type Manager struct {
	RepoDir string // root of the main checkout
	Target  string // branch agents start from and merge into, e.g. main
	// GitTimeout bounds each git call (default 2 minutes).
	GitTimeout time.Duration

	// mu serialises changes to agent worktrees and their branches; git
	// takes its own locks but fails rather than waits when they are held.
	//
	// Lock order: mu first, then reg. Every method that needs both takes
	// them in this order; the reverse order deadlocks against a concurrent
	// Ensure (one holds mu and waits for reg while the other holds reg and
	// waits for mu). Callers' own locks come before both: no method calls
	// out of this package while holding either.
	mu       sync.Mutex
	excluded bool            // info/exclude checked (under mu)
	filling  map[string]bool // worktrees made in-process, not yet filled (under mu)

	// reg serialises `git worktree add/remove/prune` and in-process
	// unregistering: git reads every registered worktree's admin files
	// while adding one, and fails ("failed to read …/commondir") if another
	// add is halfway through writing them. One Manager per repository is
	// shared by everything in the process that adds or removes worktrees
	// (the engine's agents, the merge service, the planning run).
	reg sync.Mutex

	// Objects, when set before first use, is a store shared with another
	// user of the repository (gitx.ObjectStore.Share); Close releases it.
	Objects *gitx.ObjectStore

	// spares are landed worktrees' checkouts kept for new ones (spare.go).
	spareMu   sync.Mutex
	spares    []spare
	sparesOff bool
	sweeping  sync.WaitGroup

	objsOnce sync.Once
	objs     *gitx.ObjectStore // commits and trees read in-process (objects)
	common   string            // the git common dir, "" when unknown
}

// objects returns the repository's object store and common dir, opened on
// first use; ok is false when they are not available (git is asked then).
func (m *Manager) objects(ctx context.Context) (*gitx.ObjectStore, string, bool) {
	m.objsOnce.Do(func() {
		if c, err := gitx.CommonDir(ctx, m.RepoDir); err == nil && c != "" {
			m.common, m.objs = c, m.Objects
			if m.objs == nil {
				m.objs = gitx.OpenObjects(m.RepoDir)
			}
		}
	})
	return m.objs, m.common, m.objs != nil
}

// commonDir is the repository's git common dir, "" when unknown.
func (m *Manager) commonDir(ctx context.Context) string {
	if _, c, ok := m.objects(ctx); ok {
		return c
	}
	c, _ := gitx.CommonDir(ctx, m.RepoDir)
	return c
}

// Close ends the object store's git process, if one was started, or
// releases the shared one.
func (m *Manager) Close() error {
	m.dropSpares()
	m.objsOnce.Do(func() {}) // no store opens after Close
	if m.objs != nil {
		return m.objs.Close()
	}
	if m.Objects != nil {
		return m.Objects.Close()
	}
	return nil
}

// SetupError is returned by Ensure when a setup command failed. The
// worktree itself exists and is returned alongside it.
type SetupError struct {
	Command  string
	ExitCode int
	Output   string // combined stdout and stderr, truncated
	Err      error  // timeout or start failure, if any
}

func (e *SetupError) Error() string {
	msg := fmt.Sprintf("worktree setup %q failed", e.Command)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	} else {
		msg += fmt.Sprintf(" with exit code %d", e.ExitCode)
	}
	if e.Output != "" {
		msg += ":\n" + e.Output
	}
	return msg
}

// ErrUnmerged is wrapped by Remove's error when the branch has commits the
// target does not have.
var ErrUnmerged = errors.New("branch has commits not in the target")

// ErrDirty is wrapped by Remove's error when the worktree has uncommitted
// changes.
var ErrDirty = errors.New("worktree has uncommitted changes")

func (m *Manager) timeout() time.Duration {
	if m.GitTimeout > 0 {
		return m.GitTimeout
	}
	return 2 * time.Minute
}

// git runs git in dir and returns trimmed stdout; a non-zero exit is an
// error carrying git's message.
func (m *Manager) git(ctx context.Context, dir string, args ...string) (string, error) {
	out, err := m.gitRaw(ctx, dir, args...)
	return strings.TrimSpace(out), err
}

// gitRaw is git with stdout as git wrote it (porcelain output whose
// leading spaces mean something).
func (m *Manager) gitRaw(ctx context.Context, dir string, args ...string) (string, error) {
	res, err := proc.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Timeout: m.timeout(), Grace: time.Second})
	if err != nil {
		return "", m.runErr(dir, args, err)
	}
	if res.ExitCode != 0 {
		msg := strings.TrimSpace(string(res.Stderr))
		if msg == "" {
			msg = strings.TrimSpace(string(res.Stdout))
		}
		return "", fmt.Errorf("git %s: exit %d: %s", strings.Join(args, " "), res.ExitCode, msg)
	}
	return string(res.Stdout), nil
}

// gitCode runs git and returns its exit code, for commands whose answer is
// the exit code (merge-base --is-ancestor, show-ref --verify).
func (m *Manager) gitCode(ctx context.Context, dir string, args ...string) (int, error) {
	res, err := proc.Run(ctx, proc.Spec{Argv: append([]string{"git"}, args...), Dir: dir, Timeout: m.timeout(), Grace: time.Second})
	if err != nil {
		return -1, m.runErr(dir, args, err)
	}
	return res.ExitCode, nil
}

// runErr words a git that could not run; a worktree deleted under an
// agent is the usual reason, and its commits are still on the branch.
func (m *Manager) runErr(dir string, args []string, err error) error {
	if errors.Is(err, proc.ErrNoDir) && underDir(dir, filepath.Join(m.RepoDir, Dir)) {
		return fmt.Errorf("worktree %s was deleted while in use (git %s could not run); its committed work is still on its branch, and the next start of the task recreates the worktree: %w", dir, args[0], err)
	}
	return fmt.Errorf("git %s: %w", args[0], err)
}

// identity returns -c options supplying a committer identity for whatever
// the repository's configuration lacks, so commits never fail for want of
// one and a configured identity is never overridden.
func (m *Manager) identity(ctx context.Context, dir string) []string {
	var out []string
	if v, err := m.git(ctx, dir, "config", "user.name"); err != nil || v == "" {
		out = append(out, "-c", "user.name=Chorus")
	}
	if v, err := m.git(ctx, dir, "config", "user.email"); err != nil || v == "" {
		out = append(out, "-c", "user.email=chorus@localhost")
	}
	return out
}

func (m *Manager) check() error {
	if m.RepoDir == "" || m.Target == "" {
		return errors.New("worktree: Manager needs RepoDir and Target")
	}
	return nil
}

// Ensure returns the worktree for agent and task, creating it from the
// target's tip when it does not exist. An existing worktree is reused as it
// is, so a retried task keeps its work. A registration whose directory was
// deleted is pruned and the worktree recreated on the existing branch; a
// branch without a worktree is checked out again.
//
// A *SetupError is returned together with a valid Worktree when a setup
// command failed.
func (m *Manager) Ensure(ctx context.Context, agent, task string, opts Options) (Worktree, error) {
	if err := m.check(); err != nil {
		return Worktree{}, err
	}
	rel, branch, err := Name(agent, task)
	if err != nil {
		return Worktree{}, err
	}
	wt, fill, err := m.attach(ctx, rel, branch, true)
	if err == nil && fill != nil {
		if err = fill(ctx); err != nil {
			// Undone: git makes it instead, and says what is wrong.
			wt, _, err = m.attach(ctx, rel, branch, false)
		}
	}
	if err != nil {
		return Worktree{}, err
	}
	if err := writeScratchpad(wt.Dir, opts.Scratchpad); err != nil {
		return wt, err
	}
	for _, c := range opts.Copy {
		if err := m.copyIn(ctx, wt.Dir, c); err != nil {
			return wt, err
		}
	}
	if err := m.setup(ctx, wt.Dir, opts); err != nil {
		return wt, err
	}
	return wt, nil
}

// attach makes sure the worktree is registered and on disk, under the lock.
// A new one made in-process (inProcess, addNew) is registered here and
// filled by fill, outside the lock: its checkout does not hold up other
// agents' worktrees.
func (m *Manager) attach(ctx context.Context, rel, branch string, inProcess bool) (wt Worktree, fill func(context.Context) error, err error) {
	// Lock order: m.mu, then m.reg (see Manager.mu).
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reg.Lock()
	defer m.reg.Unlock()
	if !m.excluded {
		if err := m.Exclude(ctx, filepath.Join(m.RepoDir, Dir)); err != nil {
			return Worktree{}, nil, err
		}
		m.excluded = true
		m.sweepSpares()
	}
	abs := filepath.Join(m.RepoDir, rel)
	wt = Worktree{Dir: abs, Branch: branch}
	if common := m.commonDir(ctx); common != "" {
		if admin, ok := halfMade(common, abs); ok && !m.filling[abs] {
			// Its making never finished (the engine stopped during it): no
			// agent ran there (one starts only once it is made) and its files
			// are the branch's or a landed spare's, so it is made again on
			// the branch.
			if err := os.RemoveAll(abs); err != nil {
				return wt, nil, err
			}
			if err := unregister(admin); err != nil {
				return wt, nil, err
			}
			// Stopped while making the branch, it left the ref's lock,
			// which fails every later making of it.
			lock := filepath.Join(common, "refs", "heads", filepath.FromSlash(branch)+".lock")
			if err := os.Remove(lock); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return wt, nil, err
			}
		}
	}

	// The common case, a new task: nothing on disk, so try the one git call
	// that creates branch and worktree. Anything unusual (the branch or a
	// stale registration survived) makes git refuse, and the careful path
	// below sorts it out.
	if _, err := os.Lstat(abs); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(filepath.Join(m.RepoDir, Dir), 0o755); err != nil {
			return wt, nil, err
		}
		if inProcess {
			if head, fill, ok := m.addNew(ctx, abs, branch); ok {
				wt.Created, wt.Head = true, head
				return wt, fill, nil
			}
		}
		if code, err := m.gitCode(ctx, m.RepoDir, "worktree", "add", "-q", "-b", branch, abs, m.Target); err == nil && code == 0 {
			wt.Created = true
			if wt.Head = m.looseRef("refs/heads/" + branch); wt.Head != "" {
				return wt, nil, nil
			}
			wt.Head, err = m.git(ctx, abs, "rev-parse", "HEAD")
			return wt, nil, err
		}
	}

	list, err := m.list(ctx)
	if err != nil {
		return wt, nil, err
	}
	var reg *Worktree
	for i := range list {
		if samePath(list[i].Dir, abs) {
			reg = &list[i]
		}
	}
	if reg != nil && !reg.Missing {
		if reg.Branch != branch {
			return wt, nil, fmt.Errorf("worktree: %s is on branch %q, expected %q", rel, reg.Branch, branch)
		}
		wt.Head = reg.Head
		return wt, nil, nil
	}
	if reg != nil {
		// The directory was deleted behind git's back.
		if _, err := m.git(ctx, m.RepoDir, "worktree", "prune"); err != nil {
			return wt, nil, err
		}
	}
	if _, err := os.Lstat(abs); err == nil {
		if reg != nil || !madeHalfByGit(abs) {
			// Not a worktree git knows about: it may hold someone's files.
			return wt, nil, fmt.Errorf("worktree: %s exists but is not a registered worktree; move it away", rel)
		}
		// What a `git worktree add` a killed engine left running went on
		// to write after the next start undid its making: nobody's work.
		if err := os.RemoveAll(abs); err != nil {
			return wt, nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(m.RepoDir, Dir), 0o755); err != nil {
		return wt, nil, err
	}
	code, err := m.gitCode(ctx, m.RepoDir, "show-ref", "--verify", "--quiet", "refs/heads/"+branch)
	if err != nil {
		return wt, nil, err
	}
	if code == 0 {
		// The branch survived (earlier run, pruned worktree): keep its work.
		_, err = m.git(ctx, m.RepoDir, "worktree", "add", abs, branch)
	} else {
		_, err = m.git(ctx, m.RepoDir, "worktree", "add", "-b", branch, abs, m.Target)
	}
	if err != nil {
		return wt, nil, err
	}
	wt.Created = true
	wt.Head, err = m.git(ctx, abs, "rev-parse", "HEAD")
	return wt, nil, err
}

// Remove deletes the worktree and its branch, but only when nothing can be
// lost: the worktree has no uncommitted changes and the branch tip is
// reachable from target (Manager.Target when empty). Otherwise it refuses
// with an error wrapping ErrDirty or ErrUnmerged and changes nothing.
func (m *Manager) Remove(ctx context.Context, wt Worktree, target string) error {
	if err := m.check(); err != nil {
		return err
	}
	if target == "" {
		target = m.Target
	}
	rel, err := filepath.Rel(m.RepoDir, wt.Dir)
	if err != nil {
		return err
	}
	if err := checkRel(rel); err != nil {
		return err
	}
	_, task, ok := ParseBranch(wt.Branch)
	if !ok {
		return fmt.Errorf("worktree: %q is not an agent branch", wt.Branch)
	}
	// Lock order: m.mu, then m.reg (see Manager.mu).
	m.mu.Lock()
	defer m.mu.Unlock()
	m.reg.Lock()
	defer m.reg.Unlock()

	ref := "refs/heads/" + wt.Branch
	tip, err := m.git(ctx, m.RepoDir, "rev-parse", "--verify", "--quiet", ref)
	if err != nil {
		tip = "" // branch already gone
	}
	if tip != "" {
		code, err := m.gitCode(ctx, m.RepoDir, "merge-base", "--is-ancestor", tip, target)
		if err != nil {
			return err
		}
		switch code {
		case 0:
		case 1:
			return fmt.Errorf("worktree: refusing to remove %s: %w %q", wt.Branch, ErrUnmerged, target)
		default:
			return fmt.Errorf("worktree: cannot compare %s with %q (git exit %d)", wt.Branch, target, code)
		}
	}
	if _, err := os.Stat(wt.Dir); err == nil {
		// Only a clean worktree goes (ignored files such as a copied .env
		// or build caches go with it): the common case in one process,
		// then git's own refusal sorts out the rest.
		if done, err := m.removeClean(ctx, wt.Dir, true); done {
			if err != nil {
				return err
			}
		} else if _, err := m.git(ctx, m.RepoDir, "worktree", "remove", wt.Dir); err != nil {
			st, serr := m.git(ctx, wt.Dir, "status", "--porcelain", "--untracked-files=all")
			if serr != nil {
				return serr
			}
			if st != "" {
				return fmt.Errorf("worktree: refusing to remove %s: %w:\n%s", rel, ErrDirty, st)
			}
			// Clean, yet refused (locked, a submodule): whatever git
			// would drop is kept under refs/chorus/kept/ first.
			if err := m.removeKeepingLocked(ctx, KeepOptions{Repo: m.RepoDir, Task: task, Worktree: wt.Dir, Why: "removing its worktree"}); err != nil {
				return fmt.Errorf("worktree: not removing %s: %w", rel, err)
			}
		}
	} else if _, err := m.git(ctx, m.RepoDir, "worktree", "prune"); err != nil {
		return err
	}
	if tip != "" {
		// Deleting with the verified old value fails if the branch moved
		// since the ancestry check, instead of dropping the new commit.
		if _, err := m.git(ctx, m.RepoDir, "update-ref", "-d", ref, tip); err != nil {
			return err
		}
	}
	return nil
}

// looseRef reads a ref that git has just written as a loose file in the
// main repository's .git, saving a process on the start path; "" means
// ask git (packed refs, reftable, a .git file).
func (m *Manager) looseRef(ref string) string {
	b, err := os.ReadFile(filepath.Join(m.RepoDir, ".git", filepath.FromSlash(ref)))
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(b))
	if len(id) != 40 && len(id) != 64 {
		return ""
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return ""
		}
	}
	return id
}

// List returns the Chorus worktrees registered in the repository: those
// inside .worktrees/ on an agent branch.
func (m *Manager) List(ctx context.Context) ([]Worktree, error) {
	if err := m.check(); err != nil {
		return nil, err
	}
	return m.list(ctx)
}

func (m *Manager) list(ctx context.Context) ([]Worktree, error) {
	out, err := m.git(ctx, m.RepoDir, "worktree", "list", "--porcelain")
	if err != nil {
		return nil, err
	}
	root := filepath.Join(m.RepoDir, Dir)
	var res []Worktree
	var cur *Worktree
	flush := func() {
		if cur != nil && underDir(cur.Dir, root) {
			if _, _, ok := ParseBranch(cur.Branch); ok {
				if _, err := os.Stat(cur.Dir); err != nil {
					cur.Missing = true
				}
				res = append(res, *cur)
			}
		}
		cur = nil
	}
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.HasPrefix(l, "worktree "):
			flush()
			cur = &Worktree{Dir: strings.TrimPrefix(l, "worktree ")}
		case cur == nil:
		case strings.HasPrefix(l, "HEAD "):
			cur.Head = strings.TrimPrefix(l, "HEAD ")
		case strings.HasPrefix(l, "branch "):
			cur.Branch = strings.TrimPrefix(strings.TrimPrefix(l, "branch "), "refs/heads/")
		case l == "prunable" || strings.HasPrefix(l, "prunable "):
			cur.Missing = true
		}
	}
	flush()
	return res, nil
}

// underDir reports whether p is directly inside root, comparing resolved
// paths because git prints real paths.
func underDir(p, root string) bool {
	return samePath(filepath.Dir(p), root)
}

func samePath(a, b string) bool {
	if filepath.Clean(a) == filepath.Clean(b) {
		return true
	}
	ra, errA := resolve(a)
	rb, errB := resolve(b)
	return errA == nil && errB == nil && ra == rb
}

// resolve resolves symlinks in the longest existing prefix of p, so that
// paths of deleted worktrees still compare equal.
func resolve(p string) (string, error) {
	p = filepath.Clean(p)
	var rest []string
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		parent := filepath.Dir(p)
		if parent == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = parent
	}
}

// ClearStaleLocks removes git's lock files (index.lock, HEAD.lock) from a
// worktree's private git directory, and the lock on its branch's ref. Only call it when no process can be
// using the worktree — its agent is stopped or died with a crashed Chorus —
// since a killed `git add` leaves index.lock behind and every later commit
// there would fail.
func (m *Manager) ClearStaleLocks(wt Worktree) ([]string, error) {
	b, err := os.ReadFile(filepath.Join(wt.Dir, ".git"))
	if err != nil {
		return nil, err
	}
	line := strings.TrimSpace(string(b))
	if !strings.HasPrefix(line, "gitdir:") {
		return nil, fmt.Errorf("worktree: %s/.git is not a gitdir file", wt.Dir)
	}
	gd := strings.TrimSpace(strings.TrimPrefix(line, "gitdir:"))
	if !filepath.IsAbs(gd) {
		gd = filepath.Join(wt.Dir, gd)
	}
	locks := []string{filepath.Join(gd, "index.lock"), filepath.Join(gd, "HEAD.lock"), filepath.Join(gd, "ORIG_HEAD.lock")}
	if wt.Branch != "" {
		// A commit killed between writing its object and moving the branch
		// leaves the branch's own lock in the shared git directory; every
		// later commit on that branch fails with "cannot lock ref".
		common := filepath.Join(gd, "..", "..")
		if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
			common = strings.TrimSpace(string(c))
			if !filepath.IsAbs(common) {
				common = filepath.Join(gd, common)
			}
		}
		locks = append(locks, filepath.Join(common, "refs", "heads", filepath.FromSlash(wt.Branch)+".lock"))
	}
	var removed []string
	for _, p := range locks {
		if err := os.Remove(p); err == nil {
			removed = append(removed, p)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
	}
	return removed, nil
}
