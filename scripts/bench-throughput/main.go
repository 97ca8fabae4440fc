// Command bench-throughput measures Chorus's autopilot against a plain shell
// pipeline doing the same work on the same number of trivial tasks, in one
// run: wall time of both and their ratio, git processes per task (every git
// started through PATH, counted by a logging wrapper placed first on PATH
// for both sides), Chorus's own CPU per task (the engine process alone,
// read from /proc while it is a zombie, so nothing is lost at exit), each
// side's whole CPU per task (the process with every child it waited for)
// and the longest the merge queue got (from the session log).
//
// The shell pipeline, per task with AGENTS workers: `git worktree add -b`,
// write a file, `git add -A`, `git commit`, then under one lock a serial
// `git merge --no-ff` into main (checked out in the repository root), and
// removing the worktree and branch. Chorus runs `--autopilot --headless
// --max-agents AGENTS` with an agent that is bash doing the same edit and
// commit and then `chorus signal COMPLETE` (BENCH_AGENT=go: the built-in
// scripted agent), and its built-in task store.
//
// With -quality CMD both sides run a required check: the shell pipeline
// after each merge, under the merge lock (undoing a merge it fails);
// Chorus as its quality commands (on each agent's COMPLETE and on merge
// candidates, batched).
//
// Usage:
//
//	bench-throughput -chorus BIN [-tasks 20,60,300] [-agents 8] [-rounds 3] [-quality CMD] [-keep]
//	bench-throughput -chorus BIN -latency [-tasks 10] [-rounds 3]
//	bench-throughput -chorus BIN -checks [-agents 8] [-quality 'sleep 5'] [-rounds 3]
//
// BENCH_WRAP="perf record -g -o FILE --" (or strace …) runs Chorus under
// that command, for a profile (in -latency too); BENCH_TRACE=1 with
// -latency prints each task's events in ms after its stamp (where the
// time goes between the signal and the landing), with -checks in ms after
// the first signal, and in the throughput
// mode each round's phases: the median and largest time from a task's
// assignment to its agent's start, to its signal, to its enqueueing, to
// its landing (the engine's --json events, kept in the scratch root as
// chorus-events.jsonl); BENCH_VERBOSE=1 prints git subcommands;
// BENCH_TIMING=1 adds each git subcommand's CPU; BENCH_AGENT=go has the
// throughput mode's agent be the built-in scripted agent (a start of the
// whole chorus binary per task) rather than a shell doing the shell
// side's edit and commit, then `chorus signal COMPLETE`; BENCH_SIGNAL=cli
// has that scripted agent start `chorus signal` rather than send from its
// own process.
package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

