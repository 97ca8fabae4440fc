package orchestrator

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
)

var (
	fakeBdOnce sync.Once
	fakeBdPath string
	fakeBdErr  error
)

// fakeBd builds the bd stand-in once per test binary.
func fakeBd(t *testing.T) string {
	t.Helper()
	fakeBdOnce.Do(func() {
		dir, err := os.MkdirTemp("", "fakebd")
		if err != nil {
			fakeBdErr = err
			return
		}
		fakeBdPath = filepath.Join(dir, "bd")
		cmd := exec.Command("go", "build", "-o", fakeBdPath, "github.com/chorus-dev/chorus/beads/internal/fakebd")
		cmd.Dir = testkit.Root()
		if out, err := cmd.CombinedOutput(); err != nil {
			fakeBdErr = fmt.Errorf("building the bd stand-in: %v\n%s", err, out)
		}
	})
	if fakeBdErr != nil {
		t.Fatal(fakeBdErr)
	}
	return fakeBdPath
}

// checkScript is the project's check: no conflict markers, and every task
// file says done. The remote runs it on every push to main.
const checkScript = `#!/bin/sh
set -e
test -f README
if grep -rl '^<<<<<<<' --include='*.txt' . ; then echo "conflict markers"; exit 1; fi
for f in f-*.txt; do [ -e "$f" ] || continue; [ "$(cat "$f")" = done ] || { echo "$f does not say done"; exit 1; }; done
`

// teamSetup is a bare remote whose update hook runs the check on every
// commit pushed to main (its verdicts in pushes.log), and n clones of it,
// each set up for Chorus with merge.remote = origin.
type teamSetup struct {
	bare, pushes string
	clones       []string
	cfg          config.Config
}

