package app

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/internal/testkit"
)

type result struct {
	code           int
	stdout, stderr string
}

func chorus(t *testing.T, dir string, args ...string) result {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"-C", dir}, args...), BuildInfo{Version: "1.2.3", Commit: "abc", Date: "today"}, strings.NewReader(""), &out, &errb)
	return result{code, out.String(), errb.String()}
}

func gitRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "T"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v %s", args, err, out)
		}
	}
	return dir
}

// fakeAgents puts executables named like the agent CLIs on PATH so doctor's
// agent checks pass on machines without them.
func fakeAgents(t *testing.T, names ...string) {
	t.Helper()
	bin := t.TempDir()
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(bin, n), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

func TestInitCreatesAndKeeps(t *testing.T) {
	dir := gitRepo(t)
	os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module example.com/widget\n"), 0o644)
	r := chorus(t, dir, "init", "--yes", "--max-agents", "5", "--prefix", "wd-")
	if r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, "go.mod found → go") || !strings.Contains(r.stderr, "created .chorus/config.json") {
		t.Errorf("init output: %s", r.stderr)
	}
	// It ends by saying what to commit, and that the tasks are a file.
	for _, want := range []string{"git add .agent/learnings.md ", " .chorus/config.json ", " .chorus/prompts/ ", " .gitignore && git commit", "Tasks live in .beads/issues.jsonl"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("init output lacks %q: %s", want, r.stderr)
		}
	}
	if strings.Contains(r.stderr, "planning-state.json &&") || strings.Contains(r.stderr, "add .chorus/ ") {
		t.Errorf("init advises committing runtime files: %s", r.stderr)
	}
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(dir, ".chorus/config.json"))
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg["project"].(map[string]any)["taskIdPrefix"] != "wd" || cfg["agents"].(map[string]any)["maxParallel"].(float64) != 5 {
		t.Errorf("config: %s", b)
	}
	if q := cfg["qualityCommands"].([]any); len(q) != 3 {
		t.Errorf("quality commands for go: %v", q)
	}
	// Re-running keeps edits and says so.
	os.WriteFile(filepath.Join(dir, ".chorus/PATTERNS.md"), []byte("mine"), 0o644)
	r = chorus(t, dir, "init", "--yes")
	if r.code != 0 || !strings.Contains(r.stderr, "kept    .chorus/PATTERNS.md (already existed)") || !strings.Contains(r.stderr, "already set up") {
		t.Fatalf("second init: %d %s", r.code, r.stderr)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, ".chorus/PATTERNS.md")); string(b) != "mine" {
		t.Error("edit lost")
	}
	gi, _ := os.ReadFile(filepath.Join(dir, ".gitignore"))
	if strings.Count(string(gi), ".worktrees/") != 1 || !strings.Contains(string(gi), ".agent/scratchpad.md") {
		t.Errorf(".gitignore: %s", gi)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".chorus/session-log.jsonl"))
	lines := strings.Split(strings.TrimSpace(string(log)), "\n")
	if len(lines) != 2 {
		t.Fatalf("session log: %s", log)
	}
	var e struct {
		Mode, Event string
		Details     map[string]any
	}
	if err := json.Unmarshal([]byte(lines[1]), &e); err != nil || e.Mode != "init" || e.Event != "config_saved" || e.Details["qualityCommands"] == nil {
		t.Errorf("log line %s: %v", lines[1], err)
	}
}

func TestInitOutsideGit(t *testing.T) {
	r := chorus(t, t.TempDir(), "init", "--yes")
	if r.code != ExitSetup || !strings.Contains(r.stderr, "git init") {
		t.Fatalf("%d %s", r.code, r.stderr)
	}
}

func TestInitNeedsYesWithoutTTY(t *testing.T) {
	r := chorus(t, gitRepo(t), "init")
	if r.code != ExitUsage || !strings.Contains(r.stderr, "--yes") {
		t.Fatalf("%d %s", r.code, r.stderr)
	}
}