func main() {
	chorus := flag.String("chorus", "", "the chorus binary to measure (required)")
	tasks := flag.String("tasks", "20,60", "comma-separated task counts")
	agents := flag.Int("agents", 8, "agents (shell workers) at once")
	keep := flag.Bool("keep", false, "keep the scratch repositories (their paths are printed)")
	rounds := flag.Int("rounds", 1, "runs of each side per task count, alternating; figures are medians")
	qual := flag.String("quality", "", "a required quality command (shell) for both sides: Chorus's qualityCommands; the shell pipeline runs it after each merge and undoes a merge it fails")
	latency := flag.Bool("latency", false, "signal→main latency instead: one agent, the first task count's tasks one after another, against the floor (the signal's start and three git processes) in the same round")
	checks := flag.Bool("checks", false, "merges with a required check instead: AGENTS tasks on AGENTS agents finishing together, last signal→last landing against the batching ideal (the check in parallel, then once on the batch) in the same round; -quality is the check (default sleep 5)")
	flag.Parse()
	if *chorus == "" {
		fail(errors.New("-chorus is required: the path of a built chorus binary"))
	}
	bin, err := filepath.Abs(*chorus)
	if err != nil {
		fail(err)
	}
	var counts []int
	for _, f := range strings.Split(*tasks, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			fail(fmt.Errorf("-tasks: %q is not a positive number", f))
		}
		counts = append(counts, n)
	}
	realGit, err := exec.LookPath("git")
	if err != nil {
		fail(err)
	}
	if *checks {
		root, err := os.MkdirTemp("", "bench-checks-")
		if err != nil {
			fail(err)
		}
		q := *qual
		if q == "" {
			q = "sleep 5"
		}
		b := &bench{root: root, realGit: realGit, chorus: bin, agents: *agents, n: *agents, quality: q}
		runChecks(b, *rounds)
		if *keep {
			fmt.Println("  kept", root)
		} else {
			_ = os.RemoveAll(root)
		}
		return
	}
	if *latency {
		root, err := os.MkdirTemp("", "bench-latency-")
		if err != nil {
			fail(err)
		}
		b := &bench{root: root, realGit: realGit, chorus: bin, agents: 1, n: counts[0]}
		runLatency(b, *rounds)
		if *keep {
			fmt.Println("  kept", root)
		} else {
			_ = os.RemoveAll(root)
		}
		return
	}
	fmt.Printf("%6s %9s %9s %6s %10s %10s %10s %10s %10s %9s %9s\n", "tasks", "shell s", "chorus s", "ratio", "git/t sh", "git/t ch", "cpu ms/t", "all/t sh", "all/t ch", "maxqueue", "landed")
	for _, n := range counts {
		// Rounds alternate the two sides, so a burst of load elsewhere on
		// the machine falls on both; the figures are medians.
		var shs, chs []result
		var roots []string
		for range *rounds {
			root, err := os.MkdirTemp("", "bench-throughput-")
			if err != nil {
				fail(err)
			}
			roots = append(roots, root)
			b := &bench{root: root, realGit: realGit, chorus: bin, agents: *agents, n: n, quality: *qual}
			if err := b.wrapper(); err != nil {
				fail(err)
			}
			sh, err := b.shell()
			if err != nil {
				fail(fmt.Errorf("shell pipeline, %d tasks: %w", n, err))
			}
			ch, err := b.runChorus()
			if err != nil {
				fail(fmt.Errorf("chorus, %d tasks: %w (kept %s)", n, err, root))
			}
			shs, chs = append(shs, sh), append(chs, ch)
			if *rounds > 1 {
				fmt.Printf("  round: shell %.2f s, chorus %.2f s (%.2f)\n", sh.wall.Seconds(), ch.wall.Seconds(), ch.wall.Seconds()/sh.wall.Seconds())
			}
		}
		sh, ch := median(shs), median(chs)
		fmt.Printf("%6d %9.2f %9.2f %6.2f %10.1f %10.1f %10.1f %10.1f %10.1f %9d %9s\n", n,
			sh.wall.Seconds(), ch.wall.Seconds(), ch.wall.Seconds()/sh.wall.Seconds(),
			float64(sh.git)/float64(n), float64(ch.git)/float64(n),
			float64(ch.cpu.Milliseconds())/float64(n),
			float64(sh.all.Milliseconds())/float64(n), float64(ch.all.Milliseconds())/float64(n), ch.maxQueue, fmt.Sprintf("%d/%d", ch.landed, sh.landed))
		if os.Getenv("BENCH_VERBOSE") != "" {
			fmt.Println("  chorus git subcommands:", ch.hist)
			fmt.Println("  shell git subcommands: ", sh.hist)
		}
		for _, root := range roots {
			if *keep {
				fmt.Println("  kept", root)
			} else {
				_ = os.RemoveAll(root)
			}
		}
	}
}

// median takes each figure's median over the rounds (the wall time's
// round supplies the rest of the row's text fields).
func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		sort.Float64s(v)
		return v[len(v)/2]
	}
	out := rs[0]
	out.wall = time.Duration(pick(func(r result) float64 { return float64(r.wall) }))
	out.cpu = time.Duration(pick(func(r result) float64 { return float64(r.cpu) }))
	out.all = time.Duration(pick(func(r result) float64 { return float64(r.all) }))
	out.git = int(pick(func(r result) float64 { return float64(r.git) }))
	out.maxQueue = int(pick(func(r result) float64 { return float64(r.maxQueue) }))
	out.landed = int(pick(func(r result) float64 { return float64(r.landed) }))
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench-throughput:", err)
	os.Exit(1)
}

type bench struct {
	root, realGit, chorus string
	agents, n             int
	quality               string
}

