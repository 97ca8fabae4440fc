package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/agent/claudetrust"
	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/gitx"
	"github.com/chorus-dev/chorus/worktree"
)

// Git is where a host that cannot see the hub's files (a pod) gets its
// agent's work tree, and where the work goes back: a partial clone of the
// task branch the hub put on the remote. The host pushes the branch when
// the agent signals COMPLETE (before the signal goes on, so the hub finds
// the work when it hears it) and when the agent ends or the host is told
// to stop (a pod deleted), with its uncommitted work as a commit under
// WIPRef; the next host of the task restores that work.
type Git struct {
	URL    string `json:"url"`    // the remote as the host reaches it (https, ssh, file://)
	Branch string `json:"branch"` // the task branch, already on the remote
	// HubDir is the agent's worktree on the hub: the Spec's paths under
	// it are moved to the clone.
	HubDir string `json:"hubDir"`
	Name   string `json:"name,omitempty"` // the commit identity set in the clone
	Email  string `json:"email,omitempty"`
	// TrustClaude: the agent is a Claude Code whose worktree the hub
	// would mark trusted; the host marks the clone so, in the agent's
	// Claude config.
	TrustClaude bool `json:"trustClaude,omitempty"`
}

// WIPRef is where a task branch's uncommitted work is kept on the remote.
func WIPRef(branch string) string { return "refs/chorus/wip/" + branch }

// gitWork is a host's clone and the directory that stands in for the
// hub's .chorus for the agent's `chorus signal`.
type gitWork struct {
	g        Git
	dir      string     // the clone
	chorus   string     // the agent's CHORUS_DIR
	restored bool       // uncommitted work of an earlier host was put back
	wipOut   bool       // the remote's WIP ref may hold work of this tip
	pmu      sync.Mutex // one push at a time
}

func runGit(ctx context.Context, dir string, args ...string) (string, error) {
	return gitx.Git(ctx, dir, args...)
}

// prepare clones the task branch under root, puts back the uncommitted
// work an earlier host of the task pushed, and rewrites sp to run there.
func (w *gitWork) prepare(ctx context.Context, root string, sp *Spec) error {
	w.dir, w.chorus = filepath.Join(root, "work"), filepath.Join(root, "chorus")
	if err := os.MkdirAll(w.chorus, 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(w.dir, ".git")); err != nil {
		if _, err := runGit(ctx, root, "clone", "-q", "--filter=blob:none", "--no-tags", "--branch", w.g.Branch, w.g.URL, w.dir); err != nil {
			return fmt.Errorf("cloning %s of %s: %w", w.g.Branch, w.g.URL, err)
		}
	}
	if w.g.Name != "" {
		_, _ = runGit(ctx, w.dir, "config", "user.name", w.g.Name)
	}
	if w.g.Email != "" {
		_, _ = runGit(ctx, w.dir, "config", "user.email", w.g.Email)
	}
	wip := WIPRef(w.g.Branch)
	if _, err := runGit(ctx, w.dir, "fetch", "-q", "--no-tags", "origin", "+"+wip+":"+wip); err == nil {
		// Only work made on this very tip comes back: a snapshot of
		// an older tip was superseded by what the branch holds.
		parent, _ := runGit(ctx, w.dir, "rev-parse", "-q", "--verify", wip+"^")
		head, _ := runGit(ctx, w.dir, "rev-parse", "HEAD")
		if parent != "" && parent == head {
			if _, err := runGit(ctx, w.dir, "read-tree", "-u", "--reset", wip); err != nil {
				return fmt.Errorf("restoring the uncommitted work at %s: %w", wip, err)
			}
			if _, err := runGit(ctx, w.dir, "reset", "-q"); err != nil {
				return err
			}
			w.restored, w.wipOut = true, true
		}
	}
	move := func(s string) string {
		if w.g.HubDir != "" && (s == w.g.HubDir || strings.HasPrefix(s, w.g.HubDir+"/")) {
			return w.dir + strings.TrimPrefix(s, w.g.HubDir)
		}
		return s
	}
	sp.Dir = move(sp.Dir)
	if sp.Dir == "" {
		sp.Dir = w.dir
	}
	for i, a := range sp.Argv {
		sp.Argv[i] = move(a)
	}
	env := make([]string, 0, len(sp.Env)+1)
	key, agent, hubExe := "", "", ""
	for _, kv := range sp.Env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case signal.EnvExe:
			hubExe = v
			continue
		case signal.EnvDir, "PATH":
			continue // the hub's: set for here below
		case signal.EnvKey:
			key = v
		case signal.EnvAgentID:
			agent = v
		}
		env = append(env, k+"="+move(v))
	}
	sp.Env = append(env, signal.EnvDir+"="+w.chorus)
	// The hub's chorus and PATH name its machine's files: here the
	// agent's chorus is this host's (a pod runs `chorus agent-host`),
	// first on the pod's own PATH, and the
	// prompt, which tells the agent to run chorus by its path (`… signal
	// COMPLETE`), names this one.
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	sp.Env = append(sp.Env, signal.EnvExe+"="+exe, "PATH="+filepath.Dir(exe)+string(os.PathListSeparator)+os.Getenv("PATH"))
	if hubExe != "" && hubExe != exe {
		for i := range sp.Argv {
			sp.Argv[i] = replacePath(sp.Argv[i], hubExe, exe)
		}
		for i := range sp.Files {
			sp.Files[i].Data = replacePath(sp.Files[i].Data, hubExe, exe)
		}
	}
	if err := w.copyFiles(root, sp); err != nil {
		return err
	}
	if sp.LogPath != "" {
		sp.LogPath = filepath.Join(root, "agent.log")
	}
	if key != "" && agent != "" {
		if err := signal.PublishKey(w.chorus, agent, key); err != nil {
			return err
		}
	}
	if w.g.TrustClaude {
		if err := claudetrust.Trust(claudetrust.ConfigFile(sp.Env), w.dir); err != nil {
			return fmt.Errorf("marking the clone trusted for Claude Code: %w", err)
		}
	}
	return nil
}

