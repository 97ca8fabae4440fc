package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/config"
)

func claudeLine(id, model string, ts time.Time, text string, in, out, cr, cw int64) string {
	content, stop := `[{"type":"tool_use","id":"tu","name":"Bash","input":{}}]`, "tool_use"
	if text != "" {
		content, stop = fmt.Sprintf(`[{"type":"text","text":%q}]`, text), "end_turn"
	}
	return fmt.Sprintf(`{"type":"assistant","isSidechain":false,"timestamp":%q,"message":{"id":%q,"model":%q,"role":"assistant","content":%s,"stop_reason":%q,"usage":{"input_tokens":%d,"output_tokens":%d,"cache_read_input_tokens":%d,"cache_creation_input_tokens":%d}}}`+"\n",
		ts.UTC().Format(time.RFC3339Nano), id, model, content, stop, in, out, cr, cw)
}

func sigs(u Update) string {
	var s []string
	for _, x := range u.Signals {
		s = append(s, x.String())
	}
	return strings.Join(s, "|")
}

// Claude Code's transcripts: each message's usage once (one line per
// content block repeats it), only what was written after the agent
// started, incremental reads that wait for a line to be complete, the
// assistant's text for signals but never tool results or subagents.
func TestClaudeTranscripts(t *testing.T) {
	home := t.TempDir()
	cwd := "/work/repo/.worktrees/claude-t-1"
	dir := filepath.Join(home, ".claude", "projects", "-work-repo--worktrees-claude-t-1")
	if got := ProjectDirName(cwd); got != filepath.Base(dir) {
		t.Fatalf("ProjectDirName = %q", got)
	}
	os.MkdirAll(dir, 0o755)
	start := time.Now()
	f, err := os.Create(filepath.Join(dir, "s1.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString(claudeLine("old", "claude-sonnet-4-5", start.Add(-time.Hour), "Old. <chorus>COMPLETE</chorus>", 999, 999, 0, 0))
	f.WriteString(`{"type":"user","message":{"role":"user","content":"hi <chorus>COMPLETE</chorus>"}}` + "\n")
	f.WriteString(claudeLine("m1", "claude-sonnet-4-5", start.Add(time.Second), "Working on it.", 1000, 10, 0, 0))
	f.WriteString(claudeLine("m1", "claude-sonnet-4-5", start.Add(time.Second), "", 1000, 200, 0, 0))
	f.WriteString(`{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"tu","content":"printed <chorus>COMPLETE</chorus>"}]}}` + "\n")
	r, err := New(Options{Kind: config.TranscriptClaude, Env: []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}, Dir: cwd, Since: start})
	if err != nil {
		t.Fatal(err)
	}
	u := r.Read()
	if u.Usage.Input != 1000 || u.Usage.Output != 200 || len(u.Signals) != 0 {
		t.Fatalf("first read %+v", u)
	}
	// $3/M in, $15/M out.
	if want := (1000*3 + 200*15) / 1e6; u.Usage.CostUSD < want*0.999 || u.Usage.CostUSD > want*1.001 {
		t.Fatalf("cost %v, want %v", u.Usage.CostUSD, want)
	}
	line := claudeLine("m2", "claude-sonnet-4-5", start.Add(2*time.Second), "All done. <chorus>COMPLETE</chorus>", 50, 5, 1000, 100)
	f.WriteString(line[:len(line)/2])
	if u := r.Read(); !u.IsZero() {
		t.Fatalf("half a line counted: %+v", u)
	}
	f.WriteString(line[len(line)/2:])
	if u := r.Read(); u.Usage.Input != 50 || u.Usage.CacheRead != 1000 || u.Usage.CacheWrite != 100 || sigs(u) != "COMPLETE" || u.TurnsEnded != 1 {
		t.Fatalf("second read %+v", u)
	}
	if u := r.Read(); !u.IsZero() {
		t.Fatalf("nothing new, yet %+v", u)
	}
	// A subagent's messages are in their own file under the session's:
	// their usage counts, their words are not the agent's answer.
	sub := filepath.Join(dir, "s1", "subagents")
	os.MkdirAll(sub, 0o755)
	os.WriteFile(filepath.Join(sub, "agent-1.jsonl"), []byte(claudeLine("m3", "claude-haiku-4-5", start.Add(3*time.Second), "Sub done. <chorus>COMPLETE</chorus>", 777, 7, 0, 0)), 0o644)
	if u := r.Read(); u.Usage.Input != 777 || u.Usage.Output != 7 || len(u.Signals) != 0 || u.TurnsEnded != 0 {
		t.Fatalf("subagent: %+v", u)
	}
}

// Codex's rollout files live in date folders shared by every directory:
// only the session whose session_meta names the agent's cwd is read. The
// real sample holds a tool printing the tag and the final message.
func TestCodexRollouts(t *testing.T) {
	sample, err := os.ReadFile(filepath.Join("..", "signal", "testdata", "codex-rollout.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	start := time.Now()
	day := filepath.Join(home, "sessions", start.Format("2006"), start.Format("01"), start.Format("02"))
	os.MkdirAll(day, 0o755)
	// The sample's timestamps are from when it was recorded: move them
	// after the start, and its cwd to the agent's.
	stamp := start.Add(time.Second).UTC().Format(time.RFC3339Nano)
	lines := strings.SplitAfter(string(sample), "\n")
	for i, l := range lines {
		if j := strings.Index(l, `"timestamp":"`); j >= 0 {
			lines[i] = l[:j] + `"timestamp":"` + stamp + l[j+len(`"timestamp":"`)+24:]
		}
	}
	mine := strings.ReplaceAll(strings.Join(lines, ""), `"/tmp/oc/repo"`, `"/work/repo/.worktrees/codex-t-1"`)
	other := strings.ReplaceAll(strings.Join(lines, ""), `"/tmp/oc/repo"`, `"/work/repo/.worktrees/codex-t-2"`)
	os.WriteFile(filepath.Join(day, "rollout-a.jsonl"), []byte(other), 0o644)
	os.WriteFile(filepath.Join(day, "rollout-b.jsonl"), []byte(mine[:len(mine)/3]), 0o644)
	r, err := New(Options{Kind: config.TranscriptCodex, Env: []string{"CODEX_HOME=" + home}, Dir: "/work/repo/.worktrees/codex-t-1", Since: start})
	if err != nil {
		t.Fatal(err)
	}
	total := r.Read()
	if len(total.Signals) != 0 {
		t.Fatalf("another directory's session counted: %+v", total)
	}
	// The final message is recorded before its token count and the turn's
	// end (task_complete): its signal waits for that, so a completion
	// finds its cost booked.
	cut := strings.LastIndex(mine, `{"timestamp"`)
	cut = strings.LastIndex(mine[:cut], `{"timestamp"`)
	os.WriteFile(filepath.Join(day, "rollout-b.jsonl"), []byte(mine[:cut]), 0o644)
	u := r.Read()
	if !strings.Contains(mine[cut:], "token_count") || len(u.Signals) != 0 {
		t.Fatalf("signal before its usage: %+v", u)
	}
	total.Usage = add(total.Usage, u.Usage)
	os.WriteFile(filepath.Join(day, "rollout-b.jsonl"), []byte(mine), 0o644)
	u = r.Read()
	total.Signals = append(total.Signals, u.Signals...)
	total.Usage = add(total.Usage, u.Usage)
	if sigs(total) != "COMPLETE" || total.Usage != (signal.TokenUsage{Input: 300, CacheRead: 55, Output: 30}) {
		t.Fatalf("rollout: %+v", total)
	}
	// A turn that never ended (no task_complete) claims nothing, even
	// once the agent is gone.
	day2 := filepath.Join(home, "sessions", start.UTC().Format("2006"), start.UTC().Format("01"), start.UTC().Format("02"))
	os.MkdirAll(day2, 0o755)
	r2, _ := New(Options{Kind: config.TranscriptCodex, Env: []string{"CODEX_HOME=" + home}, Dir: "/work/repo/.worktrees/codex-t-1", Since: start})
	os.Remove(filepath.Join(day, "rollout-b.jsonl"))
	os.WriteFile(filepath.Join(day2, "rollout-c.jsonl"), []byte(mine[:cut]), 0o644)
	if u := r2.Read(); len(u.Signals) != 0 {
		t.Fatalf("released early: %+v", u)
	}
	if u := r2.Final(); len(u.Signals) != 0 {
		t.Fatalf("final read: %+v", u)
	}
	if _, err := New(Options{Kind: "gemini"}); err == nil || !strings.Contains(err.Error(), "claude or codex") {
		t.Fatalf("unknown kind: %v", err)
	}
}

// Follow is woken by the records being written, including a config folder
// and transcript folder that do not exist yet when it starts, and a
// subagent folder made later.
func TestFollowWakesOnWrites(t *testing.T) {
	home := t.TempDir()
	cwd := "/work/repo/.worktrees/claude-t-2"
	dir := filepath.Join(home, ".claude", "projects", ProjectDirName(cwd))
	start := time.Now()
	r, err := New(Options{Kind: config.TranscriptClaude, Env: []string{"HOME=" + home, "CLAUDE_CONFIG_DIR="}, Dir: cwd, Since: start})
	if err != nil {
		t.Fatal(err)
	}
	reports := make(chan Update, 100)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		Follow(r, done, func(u Update) { reports <- u })
	}()
	var total Update
	waitTotal := func(what string, ok func(Update) bool) {
		t.Helper()
		hang := time.After(60 * time.Second)
		for !ok(total) {
			select {
			case u := <-reports:
				total.Usage = add(total.Usage, u.Usage)
				total.Signals = append(total.Signals, u.Signals...)
			case <-hang:
				t.Fatalf("%s: total %+v", what, total)
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "s1.jsonl"), []byte(claudeLine("m1", "claude-sonnet-4-5", start.Add(time.Second), "Done. <chorus>COMPLETE</chorus>", 1000, 10, 0, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitTotal("session transcript", func(u Update) bool { return u.Usage.Input == 1000 && sigs(u) == "COMPLETE" })
	sub := filepath.Join(dir, "s1", "subagents")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, "agent-1.jsonl"), []byte(claudeLine("m2", "claude-haiku-4-5", start.Add(2*time.Second), "", 777, 7, 0, 0)), 0o644); err != nil {
		t.Fatal(err)
	}
	waitTotal("subagent transcript", func(u Update) bool { return u.Usage.Input == 1777 && u.Usage.Output == 17 })
	close(done)
	<-ended
}