type result struct {
	wall     time.Duration
	git      int
	hist     string
	cpu      time.Duration // the engine process alone
	all      time.Duration // the whole side: the process and every child it waited for
	maxQueue int
	landed   int
}

// wrapper writes the logging git first on PATH: one line per process.
func (b *bench) wrapper() error {
	dir := filepath.Join(b.root, "bin")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	script := "#!/bin/sh\nprintf '@@ %s\\n' \"$*\" >>\"$BENCH_GITLOG\"\nexec " + b.realGit + " \"$@\"\n"
	if os.Getenv("BENCH_TIMING") != "" {
		// Diagnostic: each line also carries the process's start and end
		// (bash's clock) and its user and system CPU (bash's time), for
		// where the time goes; costs a bash per git.
		script = "#!/bin/bash\nTIMEFORMAT='%3U %3S'\ns=$EPOCHREALTIME\n{ time " + b.realGit + " \"$@\" 2>&3 3>&-; } 3>&2 2>\"$BENCH_GITLOG.$$\"\nrc=$?\nread -r t <\"$BENCH_GITLOG.$$\"\nrm -f \"$BENCH_GITLOG.$$\"\nprintf '@@ %s\\n%s %s %s\\n' \"$*\" \"$s\" \"$EPOCHREALTIME\" \"$t\" >>\"$BENCH_GITLOG\"\nexit $rc\n"
	}
	return os.WriteFile(filepath.Join(dir, "git"), []byte(script), 0o755)
}

