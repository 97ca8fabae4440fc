package hooks

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/internal/testkit"
)

func hook(t *testing.T, dir string, ev Event, script string, mode os.FileMode) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, string(ev)), []byte("#!/bin/sh\n"+script), mode); err != nil {
		t.Fatal(err)
	}
}

func runner(t *testing.T) (*Runner, string) {
	dir := t.TempDir()
	return &Runner{Dir: dir, WorkDir: dir, Timeout: time.Minute}, dir
}

var in = Input{Event: PreMerge, Agent: &Agent{ID: "script-t-1", Type: "script"}, Task: &Task{ID: "t-1", Title: "x", Status: "closed"}}

func TestMissingHookContinues(t *testing.T) {
	r, _ := runner(t)
	if a := r.Run(context.Background(), in); a.Ran || a.Result != Continue || a.Problem != "" {
		t.Fatalf("%+v", a)
	}
	var nilRunner *Runner
	if a := nilRunner.Run(context.Background(), in); a.Ran || a.Result != Continue {
		t.Fatalf("%+v", a)
	}
}

func TestAnswers(t *testing.T) {
	cases := map[string]struct {
		out  string
		want Answer
	}{
		"empty":    {``, Answer{Result: Continue, Ran: true}},
		"continue": {`{"result":"continue","message":"fine"}`, Answer{Result: Continue, Message: "fine", Ran: true}},
		"block":    {`{"result": "block", "message": "not on Fridays"}`, Answer{Result: Block, Message: "not on Fridays", Ran: true}},
		"complete": {`{"result":"complete"}`, Answer{Result: Complete, Ran: true}},
		"noresult": {`{"message":"hi"}`, Answer{Result: Continue, Message: "hi", Ran: true}},
		"escapes":  {`{"result":"block","message":"a\u001b[31mred\nline"}`, Answer{Result: Block, Message: "a [31mred line", Ran: true}},
	}
	for name, c := range cases {
		r, dir := runner(t)
		hook(t, dir, PreMerge, "cat >/dev/null\nprintf '%s' '"+c.out+"'\n", 0o755)
		if a := r.Run(context.Background(), in); a != c.want {
			t.Errorf("%s: got %+v, want %+v", name, a, c.want)
		}
	}
}

func TestGarbageAndFailuresContinue(t *testing.T) {
	cases := map[string]struct{ script, problem string }{
		"garbage":  {"echo 'all good!'\n", "not one JSON object"},
		"two":      {"echo '{}{}'\n", "not one JSON object"},
		"result":   {`echo '{"result":"maybe"}'` + "\n", `unknown result "maybe"`},
		"message":  {`echo '{"result":"block","message":3}'` + "\n", "message is not a string"},
		"exit":     {"echo oops >&2\nexit 3\n", "exited with code 3: oops"},
		"exitjson": {`echo '{"result":"block"}'; exit 1` + "\n", "exited with code 1"},
	}
	for name, c := range cases {
		r, dir := runner(t)
		hook(t, dir, PreMerge, c.script, 0o755)
		a := r.Run(context.Background(), in)
		if !a.Ran || a.Result != Continue || !strings.Contains(a.Problem, c.problem) {
			t.Errorf("%s: %+v, want problem %q", name, a, c.problem)
		}
	}
}

func TestNotExecutable(t *testing.T) {
	r, dir := runner(t)
	hook(t, dir, PreMerge, `echo '{"result":"block"}'`+"\n", 0o644)
	a := r.Run(context.Background(), in)
	if !a.Ran || a.Result != Continue || !strings.Contains(a.Problem, "not executable (chmod +x") {
		t.Fatalf("%+v", a)
	}
	if err := os.Mkdir(filepath.Join(dir, string(PostMerge)), 0o755); err != nil {
		t.Fatal(err)
	}
	if a := r.Run(context.Background(), Input{Event: PostMerge}); a.Result != Continue || !strings.Contains(a.Problem, "directory") {
		t.Fatalf("%+v", a)
	}
}

// A hook that hangs is killed with everything it started.
func TestTimeoutKillsGroup(t *testing.T) {
	r, dir := runner(t)
	pidFile := filepath.Join(dir, "child.pid")
	hook(t, dir, PreMerge, "sleep 1000 &\necho $! > "+pidFile+"\nwait\n", 0o755)
	// On a busy machine the timeout may come before the hook got as far
	// as its child: it is given twice as long until it did.
	var b []byte
	for r.Timeout = 300 * time.Millisecond; ; r.Timeout *= 2 {
		a := r.Run(context.Background(), in)
		if a.Result != Continue || !strings.Contains(a.Problem, "timed out") {
			t.Fatalf("%+v", a)
		}
		var err error
		if b, err = os.ReadFile(pidFile); err == nil && len(bytes.TrimSpace(b)) > 0 {
			break
		}
		if r.Timeout > time.Minute {
			t.Fatalf("the hook never wrote its child's pid: %v", err)
		}
	}
	// The group was SIGKILLed before Run returned: the child exits (a
	// kill is delivered asynchronously, so it may still be on its way out).
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if !testkit.WaitExit(t, pid, 10*time.Second) {
		t.Fatalf("the hook's child %d survived", pid)
	}
}

// The hook reads the event as JSON on stdin, runs in WorkDir, and its
// output is capped.
func TestInputOnStdin(t *testing.T) {
	r, dir := runner(t)
	got := filepath.Join(dir, "got.json")
	hook(t, dir, PostIteration, "cat > "+got+"\npwd > "+got+".pwd\n", 0o755)
	full := Input{Event: PostIteration, Agent: &Agent{ID: "claude-ch-001", Type: "claude", Worktree: ".worktrees/claude-ch-001"},
		Task: &Task{ID: "ch-001", Title: "Implement feature X", Status: "in_progress"}, Iteration: &Iteration{Number: 7, MaxIterations: 50},
		Output: &Output{Stdout: "Last 100 lines...", ExitCode: 0}}
	if a := r.Run(context.Background(), full); a.Problem != "" {
		t.Fatal(a.Problem)
	}
	b, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	want := `{"event":"post-iteration","agent":{"id":"claude-ch-001","type":"claude","worktree":".worktrees/claude-ch-001"},"task":{"id":"ch-001","title":"Implement feature X","status":"in_progress"},"iteration":{"number":7,"maxIterations":50},"output":{"stdout":"Last 100 lines...","exitCode":0}}`
	if string(b) != want {
		t.Fatalf("stdin:\n%s\nwant\n%s", b, want)
	}
	pwd, _ := os.ReadFile(got + ".pwd")
	if strings.TrimSpace(string(pwd)) != dir {
		t.Fatalf("ran in %s", pwd)
	}
	hook(t, dir, PreMerge, "head -c 1000000 /dev/zero | tr '\\0' x\n", 0o755)
	if a := r.Run(context.Background(), in); !strings.Contains(a.Problem, "not one JSON object") || len(a.Problem) > 400 {
		t.Fatalf("%d: %.200s", len(a.Problem), a.Problem)
	}
}

func TestTail(t *testing.T) {
	if got := Tail("a\nb\nc\nd\n", 2); got != "c\nd" {
		t.Fatalf("%q", got)
	}
	if got := Tail("a\nb", 5); got != "a\nb" {
		t.Fatalf("%q", got)
	}
}

// A missing hook is one stat: no process, no allocation worth naming.
func BenchmarkMissingHook(b *testing.B) {
	r := &Runner{Dir: b.TempDir()}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if a := r.Run(context.Background(), in); a.Ran {
			b.Fatal("ran")
		}
	}
}