func TestTaskLifecycleHostileInput(t *testing.T) {
	dir := gitRepo(t)
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	title := "$(touch pwned); rm -rf / \"quoted\" 'single'\n../../etc \x1b]0;evil\x07\x1b[31mred\x1b[0m"
	r := chorus(t, dir, "task", "create", title, "-p", "1", "-l", "backend,api", "-d", "desc", "--acceptance", "works", "--model", "opus", "--agent", "codex", "--json")
	if r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	var task beads.Task
	if err := json.Unmarshal([]byte(r.stdout), &task); err != nil || task.ID == "" {
		t.Fatalf("create --json: %v %q", err, r.stdout)
	}
	if task.Title != title || task.Priority != 1 || task.Metadata[beads.MetaAgent] != "codex" || task.Metadata[beads.MetaModel] != "opus" {
		t.Errorf("stored task: %+v", task)
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Fatal("title was executed")
	}
	second := chorus(t, dir, "task", "create", "second", "--deps", task.ID)
	id2 := strings.TrimSpace(second.stdout)
	if second.code != 0 || id2 == "" {
		t.Fatalf("create 2: %s", second.stderr)
	}
	// Human listing never carries escape sequences.
	r = chorus(t, dir, "task", "list")
	if strings.ContainsAny(r.stdout, "\x1b\x07") || !strings.Contains(r.stdout, task.ID) {
		t.Errorf("list not sanitised: %q", r.stdout)
	}
	r = chorus(t, dir, "task", "show", task.ID)
	if strings.ContainsAny(r.stdout, "\x1b\x07") || !strings.Contains(r.stdout, "works") {
		t.Errorf("show: %q", r.stdout)
	}
	ready := func() []string {
		r := chorus(t, dir, "task", "ready", "--json")
		var ts []beads.Task
		if err := json.Unmarshal([]byte(r.stdout), &ts); err != nil {
			t.Fatalf("ready --json: %v %q %s", err, r.stdout, r.stderr)
		}
		var ids []string
		for _, t := range ts {
			ids = append(ids, t.ID)
		}
		return ids
	}
	if got := ready(); len(got) != 1 || got[0] != task.ID {
		t.Fatalf("ready before close: %v", got)
	}
	if r := chorus(t, dir, "task", "close", task.ID); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := ready(); len(got) != 1 || got[0] != id2 {
		t.Fatalf("dependent not ready after close: %v", got)
	}
	if r := chorus(t, dir, "task", "label", "add", id2, "deferred"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := ready(); len(got) != 0 {
		t.Fatalf("deferred still ready: %v", got)
	}
	chorus(t, dir, "task", "label", "remove", id2, "deferred")
	if r := chorus(t, dir, "task", "block", id2, "-r", "waiting on design"); r.code != 0 {
		t.Fatal(r.stderr)
	}
	if got := ready(); len(got) != 0 {
		t.Fatalf("blocked still ready: %v", got)
	}
	chorus(t, dir, "task", "reopen", task.ID)
	chorus(t, dir, "task", "reopen", id2)
	if got := ready(); len(got) != 1 || got[0] != task.ID {
		t.Fatalf("after reopen: %v", got)
	}
	log, _ := os.ReadFile(filepath.Join(dir, ".chorus/session-log.jsonl"))
	for _, ev := range []string{"task_created", "task_closed", "task_blocked", "task_reopened", "task_label_add"} {
		if !strings.Contains(string(log), `"event":"`+ev+`"`) {
			t.Errorf("session log lacks %s", ev)
		}
	}
}

func TestTaskBadInput(t *testing.T) {
	dir := gitRepo(t)
	chorus(t, dir, "init", "--yes")
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"task", "create", "x", "-p", "7"}, ExitUsage, "allowed: 0 (critical) to 4"},
		{[]string{"task", "create", "x", "--agent", "nobody"}, ExitUsage, `--agent: "nobody" is not valid`},
		{[]string{"task", "create", "  "}, ExitUsage, "title is empty"},
		{[]string{"task", "show", "ch-nope"}, ExitFailure, "not found"},
		{[]string{"task", "close", "../../etc/passwd"}, ExitFailure, "not found"},
		{[]string{"task", "label", "toggle", "x", "y"}, ExitUsage, "allowed: add, remove"},
		{[]string{"task", "create"}, ExitUsage, "accepts 1 arg"},
		{[]string{"--mode", "turbo"}, ExitUsage, `--mode: "turbo" is not valid`},
		{[]string{"--max-agents", "-1"}, ExitUsage, "--max-agents"},
		{[]string{"--bogus"}, ExitUsage, "unknown flag"},
	} {
		r := chorus(t, dir, c.args...)
		if r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: code %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

func TestMalformedConfigIsReportedAndKept(t *testing.T) {
	dir := gitRepo(t)
	chorus(t, dir, "init", "--yes")
	bad := "{\n  \"mode\": \"semi-auto\"\n  \"agents\": {}\n}\n"
	path := filepath.Join(dir, ".chorus/config.json")
	os.WriteFile(path, []byte(bad), 0o644)
	r := chorus(t, dir, "status")
	if r.code != ExitSetup || !strings.Contains(r.stderr, "config.json:3:") {
		t.Fatalf("status: %d %s", r.code, r.stderr)
	}
	r = chorus(t, dir, "doctor")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "✗ config") {
		t.Fatalf("doctor: %d %s", r.code, r.stdout)
	}
	if b, _ := os.ReadFile(path); string(b) != bad {
		t.Fatal("malformed config was rewritten")
	}
	os.WriteFile(path, []byte(`{"mode":"fast","agents":{"maxParallel":0}}`), 0o644)
	r = chorus(t, dir, "task", "list")
	if r.code != ExitSetup || !strings.Contains(r.stderr, `mode: "fast" is not valid; allowed: semi-auto, autopilot`) || !strings.Contains(r.stderr, "agents.maxParallel: 0") {
		t.Fatalf("invalid values: %d %s", r.code, r.stderr)
	}
}