func (b *bench) env(log string) []string {
	return append(os.Environ(), "PATH="+filepath.Join(b.root, "bin")+":"+os.Getenv("PATH"), "BENCH_GITLOG="+log,
		"GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com", "GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
}

func (b *bench) git(dir string, args ...string) error {
	cmd := exec.Command(b.realGit, append([]string{"-C", dir}, args...)...)
	cmd.Env = b.env(os.DevNull)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

func (b *bench) repo(name string) (string, error) {
	dir := filepath.Join(b.root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	if err := b.git(dir, "init", "-q", "-b", "main"); err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("bench\n"), 0o644); err != nil {
		return "", err
	}
	if err := b.git(dir, "add", "-A"); err != nil {
		return "", err
	}
	return dir, b.git(dir, "commit", "-q", "-m", "start")
}

// pipeline is the shell reference: AGENTS workers, each task in its own
// worktree and branch, merges serialised by one lock. Adding and removing
// worktrees (and deleting a branch, which reads every worktree) is
// serialised by another: git is not safe against concurrent worktree
// changes (Chorus takes a lock for the same reason).
const pipeline = `set -eu
task() {
	wt=.worktrees/t$1
	flock .git/wt.lock git worktree add -q -b t$1 "$wt" main
	echo "$1" >"$wt/f-$1.txt"
	git -C "$wt" add -A
	git -C "$wt" commit -q -m "feat: task $1"
	flock .git/bench.lock bash -c 'git merge -q --no-ff -m "Merge t$1" "t$1" && if [ -n "$QUALITY" ]; then bash -c "$QUALITY" || { git reset -q --hard HEAD~1; exit 1; }; fi' _ "$1"
	flock .git/wt.lock bash -c 'git worktree remove --force "$1" && git branch -q -d "$2"' _ "$wt" "t$1"
}
export -f task 2>/dev/null || true
seq "$N" | xargs -P "$AGENTS" -I{} bash -c 'set -eu; '"$(declare -f task)"'; task {}'
`

func (b *bench) shell() (result, error) {
	dir, err := b.repo("shell")
	if err != nil {
		return result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte("/.worktrees/\n"), 0o644); err != nil {
		return result{}, err
	}
	// The same tree as Chorus's repository (its project files and the
	// scripted agent's script), so both sides' worktrees check out and
	// remove the same files.
	init := exec.Command(b.chorus, "-C", dir, "init", "--yes")
	init.Env = b.env(os.DevNull)
	if out, err := init.CombinedOutput(); err != nil {
		return result{}, fmt.Errorf("chorus init: %v: %s", err, out)
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.script"), []byte(fmt.Sprintf(agentScript, "send")), 0o644); err != nil {
		return result{}, err
	}
	if err := b.git(dir, "add", "-A"); err != nil {
		return result{}, err
	}
	if err := b.git(dir, "commit", "-q", "-m", "chorus setup"); err != nil {
		return result{}, err
	}
	log := filepath.Join(b.root, "shell-git.log")
	cmd := exec.Command("bash", "-c", pipeline)
	cmd.Dir = dir
	cmd.Env = append(b.env(log), "N="+strconv.Itoa(b.n), "AGENTS="+strconv.Itoa(b.agents), "QUALITY="+b.quality)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	if err != nil {
		return result{}, fmt.Errorf("%v: %s", err, tailOf(string(out), 2000))
	}
	r := result{wall: wall, all: cpuAll(cmd.ProcessState)}
	r.git, r.hist = countGit(log)
	r.landed, err = b.landed(dir)
	return r, err
}

// agentScript is the agent's share of the shell's task: write a file and
// commit it. The agent signals from its own process (send), as agents
// whose signals Chorus reads from their files (transcripts, rollouts) do;
// BENCH_SIGNAL=cli makes it start `chorus signal` instead.
const agentScript = `write f-$CHORUS_TASK_ID.txt task
commit "feat: task work"
%s COMPLETE
`

// setupChorus makes a repository set up for Chorus: the scripted agent as
// the default, the quality command if any, b.n tasks.
//
// shellAgent: the agent is bash doing the shell side's edit and commit and
// then `chorus signal COMPLETE` (the chorus on its PATH, chorus-signal
// when that is installed beside chorus), so both sides' agents do the
// same work the same way; otherwise the built-in scripted agent runs
// agent.script.
func (b *bench) setupChorus(name, quality string, shellAgent bool) (string, error) {
	dir, err := b.repo(name)
	if err != nil {
		return "", err
	}
	run := func(args ...string) (string, error) {
		cmd := exec.Command(b.chorus, append([]string{"-C", dir}, args...)...)
		cmd.Env = b.env(os.DevNull)
		out, err := cmd.CombinedOutput()
		if err != nil {
			return "", fmt.Errorf("chorus %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}
	if _, err := run("init", "--yes"); err != nil {
		return "", err
	}
	cfgPath := filepath.Join(dir, ".chorus", "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		return "", err
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		return "", err
	}
	agents, _ := cfg["agents"].(map[string]any)
	avail, _ := agents["available"].(map[string]any)
	if avail == nil {
		return "", errors.New("config.json has no agents.available")
	}
	avail["script"] = map[string]any{"command": b.chorus, "args": []string{"scripted-agent", "--script", "agent.script"}}
	if shellAgent {
		avail["script"] = map[string]any{"command": "bash", "args": []string{"-c", shellAgentScript}}
	}
	agents["default"] = "script"
	if os.Getenv("DIRECT") == "1" {
		agents["host"] = false // agents as the engine's children, not hosted
	}
	if quality != "" {
		cfg["qualityCommands"] = []map[string]any{{"name": "check", "command": quality, "required": true, "order": 1}}
	}
	raw, _ = json.MarshalIndent(cfg, "", "  ")
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		return "", err
	}
	how := "send"
	if os.Getenv("BENCH_SIGNAL") == "cli" {
		how = "signal"
	}
	if err := os.WriteFile(filepath.Join(dir, "agent.script"), []byte(fmt.Sprintf(agentScript, how)), 0o644); err != nil {
		return "", err
	}
	if err := b.git(dir, "add", "-A"); err != nil {
		return "", err
	}
	if err := b.git(dir, "commit", "-q", "-m", "chorus setup"); err != nil {
		return "", err
	}
	for i := 1; i <= b.n; i++ {
		if _, err := run("task", "create", fmt.Sprintf("trivial task %d", i)); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// shellAgentScript is the shell side's edit and commit (see pipeline) and
// the signal. The prompt Chorus appends becomes $0 and is ignored.
const shellAgentScript = `set -eu
echo "$CHORUS_TASK_ID" >"f-$CHORUS_TASK_ID.txt"
git add -A
git commit -q --no-verify -m "feat: task work"
exec chorus signal COMPLETE`

func (b *bench) runChorus() (result, error) {
	dir, err := b.setupChorus("chorus", b.quality, os.Getenv("BENCH_AGENT") != "go")
	if err != nil {
		return result{}, err
	}
	log := filepath.Join(b.root, "chorus-git.log")
	argv := []string{b.chorus, "-C", dir, "--autopilot", "--headless", "--max-agents", strconv.Itoa(b.agents)}
	if trace {
		argv = append(argv, "--json")
	}
	if w := strings.Fields(os.Getenv("BENCH_WRAP")); len(w) > 0 {
		// A diagnostic wrapper (perf record …, strace …): the CPU figure
		// is then the wrapper's.
		argv = append(w, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = b.env(log)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return result{}, err
	}
	cpu, cerr, werr := waitCPU(cmd)
	wall := time.Since(start)
	if cerr != nil {
		return result{}, cerr
	}
	if werr != nil {
		return result{}, fmt.Errorf("%v: %s", werr, tailOf(out.String(), 3000))
	}
	r := result{wall: wall, cpu: cpu, all: cpuAll(cmd.ProcessState)}
	if trace {
		printPhases(out.Bytes(), start, start.Add(wall))
		_ = os.WriteFile(filepath.Join(b.root, "chorus-events.jsonl"), out.Bytes(), 0o644)
	}
	r.git, r.hist = countGit(log)
	if r.maxQueue, err = maxQueue(filepath.Join(dir, ".chorus", "session-log.jsonl")); err != nil {
		return result{}, err
	}
	r.landed, err = b.landed(dir)
	return r, err
}

// cpuAll is the user and system time of a finished process together with
// the children it waited for (and theirs): git, agents, shells.
func cpuAll(ps *os.ProcessState) time.Duration {
	if ps == nil {
		return 0
	}
	return ps.UserTime() + ps.SystemTime()
}

func countGit(log string) (int, string) {
	raw, err := os.ReadFile(log)
	if err != nil {
		return 0, ""
	}
	// One "@@ args" line per process; an argument with a newline (a
	// commit message) continues on lines without the mark. With
	// BENCH_TIMING the process's line of times follows its arguments.
	n := 0
	hist := map[string]int{}
	cpu := map[string]time.Duration{}
	sub := ""
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "@@ ") {
			if f := strings.Fields(l); sub != "" && len(f) == 4 {
				u, _ := strconv.ParseFloat(f[2], 64)
				st, _ := strconv.ParseFloat(f[3], 64)
				cpu[sub] += time.Duration((u + st) * float64(time.Second))
			}
			continue
		}
		n++
		f := strings.Fields(l[3:])
		// Skip global options (-C dir, -c k=v) to name the subcommand.
		for len(f) > 1 && (f[0] == "-C" || f[0] == "-c") {
			f = f[2:]
		}
		for len(f) > 0 && strings.HasPrefix(f[0], "-") {
			f = f[1:]
		}
		sub = ""
		if len(f) > 0 {
			sub = f[0]
			if sub == "worktree" && len(f) > 1 {
				sub += "-" + f[1] // add and remove differ
			}
			hist[sub]++
		}
	}
	keys := make([]string, 0, len(hist))
	for k := range hist {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return hist[keys[i]] > hist[keys[j]] })
	var sb strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&sb, "%s=%d ", k, hist[k])
		if c, ok := cpu[k]; ok {
			fmt.Fprintf(&sb, "(%.1f ms each) ", float64(c.Microseconds())/1000/float64(hist[k]))
		}
	}
	return n, sb.String()
}

// maxQueue replays the session log: queued merges minus finished ones.
func maxQueue(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	in, most := map[string]bool{}, 0
	for sc.Scan() {
		var ev struct {
			Event   string `json:"event"`
			Details struct {
				Task string `json:"taskId"`
			} `json:"details"`
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Event {
		case "merge_enqueued":
			in[ev.Details.Task] = true
		case "merge_landed", "merge_failed", "merge_waiting_human", "merge_dropped":
			delete(in, ev.Details.Task)
		}
		most = max(most, len(in))
	}
	return most, sc.Err()
}

// landed counts the tasks' files on main: both sides must have done the work.
func (b *bench) landed(dir string) (int, error) {
	cmd := exec.Command(b.realGit, "-C", dir, "ls-tree", "--name-only", "main")
	out, err := cmd.Output()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "f-") {
			n++
		}
	}
	return n, nil
}

func tailOf(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