// replacePath replaces the path from in s with to where it stands whole:
// not where it begins a longer name (/x/chorus in /x/chorus-app).
func replacePath(s, from, to string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, from)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		end := i + len(from)
		b.WriteString(s[:i])
		if end < len(s) && strings.ContainsRune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/", rune(s[end])) {
			b.WriteString(from)
		} else {
			b.WriteString(to)
		}
		s = s[end:]
	}
}

// copyFiles writes the hub's files the argv names under root and names
// the copies instead: the hub's paths do not exist here.
func (w *gitWork) copyFiles(root string, sp *Spec) error {
	if len(sp.Files) == 0 {
		return nil
	}
	dir := filepath.Join(root, "files")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for i, f := range sp.Files {
		to := filepath.Join(dir, fmt.Sprintf("%d-%s", i, filepath.Base(f.Path)))
		if err := os.WriteFile(to, []byte(f.Data), 0o600); err != nil {
			return fmt.Errorf("writing the agent's %s: %w", filepath.Base(f.Path), err)
		}
		for j, a := range sp.Argv {
			sp.Argv[j] = strings.ReplaceAll(a, f.Path, to)
		}
	}
	sp.Files = nil
	return nil
}

// push sends the branch and, with wip, the uncommitted work (or the
// absence of any) to the remote. The branch is forced: it is this task's
// own, and the hub follows what the agent did to it.
func (w *gitWork) push(wip bool) error {
	w.pmu.Lock()
	defer w.pmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ref := "refs/heads/" + w.g.Branch
	specs := []string{"+HEAD:" + ref}
	if wip {
		snap, err := worktree.SnapshotWIP(ctx, w.dir, "chorus: uncommitted work of "+w.g.Branch)
		if err != nil {
			return fmt.Errorf("taking the uncommitted work: %w", err)
		}
		if snap != "" {
			specs = append(specs, "+"+snap+":"+WIPRef(w.g.Branch))
		}
		defer func() { w.wipOut = snap != "" }()
		if snap == "" && w.wipOut {
			// Work put back and since committed or dropped must not
			// come back again.
			_, _ = runGit(ctx, w.dir, "push", "-q", "--no-verify", "origin", ":"+WIPRef(w.g.Branch))
		}
	}
	if _, err := runGit(ctx, w.dir, append([]string{"push", "-q", "--no-verify", "origin"}, specs...)...); err != nil {
		return fmt.Errorf("pushing %s to %s: %w", w.g.Branch, w.g.URL, err)
	}
	return nil
}