func newTeamSetup(t *testing.T, n int, script string, prepare func(seed string)) *teamSetup {
	t.Helper()
	top := t.TempDir()
	ts := &teamSetup{bare: filepath.Join(top, "remote.git"), pushes: filepath.Join(top, "pushes.log")}
	seed := testkit.Repo(t)
	if err := os.WriteFile(filepath.Join(seed, "check.sh"), []byte(checkScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(seed, "README"), []byte("team\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	testkit.Git(t, seed, "add", ".")
	testkit.Git(t, seed, "commit", "-q", "-m", "check")
	if prepare != nil {
		prepare(seed)
	}
	testkit.Git(t, top, "clone", "-q", "--bare", seed, ts.bare)
	hook := fmt.Sprintf(`#!/bin/sh
[ "$1" = refs/heads/main ] || exit 0
d=$(mktemp -d)
git archive "$3" | tar -x -C "$d"
if (cd "$d" && sh check.sh >/dev/null 2>&1); then echo "ok $3" >> %q; else echo "FAIL $3" >> %q; fi
rm -rf "$d"
`, ts.pushes, ts.pushes)
	if err := os.WriteFile(filepath.Join(ts.bare, "hooks", "update"), []byte(hook), 0o755); err != nil {
		t.Fatal(err)
	}
	scriptPath := filepath.Join(top, "agent.script")
	if err := os.WriteFile(scriptPath, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := config.Default()
	cfg.Project.TaskIDPrefix = "t"
	cfg.Mode = config.ModeAutopilot
	cfg.Agents.MaxParallel = 2
	cfg.Agents.Available["script"] = config.AgentProfile{Command: testkit.Chorus(t), Args: []string{"scripted-agent", "--script", scriptPath}, Prompt: config.PromptArg}
	cfg.Agents.Default = "script"
	cfg.Completion.StopGraceSeconds = 2
	cfg.QualityCommands = []config.QualityCommand{{Name: "check", Command: "sh check.sh", Required: true}}
	cfg.Merge.TargetBranch = "main"
	cfg.Merge.Remote = "origin"
	ts.cfg = cfg
	for i := range n {
		c := filepath.Join(top, fmt.Sprintf("clone%d", i+1))
		testkit.Git(t, top, "clone", "-q", ts.bare, c)
		testkit.Git(t, c, "config", "user.name", fmt.Sprintf("Instance %d", i+1))
		testkit.Git(t, c, "config", "user.email", fmt.Sprintf("i%d@example.com", i+1))
		if _, err := config.Install(c, cfg); err != nil {
			t.Fatal(err)
		}
		ts.clones = append(ts.clones, c)
	}
	return ts
}

// instanceRun is one Chorus engine of the team, run in this process.
type instanceRun struct {
	name   string
	eng    *Engine
	cancel context.CancelFunc
	done   chan error
}

func startInstance(t *testing.T, name, root string, cfg config.Config, store beads.Store, out chan<- Event) *instanceRun {
	t.Helper()
	eng, err := New(Options{Dir: chorusdir.At(root), Config: cfg, Store: store, Target: "main", ChorusExe: testkit.Chorus(t), Cols: 100, Rows: 30})
	if err != nil {
		t.Fatal(err)
	}
	if err := eng.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ir := &instanceRun{name: name, eng: eng, cancel: cancel, done: make(chan error, 1)}
	evs := eng.Subscribe()
	go func() {
		for {
			select {
			case ev := <-evs:
				if ev.Fields == nil {
					ev.Fields = map[string]any{}
				}
				ev.Fields["instance"] = name
				select {
				case out <- ev:
				case <-ctx.Done():
					return
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { ir.done <- eng.Run(ctx) }()
	if err := eng.RouteSignals(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(ir.stop)
	return ir
}

func (ir *instanceRun) stop() {
	if ir.cancel != nil {
		ir.cancel()
		<-ir.done
		ir.cancel = nil
	}
}

// Two Chorus instances, two clones of one bare remote, one task queue on
// a bd stand-in with a shared Dolt server's concurrency (no lock between
// commands; a write that lost a race fails with Error 1213), two autopilots
// started together on 6 tasks: each task is worked by exactly one agent,
// all 6 land on the remote's main, every push to it passes the check, and
// neither instance reports an error.
func TestTwoInstancesOneQueue(t *testing.T) {
	t.Setenv("FAKEBD_LOCK", "server")
	t.Setenv("FAKEBD_QUIET", "1")
	bd := fakeBd(t)
	ts := newTeamSetup(t, 2, teamScript, nil)
	ts.cfg.Merge.PushBranches = true
	queue := filepath.Join(t.TempDir(), "server", ".beads")
	if err := os.MkdirAll(queue, 0o755); err != nil {
		t.Fatal(err)
	}
	open := func(string) beads.Store {
		return beads.OpenBd(queue, beads.OpenOptions{BdPath: bd, Timeout: time.Minute})
	}
	runTeam(t, ts, open)
}

const teamScript = "write f-$CHORUS_TASK_ID.txt done\ncommit work\nsignal COMPLETE\n"

// runTeam starts one instance per clone, all at once, on 6 tasks, and
// checks the team's outcome.
func runTeam(t *testing.T, ts *teamSetup, open func(clone string) beads.Store) {
	t.Helper()
	seed := open(ts.clones[0])
	var ids []string
	for i := range 6 {
		tk, err := seed.Create(context.Background(), fmt.Sprintf("task %d", i+1), beads.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, tk.ID)
	}
	events := make(chan Event, 4096)
	start := time.Now()
	var runs []*instanceRun
	for i, c := range ts.clones {
		runs = append(runs, startInstance(t, fmt.Sprintf("i%d", i+1), c, ts.cfg, open(c), events))
	}
	w := &testkit.Events[Event]{TB: t, C: events, Limit: 4 * time.Minute}
	w.Report = func() string {
		var b strings.Builder
		for _, ev := range w.Log {
			fmt.Fprintf(&b, "  %s %s %s %s %s\n", ev.Fields["instance"], ev.Kind, ev.Agent, ev.Task, ev.Text)
		}
		p, _ := os.ReadFile(ts.pushes)
		return "events:\n" + b.String() + "pushes:\n" + string(p)
	}
	landed := map[string]bool{}
	for len(landed) < len(ids) {
		ev := w.Wait(func(ev Event) bool { return ev.Kind == "merge_landed" && !landed[ev.Task] })
		landed[ev.Task] = true
	}
	for _, r := range runs {
		r.stop()
	}
	w.Drain()

	worked := map[string][]string{}
	for _, ev := range w.Log {
		switch ev.Kind {
		case EvIteration:
			worked[ev.Task] = append(worked[ev.Task], fmt.Sprint(ev.Fields["instance"], "/", ev.Agent))
		case EvError:
			t.Errorf("%s reported an error: %s %s", ev.Fields["instance"], ev.Task, ev.Text)
		}
	}
	for _, id := range ids {
		if len(worked[id]) != 1 {
			t.Errorf("task %s worked by %v; want exactly one agent", id, worked[id])
		}
		if _, err := exec.Command("git", "-C", ts.bare, "cat-file", "-e", "main:f-"+id+".txt").CombinedOutput(); err != nil {
			t.Errorf("the remote's main lacks %s's work", id)
		}
		if tk, err := seed.Get(context.Background(), id); err != nil || tk.Status != beads.StatusClosed {
			t.Errorf("task %s: %s, %v", id, tk.Status, err)
		}
	}
	if ts.cfg.Merge.PushBranches {
		// Every agent's branch reached the remote too, for the team to see.
		refs := testkit.Git(t, ts.bare, "for-each-ref", "--format=%(refname)", "refs/heads/")
		for _, id := range ids {
			if !strings.Contains(refs, id) {
				t.Errorf("no branch of %s on the remote:\n%s", id, refs)
			}
		}
	}
	p, err := os.ReadFile(ts.pushes)
	if err != nil {
		t.Fatalf("no push reached the remote: %v", err)
	}
	pushes := strings.Split(strings.TrimSpace(string(p)), "\n")
	for _, l := range pushes {
		if !strings.HasPrefix(l, "ok ") {
			t.Errorf("a push to the remote's main failed the check: %s", l)
		}
	}
	// The timeline, for the record.
	var lines []string
	for _, ev := range w.Log {
		switch ev.Kind {
		case EvIteration, EvCompleted, "merge_landed", "merge_target_moved", "merge_remote_synced", EvReleased:
			lines = append(lines, fmt.Sprintf("%6.2fs %s %-22s %s", ev.Time.Sub(start).Seconds(), ev.Fields["instance"], ev.Kind, ev.Task))
		}
	}
	sort.Strings(lines)
	t.Logf("6 tasks, 2 instances: all landed on the remote in %s; %d pushes, all passing the check\n%s",
		time.Since(start).Round(time.Millisecond), len(pushes), strings.Join(lines, "\n"))
}
