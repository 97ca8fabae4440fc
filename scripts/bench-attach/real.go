package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// taskIndex is the place of the agent's task ($CHORUS_TASK_ID) in
// $BENCH_TASKS, so a real engine's agent prints END-i like tmux's pane i.
func taskIndex() int {
	id := os.Getenv("CHORUS_TASK_ID")
	i := slices.Index(strings.Split(os.Getenv("BENCH_TASKS"), ","), id)
	if id == "" || i < 0 {
		fmt.Fprintf(os.Stderr, "bench-attach: task %q is not in $BENCH_TASKS\n", id)
		os.Exit(2)
	}
	return i
}

// startReal runs the real program: `chorus --autopilot --headless` in a
// fresh repository whose 8 tasks' agents (hosted, as by default) print
// the same lines as tmux's panes, attached to with `chorus attach`. Its
// memory is the engine's and the agent hosts'.
func startReal(name, chorus, exe, tmp string, lines int) (side, func(), error) {
	dir := filepath.Join(tmp, "repo")
	home := filepath.Join(tmp, "home")
	env := append(os.Environ(), "HOME="+home, "GIT_AUTHOR_NAME=bench", "GIT_AUTHOR_EMAIL=bench@example.com",
		"GIT_COMMITTER_NAME=bench", "GIT_COMMITTER_EMAIL=bench@example.com")
	s := side{name: name, argv: []string{chorus, "-C", dir, "attach"}, env: slices.Concat(clientEnv, []string{"HOME=" + home, "PATH=" + os.Getenv("PATH")})}
	if v := os.Getenv("CHORUS_HEAPPROFILE"); v != "" {
		s.env = append(s.env, "CHORUS_HEAPPROFILE="+v) // the TUI's too
	}
	stop := func() {}
	run := func(argv ...string) (string, error) {
		cmd := exec.Command(argv[0], argv[1:]...)
		cmd.Env = env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("%s: %v: %s%s", strings.Join(argv, " "), err, out, stderr.String())
		}
		return strings.TrimSpace(string(out)), nil
	}
	// Another side's agents may print already: this one's are those
	// beyond them.
	others := len(procs(exe + "\x00print-task\x00"))
	if err := os.MkdirAll(home, 0o700); err != nil {
		return s, stop, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return s, stop, err
	}
	if err := os.WriteFile(filepath.Join(dir, "README.md"), []byte("bench\n"), 0o600); err != nil {
		return s, stop, err
	}
	for _, argv := range [][]string{{"git", "-C", dir, "init", "-q", "-b", "main"}, {"git", "-C", dir, "add", "-A"},
		{"git", "-C", dir, "commit", "-q", "-m", "start"}, {chorus, "-C", dir, "init", "--yes"}} {
		if _, err := run(argv...); err != nil {
			return s, stop, err
		}
	}
	var ids []string
	for i := range agents {
		id, err := run(chorus, "-C", dir, "task", "create", fmt.Sprintf("replay %d", i))
		if err != nil {
			return s, stop, err
		}
		ids = append(ids, id)
	}
	cfgPath := filepath.Join(dir, ".chorus", "config.json")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		return s, stop, err
	}
	var cfg map[string]any
	if err := json.Unmarshal(b, &cfg); err != nil {
		return s, stop, err
	}
	ag := cfg["agents"].(map[string]any)
	ag["available"].(map[string]any)["print"] = map[string]any{"command": exe, "args": []string{"print-task", strconv.Itoa(lines)},
		"transcript": "none", "env": []string{"BENCH_TASKS=" + strings.Join(ids, ",")}}
	ag["default"], ag["maxParallel"], ag["scrollback"] = "print", agents, scrollback
	if b, err = json.MarshalIndent(cfg, "", "  "); err != nil {
		return s, stop, err
	}
	if err := os.WriteFile(cfgPath, b, 0o600); err != nil {
		return s, stop, err
	}
	for _, argv := range [][]string{{"git", "-C", dir, "add", "-A"}, {"git", "-C", dir, "commit", "-qm", "chorus setup"}} {
		if _, err := run(argv...); err != nil {
			return s, stop, err
		}
	}
	eng := exec.Command(chorus, "-C", dir, "--autopilot", "--headless", "--max-agents", strconv.Itoa(agents))
	eng.Env = env
	eng.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	log, err := os.Create(filepath.Join(tmp, "engine.log"))
	if err != nil {
		return s, stop, err
	}
	eng.Stdout, eng.Stderr = log, log
	if err := eng.Start(); err != nil {
		return s, stop, err
	}
	stop = func() {
		_, _ = run(chorus, "-C", dir, "stop", "--wait")
		_ = eng.Process.Kill()
		_ = eng.Wait()
		log.Close()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for len(procs(exe+"\x00print-task\x00")) < others+agents {
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(log.Name())
			return s, stop, fmt.Errorf("the real engine did not start %d agents in 2 minutes:\n%s", agents, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	hostExe := filepath.Join(filepath.Dir(chorus), "chorus-agent-host")
	s.servers = func() []int {
		return append([]int{eng.Process.Pid}, slices.Concat(procs(hostExe+"\x00"), procs(chorus+"\x00agent-host\x00"))...)
	}
	return s, stop, nil
}

// procs lists the processes whose command line starts with prefix (its
// arguments NUL-separated, as /proc shows them).
func procs(prefix string) []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasPrefix(string(b), prefix) {
			pids = append(pids, pid)
		}
	}
	return pids
}
