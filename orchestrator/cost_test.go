package orchestrator

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/config"
)

func transcriptLineFor(id, model string, ts time.Time, in, out, cr, cw int64) string {
	return fmt.Sprintf(`{"type":"assistant","timestamp":%q,"message":{"id":%q,"model":%q,"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}}`+"\n",
		ts.UTC().Format(time.RFC3339Nano), id, model, in, out, cr, cw)
}

// The transcript meter counts each message once (Claude Code writes one
// line per content block, repeating the usage), only messages written
// after it started, reads incrementally and waits for a line to be
// complete.
func TestTranscriptMeter(t *testing.T) {
	home := t.TempDir()
	cwd := "/work/repo/.worktrees/claude-t-1"
	dir := filepath.Join(home, ".claude", "projects", "-work-repo--worktrees-claude-t-1")
	if got := projectDirName(cwd); got != filepath.Base(dir) {
		t.Fatalf("projectDirName = %q", got)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	f, err := os.Create(filepath.Join(dir, "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(transcriptLineFor("old", "claude-sonnet-4-5", start.Add(-time.Hour), 999, 999, 0, 0))
	f.WriteString(`{"type":"user","message":{"role":"user","content":"hi"}}` + "\n")
	f.WriteString(transcriptLineFor("m1", "claude-sonnet-4-5", start.Add(time.Second), 1000, 10, 0, 0))
	f.WriteString(transcriptLineFor("m1", "claude-sonnet-4-5", start.Add(time.Second), 1000, 200, 0, 0))
	m := newTranscriptMeter(claudeConfigDir([]string{"HOME=" + home}), cwd, start)
	u := m.read()
	if u.Input != 1000 || u.Output != 200 {
		t.Fatalf("first read %+v", u)
	}
	// $3/M in, $15/M out.
	if want := (1000*3 + 200*15) / 1e6; u.CostUSD < want*0.999 || u.CostUSD > want*1.001 {
		t.Fatalf("cost %v, want %v", u.CostUSD, want)
	}
	line := transcriptLineFor("m2", "claude-sonnet-4-5", start.Add(2*time.Second), 50, 5, 1000, 100)
	f.WriteString(line[:len(line)/2])
	if u := m.read(); !u.IsZero() {
		t.Fatalf("half a line counted: %+v", u)
	}
	f.WriteString(line[len(line)/2:])
	if u := m.read(); u.Input != 50 || u.CacheRead != 1000 || u.CacheWrite != 100 {
		t.Fatalf("second read %+v", u)
	}
	if u := m.read(); !u.IsZero() {
		t.Fatalf("nothing new, yet %+v", u)
	}
	// A subagent's messages are in their own file under the session's.
	sub := filepath.Join(dir, "s1", "subagents")
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "agent-1.jsonl"), []byte(transcriptLineFor("m3", "claude-haiku-4-5", start.Add(3*time.Second), 777, 7, 0, 0)), 0o644)
	if u := m.read(); u.Input != 777 || u.Output != 7 {
		t.Fatalf("subagent: %+v", u)
	}
}

func TestEstimateCost(t *testing.T) {
	u := Usage{Input: 1_000_000, Output: 1_000_000, CacheRead: 1_000_000, CacheWrite: 1_000_000}
	for model, want := range map[string]float64{
		"claude-opus-4-8":            5 + 25 + 0.5 + 6.25,
		"claude-opus-4-1-20250805":   15 + 75 + 1.5 + 18.75,
		"claude-sonnet-4-5-20250929": 3 + 15 + 0.3 + 3.75,
		"claude-haiku-4-5":           1 + 5 + 0.1 + 1.25,
		"gpt-5-codex":                0,
	} {
		if got := estimateCost(model, u); got < want-1e-9 || got > want+1e-9 {
			t.Errorf("%s: %v, want %v", model, got, want)
		}
	}
}

// Caps: tokens and dollars per task and per session, task wall time over
// every run, session wall time.
func TestBudgetCaps(t *testing.T) {
	e := &Engine{st: newState(config.ModeAutopilot), runs: map[string]*agentRun{}}
	e.cfg.Budget = config.Budget{TaskTokens: 1000, TaskDollars: 1, TaskMinutes: 10, SessionTokens: 5000, SessionDollars: 2, SessionMinutes: 60}
	e.st.Tasks["a"] = &TaskRun{Usage: Usage{Input: 999}}
	if why := e.taskOver("a"); why != "" {
		t.Fatalf("under the caps: %s", why)
	}
	e.st.Tasks["a"].Usage.Output = 1
	if why := e.taskOver("a"); !strings.Contains(why, "task token budget reached (1000 of 1000)") {
		t.Fatalf("tokens: %q", why)
	}
	e.st.Tasks["b"] = &TaskRun{Usage: Usage{CostUSD: 1.5}}
	if why := e.taskOver("b"); !strings.Contains(why, "task cost budget") {
		t.Fatalf("dollars: %q", why)
	}
	e.st.Tasks["c"] = &TaskRun{Runtime: 9 * 60}
	if why := e.taskOver("c"); why != "" {
		t.Fatalf("9 of 10 minutes: %q", why)
	}
	e.st.Agents["x"] = &AgentState{TaskID: "c", StartedAt: time.Now().Add(-90 * time.Second)}
	if why := e.taskOver("c"); !strings.Contains(why, "task time budget") {
		t.Fatalf("minutes with the running agent: %q", why)
	}
	if why := e.sessionOver(); why != "" {
		t.Fatalf("session: %q", why)
	}
	e.st.Usage = Usage{CostUSD: 2}
	if why := e.sessionOver(); !strings.Contains(why, "session cost budget") {
		t.Fatalf("session dollars: %q", why)
	}
	e.st.Usage = Usage{}
	e.st.StartedAt = time.Now().Add(-61 * time.Minute)
	if why := e.sessionOver(); !strings.Contains(why, "session time budget") {
		t.Fatalf("session minutes: %q", why)
	}
}

// Usage deltas from cumulative figures add up to the last figure.
func TestUsageMeterDeltas(t *testing.T) {
	var m usageMeter
	var sum Usage
	for _, total := range []Usage{{Input: 10, Output: 1}, {Input: 10, Output: 1}, {Input: 25, Output: 30, CostUSD: 0.5}} {
		sum = sum.add(m.delta(total))
	}
	if sum != (Usage{Input: 25, Output: 30, CostUSD: 0.5}) {
		t.Fatalf("sum %+v", sum)
	}
}

// The live meter is woken by the transcripts being written, including a
// Claude config folder and transcript folder that do not exist yet when it
// starts, and a subagent folder made later.
func TestFollowTranscriptsWakesOnWrites(t *testing.T) {
	home := t.TempDir()
	cwd := "/work/repo/.worktrees/claude-t-2"
	dir := filepath.Join(home, ".claude", "projects", projectDirName(cwd))
	start := time.Now()
	m := newTranscriptMeter(claudeConfigDir([]string{"HOME=" + home}), cwd, start)
	reports := make(chan Usage, 100)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		followTranscripts(m, done, func(u Usage) { reports <- u })
	}()
	var total Usage
	waitTotal := func(what string, ok func(Usage) bool) {
		t.Helper()
		hang := time.After(60 * time.Second)
		for !ok(total) {
			select {
			case u := <-reports:
				total = total.add(u)
			case <-hang:
				t.Fatalf("%s: total %+v", what, total)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(transcriptLineFor("m1", "claude-sonnet-4-5", start.Add(time.Second), 1000, 10, 0, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitTotal("session transcript", func(u Usage) bool { return u.Input == 1000 })
	sub := filepath.Join(dir, "s1", "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "agent-1.jsonl"), []byte(transcriptLineFor("m2", "claude-haiku-4-5", start.Add(2*time.Second), 777, 7, 0, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitTotal("subagent transcript", func(u Usage) bool { return u.Input == 1777 && u.Output == 17 })
	close(done)
	<-ended
}