// prepareGit clones the agent's work tree under the host's working
// directory and serves the agent's signals there.
func (s *server) prepareGit(sp *Spec) error {
	root := s.opt.WorkRoot
	if root == "" {
		var err error
		if root, err = os.Getwd(); err != nil {
			return err
		}
	}
	w := &gitWork{g: *sp.Git}
	ctx, cancel := context.WithTimeout(s.ctx, 10*time.Minute)
	defer cancel()
	t0 := time.Now()
	if err := w.prepare(ctx, root, sp); err != nil {
		return err
	}
	logf("cloned %s of %s in %.3fs (uncommitted work put back: %v)", w.g.Branch, w.g.URL, time.Since(t0).Seconds(), w.restored)
	if err := s.listenSignals(s.ctx, w); err != nil {
		return err
	}
	s.mu.Lock()
	s.git = w
	s.mu.Unlock()
	go s.snapshots(w)
	return nil
}

// wipEvery is how often a host sends its agent's work back while the
// agent runs: what a pod lost without warning (a node gone) costs.
var wipEvery = 30 * time.Second

// snapshots pushes the branch and the uncommitted work every wipEvery
// while they changed, until the agent ends.
func (s *server) snapshots(w *gitWork) {
	t := time.NewTicker(wipEvery)
	defer t.Stop()
	last := ""
	for {
		select {
		case <-t.C:
		case <-s.ended:
			return
		}
		s.mu.Lock()
		over := s.exit != nil
		s.mu.Unlock()
		if over {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		head, _ := runGit(ctx, w.dir, "rev-parse", "HEAD")
		st, _ := runGit(ctx, w.dir, "status", "--porcelain", "--untracked-files=all")
		cancel()
		// A file changed again under the same status line is caught by
		// the next signal or the end, not here: this only bounds a loss.
		if now := head + "\n" + st; now != last {
			if err := w.push(true); err != nil {
				logf("%v", err)
				continue
			}
			last = now
		}
	}
}

// pushTold sends the branch and the uncommitted work back as soon as the
// host is told to go (SIGTERM: a pod deleted, drained, evicted), before
// its agent is stopped: a grace the deletion sets shorter than the stop
// still leaves the work on the remote. pushEnd sends what the stop
// changed.
func (s *server) pushTold() {
	s.mu.Lock()
	w, over := s.git, s.exit != nil
	s.mu.Unlock()
	if w == nil || over {
		return
	}
	t0 := time.Now()
	if err := w.push(true); err != nil {
		logf("%v", err)
		return
	}
	logf("pushed %s and its uncommitted work when told to go in %.3fs", w.g.Branch, time.Since(t0).Seconds())
}

// pushEnd sends the branch and the uncommitted work back once the agent
// ended (its own exit, a stop, the pod told to go), before the exit is
// told: the hub follows the branch when it hears it.
func (s *server) pushEnd() {
	s.mu.Lock()
	w := s.git
	s.mu.Unlock()
	if w == nil {
		return
	}
	t0 := time.Now()
	if err := w.push(true); err != nil {
		logf("%v", err)
		return
	}
	logf("pushed %s and its uncommitted work at the agent's end in %.3fs", w.g.Branch, time.Since(t0).Seconds())
}

// logName is the agent this host runs, named on its log lines: local
// hosts share one log file (HostsLog).
var logName string

// logf writes a dated line to the host's stderr: the pod's log, or the
// local hosts' shared one.
func logf(format string, a ...any) {
	who := ""
	if logName != "" {
		who = fmt.Sprintf("%s (pid %d): ", logName, os.Getpid())
	}
	fmt.Fprintf(os.Stderr, "%s agent host: %s%s\n", time.Now().UTC().Format(time.RFC3339Nano), who, fmt.Sprintf(format, a...))
}