func TestStatusAndDoctor(t *testing.T) {
	dir := gitRepo(t)
	r := chorus(t, dir, "doctor")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "✗ .chorus/") {
		t.Fatalf("doctor before init: %d %s", r.code, r.stdout)
	}
	chorus(t, dir, "init", "--yes")
	chorus(t, dir, "task", "create", "a")
	chorus(t, dir, "task", "create", "b")
	r = chorus(t, dir, "status", "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v %q", err, r.stdout)
	}
	if st.Total != 2 || st.Ready != 2 || st.Tasks["open"] != 2 || st.Backend.Name != "builtin" || !st.Config.Initialised || st.Running != nil {
		t.Errorf("status: %+v", st)
	}
	fakeAgents(t, "claude", "codex", "opencode")
	r = chorus(t, dir, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if r.code != 0 || !rep.OK {
		t.Fatalf("doctor: %d %s", r.code, r.stdout)
	}
	// A default agent that is missing is a failure; a stale lock a warning.
	os.WriteFile(filepath.Join(dir, ".chorus/chorus.lock"), []byte(`{"pid":999999,"host":"h"}`), 0o644)
	os.WriteFile(filepath.Join(dir, ".chorus/config.json"), []byte(`{"agents":{"default":"mine","available":{"mine":{"command":"no-such-agent-cli"}}}}`), 0o644)
	r = chorus(t, dir, "doctor")
	if r.code != ExitFailure || !strings.Contains(r.stdout, "✗ agent mine") || !strings.Contains(r.stdout, "! lock") || !strings.Contains(r.stdout, "stale lock from pid 999999") {
		t.Fatalf("doctor: %d %s", r.code, r.stdout)
	}
}

func TestRootRouting(t *testing.T) {
	dir := gitRepo(t)
	r := chorus(t, dir)
	if r.code != ExitSetup || !strings.Contains(r.stderr, "chorus init --yes") {
		t.Fatalf("uninitialised: %d %s", r.code, r.stderr)
	}
	chorus(t, dir, "init", "--yes")
	r = chorus(t, dir)
	if r.code != 0 || !strings.Contains(r.stderr, "No tasks are ready") {
		t.Fatalf("no tasks: %d %s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, ".chorus/planning-state.json"), []byte(`{"status":"thinking"}`), 0o644)
	r = chorus(t, dir)
	if r.code != ExitSetup || !strings.Contains(r.stderr, `status "thinking" is not valid`) {
		t.Fatalf("bad planning state: %d %s", r.code, r.stderr)
	}
}

func TestDecideRoute(t *testing.T) {
	for _, c := range []struct {
		in   routeInput
		want Route
	}{
		{routeInput{initialised: false, ready: 3, tasks: 3}, RouteInit},
		{routeInput{initialised: false, status: PlanImplementation}, RouteInit},
		{routeInput{initialised: true, status: PlanPlanning, tasks: 3, ready: 3}, RoutePlanning},
		{routeInput{initialised: true, status: PlanPlanning}, RoutePlanning},
		// init left "planning" with no goal: tasks made by hand are a plan.
		{routeInput{initialised: true, status: PlanPlanning, unplanned: true}, RoutePlanning},
		{routeInput{initialised: true, status: PlanPlanning, unplanned: true, tasks: 2, ready: 2}, RouteModeChoice},
		{routeInput{initialised: true, status: PlanPlanning, unplanned: true, tasks: 2, ready: 2, headless: true}, RouteImplement},
		{routeInput{initialised: true, status: PlanReviewing, tasks: 3, ready: 3, forced: true}, RouteReview},
		{routeInput{initialised: true, status: PlanReady}, RoutePlanning},
		{routeInput{initialised: true, status: PlanReady, tasks: 2}, RoutePlanning},
		{routeInput{initialised: true, status: PlanReady, tasks: 2, ready: 2}, RouteModeChoice},
		{routeInput{initialised: true, status: PlanReady, tasks: 2, ready: 2, forced: true}, RouteImplement},
		{routeInput{initialised: true, status: PlanReady, tasks: 2, ready: 2, headless: true}, RouteImplement},
		{routeInput{initialised: true, status: "", tasks: 2, ready: 2}, RouteModeChoice},
		{routeInput{initialised: true, status: PlanImplementation, tasks: 1, ready: 1}, RouteImplement},
		{routeInput{initialised: true, status: PlanImplementation, tasks: 4}, RoutePlanning},
		{routeInput{initialised: true, status: PlanImplementation}, RoutePlanning},
	} {
		got, err := decideRoute(c.in)
		if err != nil || got != c.want {
			t.Errorf("%+v: got %v %v, want %v", c.in, got, err, c.want)
		}
	}
	if _, err := decideRoute(routeInput{initialised: true, status: "thinking"}); err == nil || !strings.Contains(err.Error(), `status "thinking" is not valid`) {
		t.Errorf("bad status: %v", err)
	}
}

func TestVersionAndHelp(t *testing.T) {
	r := chorus(t, t.TempDir(), "--version")
	if r.code != 0 || !strings.Contains(r.stdout, "chorus 1.2.3 (commit abc, built today)") {
		t.Fatalf("%d %q", r.code, r.stdout)
	}
	for _, args := range [][]string{{"--help"}, {"task", "create", "--help"}, {"doctor", "--help"}, {"completion", "bash"}} {
		if r := chorus(t, t.TempDir(), args...); r.code != 0 || r.stdout == "" {
			t.Errorf("%v: %d %s", args, r.code, r.stderr)
		}
	}
}

func TestTruncatedTaskFile(t *testing.T) {
	dir := gitRepo(t)
	chorus(t, dir, "init", "--yes")
	chorus(t, dir, "task", "create", "one")
	chorus(t, dir, "task", "create", "two")
	path := filepath.Join(dir, ".beads/issues.jsonl")
	b, _ := os.ReadFile(path)
	cut := b[:len(b)-20]
	os.WriteFile(path, cut, 0o644)
	r := chorus(t, dir, "task", "list")
	if r.code != 0 || !strings.Contains(r.stderr, "issues.jsonl:2") || !strings.Contains(r.stdout, "one") {
		t.Fatalf("list: %d %q %q", r.code, r.stdout, r.stderr)
	}
	// Counted around the cut line, saying where it is, every time (the
	// second from the index memo and caches, if any were written).
	for range 2 {
		r = chorus(t, dir, "status")
		if r.code != 0 || !strings.Contains(r.stderr, "issues.jsonl:2") || !strings.Contains(r.stderr, "fix or remove that line") ||
			!strings.Contains(r.stdout, "1 total") {
			t.Fatalf("status: %d %q %q", r.code, r.stdout, r.stderr)
		}
	}
	r = chorus(t, dir, "task", "create", "three")
	if r.code == 0 {
		t.Fatal("write succeeded on a malformed file")
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, cut) {
		t.Fatal("malformed file was rewritten")
	}
	r = chorus(t, dir, "doctor")
	if !strings.Contains(r.stdout, "✗ task store") {
		t.Fatalf("doctor: %s", r.stdout)
	}
}

func TestMain(m *testing.M) {
	// Commands run in process here, so the engine would start agent hosts
	// (and `chorus signal`) with this test binary: point it at a built
	// chorus instead, built on first use.
	selfExe = func() string {
		bin, err := testkit.Build()
		if err != nil {
			panic(err)
		}
		return bin
	}
	code := m.Run()
	testkit.Cleanup()
	os.Exit(code)
}

// Autopilot with a default agent that is not installed refuses to start
// with doctor's message, instead of re-assigning tasks it cannot run.
func TestAutopilotRefusesMissingDefaultAgent(t *testing.T) {
	dir := gitRepo(t)
	t.Setenv("PATH", filepath.Dir(mustLookPath(t, "git")))
	if r := chorus(t, dir, "init", "--yes"); r.code != 0 {
		t.Fatalf("init: %d %s", r.code, r.stderr)
	}
	if r := chorus(t, dir, "task", "create", "one"); r.code != 0 {
		t.Fatalf("create: %d %s", r.code, r.stderr)
	}
	r := chorus(t, dir, "--autopilot", "--headless")
	if r.code != ExitSetup || !strings.Contains(r.stderr, "agent claude: claude not found on PATH") || !strings.Contains(r.stderr, "chorus doctor") {
		t.Fatalf("autopilot without claude: %d %s", r.code, r.stderr)
	}
}

func mustLookPath(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Skip(name + " not installed")
	}
	return p
}

// Routing tells the truth: ready tasks under a plan still being written are
// named as such, and failed or blocked tasks alone still open the
// full-screen view (where they can be retried), which needs a terminal.
func TestRoutingWithPlanningAndStuckTasks(t *testing.T) {
	fakeAgents(t, "claude", "codex", "opencode")
	dir := gitRepo(t)
	chorus(t, dir, "init", "--yes")
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "one").stdout)
	os.WriteFile(filepath.Join(dir, ".chorus/planning-state.json"), []byte(`{"status":"planning","planSummary":{"userGoal":"an API"}}`), 0o644)
	r := chorus(t, dir)
	if r.code != 0 || !strings.Contains(r.stderr, "1 task(s) are ready") || strings.Contains(r.stderr, "No tasks are ready") {
		t.Fatalf("planning with a ready task: %d %s", r.code, r.stderr)
	}
	os.WriteFile(filepath.Join(dir, ".chorus/planning-state.json"), []byte(`{"status":"ready"}`), 0o644)
	if r := chorus(t, dir, "task", "block", id); r.code != 0 {
		t.Fatalf("block: %d %s", r.code, r.stderr)
	}
	r = chorus(t, dir)
	if r.code != ExitUsage || !strings.Contains(r.stderr, "needs a terminal") {
		t.Fatalf("only a blocked task: want the full-screen view (needs a terminal), got %d %s", r.code, r.stderr)
	}
	r = chorus(t, dir, "--headless")
	if r.code != 0 || !strings.Contains(r.stderr, "No tasks are ready") {
		t.Fatalf("headless, only a blocked task: %d %s", r.code, r.stderr)
	}
}

func TestCommitPaths(t *testing.T) {
	got := commitPaths("?? .agent/learnings.md\n?? .beads/.gitignore\n?? .beads/issues.jsonl\n?? .chorus/config.json\n?? .chorus/prompts/a.md\n?? .chorus/prompts/b.md\n M .gitignore\n")
	want := []string{".agent/learnings.md", ".beads/", ".chorus/config.json", ".chorus/prompts/", ".gitignore"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("commitPaths = %v, want %v", got, want)
	}
}
