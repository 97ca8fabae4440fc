package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/agent/signal"
	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

// A COMPLETE with nothing on the branch is refused: a live agent is told
// there is nothing to merge, does the work, and its next COMPLETE closes
// the task.
func TestCompleteWithoutWorkRefusedLive(t *testing.T) {
	script := `
signal COMPLETE
wait-input
write work.txt done
commit "feat: the work"
signal COMPLETE
hang
`
	h := newHarness(t, script, nil)
	id := h.task("needs work", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	if n := h.count(EvStarted); n != 1 {
		t.Fatalf("started %d times; the refusal belongs in the live agent\n%s", n, h.report())
	}
	if n := h.count(EvIteration); n != 2 {
		t.Fatalf("iterations: %d\n%s", n, h.report())
	}
	refused := false
	for _, ev := range h.log {
		refused = refused || ev.Kind == EvAlert && ev.Fields["nothingToMerge"] == true
	}
	if !refused {
		t.Fatalf("no refusal event\n%s", h.report())
	}
	screen := h.eng.Screen("script-" + id)
	if screen != nil && !strings.Contains(screen.AllText(), "nothing to merge") {
		t.Errorf("the agent was not told: %s", screen.AllText())
	}
	h.waitIdle()
	if got := git(t, h.root, "show", "main:work.txt"); got != "done" {
		t.Fatalf("main:work.txt = %q", got)
	}
}

// An agent that exits after a COMPLETE with nothing to merge is started
// again with the refusal in its handover.
func TestCompleteWithoutWorkRefusedHandover(t *testing.T) {
	script := `
@ iteration=1
signal COMPLETE
@ prompt~accepted:
write work.txt done
commit "feat: the work"
signal COMPLETE
@ *
signal BLOCKED "the handover did not say why"
`
	h := newHarness(t, script, nil)
	id := h.task("needs work", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	h.waitFor(kind(EvCompleted, id))
	if n := h.count(EvStarted); n != 2 {
		t.Fatalf("started %d times\n%s", n, h.report())
	}
	if tk := h.get(id); tk.Status != beads.StatusClosed || strings.Contains(tk.CloseReason, signal.NothingToChange) {
		t.Fatalf("task %+v", tk)
	}
}

// "nothing to change: why" from a branch with no work closes the task with
// that reason and queues no merge; the same words with the tag do too, and
// sent by the agent's own process (no `chorus signal` started).
func TestNothingToChangeClosesWithReason(t *testing.T) {
	for _, tc := range []struct{ name, script string }{
		{"command", `signal COMPLETE "nothing to change: the greeting is already there"` + "\nhang\n"},
		{"sent by the agent process", `send COMPLETE "nothing to change: the greeting is already there"` + "\nhang\n"},
		{"tag", `tag COMPLETE "nothing to change: the greeting is already there"` + "\nhang\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.script, nil)
			id := h.task("add a greeting", beads.CreateOptions{})
			h.start()
			h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
			ev := h.waitFor(kind(EvCompleted, id))
			want := "nothing to change: the greeting is already there"
			if ev.Text != want {
				t.Errorf("completion text %q", ev.Text)
			}
			if tk := h.get(id); tk.Status != beads.StatusClosed || tk.CloseReason != want {
				t.Fatalf("task %+v", tk)
			}
			if n := h.count(EvMergeQueued); n != 0 {
				t.Fatalf("a merge was queued for nothing\n%s", h.report())
			}
			h.waitIdle()
			if s := h.eng.Snapshot(); len(s.Merge.Items) != 0 {
				t.Fatalf("merge queue: %+v", s.Merge.Items)
			}
		})
	}
}

// Agent B, with its own environment, tries to complete agent A's task:
// `chorus signal` refuses with exit 2, a forged envelope written straight
// into the signals folder is rejected by the engine, and A's task stays
// open until A itself completes it.
func TestSpoofedCompleteRejected(t *testing.T) {
	if _, err := os.Stat("/proc/self/environ"); err != nil {
		t.Skip("reading another process's environment needs /proc")
	}
	// B tries twice: with A's ids and its own key (refused by chorus
	// signal itself), then with A's whole environment, key included, read
	// from /proc (refused by the engine: B's process is not A's).
	script := `
@ prompt~alpha-task
write a.txt a
commit "feat: a"
run "until [ -e \"$CHORUS_DIR/../spoofed\" ]; do sleep 0.02; done"
signal COMPLETE
hang
@ prompt~beta-task
run "v=$(cat \"$CHORUS_DIR/../victim\"); CHORUS_AGENT_ID=script-$v CHORUS_TASK_ID=$v chorus signal COMPLETE > \"$CHORUS_DIR/../spoof.out\" 2>&1; echo $? > \"$CHORUS_DIR/../spoof.code\""
run "p=$(cat \"$CHORUS_DIR/../victim.pid\"); xargs -0 -a /proc/$p/environ sh -c 'exec env -i \"$@\" chorus signal COMPLETE' sh > \"$CHORUS_DIR/../steal.out\" 2>&1; echo $? > \"$CHORUS_DIR/../steal.code\""
signal PROGRESS 50
hang
`
	h := newHarness(t, script, func(c *config.Config) { c.Agents.MaxParallel = 2 })
	a := h.task("alpha-task", beads.CreateOptions{})
	b := h.task("beta-task", beads.CreateOptions{})
	os.WriteFile(filepath.Join(h.root, "victim"), []byte(a), 0o644)
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: a})
	started := h.waitFor(kind(EvStarted, a))
	pid := fmt.Sprint(started.Fields["pid"])
	os.WriteFile(filepath.Join(h.root, "victim.pid"), []byte(pid), 0o644)
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: b})
	h.waitFor(kind(EvSignal, b)) // B's PROGRESS: its spoof attempts are over

	code, _ := os.ReadFile(filepath.Join(h.root, "spoof.code"))
	out, _ := os.ReadFile(filepath.Join(h.root, "spoof.out"))
	if strings.TrimSpace(string(code)) != "2" || !strings.Contains(string(out), "does not belong to agent script-"+a) {
		t.Fatalf("chorus signal as another agent: exit %q: %s", code, out)
	}
	code, _ = os.ReadFile(filepath.Join(h.root, "steal.code"))
	out, _ = os.ReadFile(filepath.Join(h.root, "steal.out"))
	// 123: xargs saying its command failed.
	if strings.TrimSpace(string(code)) != "123" || !strings.Contains(string(out), "sent by a process of agent script-"+b+", not of agent script-"+a) {
		t.Fatalf("chorus signal with A's stolen environment: exit %q: %s", code, out)
	}
	h.waitFor(func(e Event) bool {
		return e.Kind == EvSignalRejected && e.Task == a && strings.Contains(e.Text, "agent script-"+b)
	})
	// A process outside every agent (this test), with A's ids and A's key
	// read from its environment, is refused too.
	env, err := os.ReadFile("/proc/" + pid + "/environ")
	if err != nil {
		t.Fatal(err)
	}
	key := ""
	for _, kv := range strings.Split(string(env), "\x00") {
		if v, ok := strings.CutPrefix(kv, signal.EnvKey+"="); ok {
			key = v
		}
	}
	err = signal.Send(signal.Sender{Dir: h.dir.Path, AgentID: "script-" + a, TaskID: a, Key: key}, signal.Signal{Type: signal.Complete})
	if key == "" || !errors.Is(err, signal.ErrRefused) || !strings.Contains(err.Error(), "not one of a running agent's processes") {
		t.Fatalf("a signal from outside every agent, with A's key %q: %v", key, err)
	}
	h.sync()
	if tk := h.get(a); tk.Status != beads.StatusInProgress {
		t.Fatalf("A's task after the spoofs: %+v", tk)
	}
	for _, ev := range h.log {
		if ev.Kind == EvSignal && ev.Task == a {
			t.Fatalf("a spoofed signal reached A: %+v", ev)
		}
	}
	// A's own COMPLETE still works.
	os.WriteFile(filepath.Join(h.root, "spoofed"), nil, 0o644)
	ev := h.waitFor(kind(EvSignal, a))
	if ev.Fields["source"] != "signal" {
		t.Fatalf("A's signal: %+v", ev)
	}
	h.waitFor(kind(EvCompleted, a))
}

// resultLine is how a headless Claude Code run ends: the assistant's final
// message (where tags are read), then the result event with the same text
// and the run's usage and cost.
func resultLine(text string, cost float64) string {
	msg, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"id": "msg-final",
		"content": []map[string]any{{"type": "text", "text": text}}}})
	return "print " + string(msg) + "\nprint " + resultEvent(text, cost) + "\n"
}

// resultEvent is the result event alone.
func resultEvent(text string, cost float64) string {
	b, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text,
		"usage": map[string]any{"input_tokens": 100, "output_tokens": 500}, "total_cost_usd": cost})
	return string(b)
}

// headless makes the scripted agent speak Claude Code's stream-json, the
// way `claude -p` does.
func headless(c *config.Config) {
	p := c.Agents.Available["script"]
	p.Format = config.FormatClaudeJSON
	c.Agents.Available["script"] = p
	c.QualityCommands = []config.QualityCommand{{Name: "check", Required: true, Order: 1,
		Command: `echo ran >> "$CHORUS_DIR/quality-ran"; grep -q good result.txt || { echo QUALITY-SAYS-BAD; exit 1; }`}}
}

// waitQuality is a script line: the agent lingers until the quality
// command of its iteration has run (one line per run), as a headless CLI
// that is still writing its last events would.
const waitQuality = `run "until [ \"$(cat \"$CHORUS_DIR/quality-ran\" 2>/dev/null | wc -l)\" -ge \"$CHORUS_ITERATION\" ]; do sleep 0.01; done; sleep 0.2"` + "\n"

// A headless agent whose COMPLETE fails the quality check and that exits
// only after the check ran: the next iteration is a new process whose
// handover holds the failing check's output, never "exited without
// signalling", and no iteration is lost.
func TestHeadlessQualityFailureHandover(t *testing.T) {
	script := "@ iteration=1\nwrite result.txt bad\ncommit \"first try\"\n" + resultLine("Done. <chorus>COMPLETE</chorus>", 0.25) + waitQuality +
		"@ prompt~QUALITY-SAYS-BAD\nwrite result.txt good\ncommit fix\n" + resultLine("Fixed. <chorus>COMPLETE</chorus>", 0.25) +
		"@ *\n" + resultLine("<chorus>BLOCKED: the handover lacks the failed check</chorus>", 0)
	h := newHarness(t, script, headless)
	id := h.task("needs two tries", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(func(e Event) bool { return e.Task == id && (e.Kind == EvCompleted || e.Kind == EvBlocked) })
	if ev.Kind != EvCompleted {
		t.Fatalf("%s: %s\n%s", ev.Kind, ev.Text, h.report())
	}
	if n := h.count(EvIteration); n != 2 {
		t.Fatalf("iterations: %d\n%s", n, h.report())
	}
	if u, _ := ev.Fields["usage"].(Usage); u.CostUSD != 0.5 || u.Output != 1000 {
		t.Fatalf("usage of both runs: %+v", ev.Fields["usage"])
	}
}

// A headless agent that completes through `chorus signal` goes on to its
// result event (usage and cost) before it exits; that usage is booked on
// the task before it completes. (The result is written by a child that a
// stop would kill, as it would kill a CLI.)
func TestHeadlessSignalUsageBooked(t *testing.T) {
	result := resultEvent("Done.", 0.75)
	last := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(waitQuality), `run "`), `"`)
	last, _ = strconv.Unquote(`"` + last + `"`)
	script := "write result.txt good\ncommit work\nsignal COMPLETE\nrun " + strconv.Quote(last+"; printf '%s\\n' '"+result+"'") + "\n"
	h := newHarness(t, script, headless)
	id := h.task("costly", beads.CreateOptions{})
	h.start()
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvCompleted, id))
	if u, _ := ev.Fields["usage"].(Usage); u.CostUSD != 0.75 || u.Output != 500 || u.Input != 100 {
		t.Fatalf("usage at completion: %+v\n%s", ev.Fields["usage"], h.report())
	}
	h.sync()
	if u := h.eng.Snapshot().Usage; u.CostUSD != 0.75 {
		t.Fatalf("session usage: %+v", u)
	}
}

// After a restart, a signal left from the earlier session (signed with a
// key that died with it) and that session's published keys are refused:
// the respawned agent has a new key.
func TestStaleSignalAfterRestartRefused(t *testing.T) {
	h := newHarness(t, "write a.txt a\ncommit \"feat: a\"\nsignal COMPLETE\nhang\n", nil)
	id := h.task("restarted", beads.CreateOptions{})
	old, _ := signal.NewKey()
	if err := signal.PublishKey(h.dir.Path, "script-"+id, old); err != nil {
		t.Fatal(err)
	}
	// Nothing waits for an engine that is not running.
	from := signal.Sender{Dir: h.dir.Path, AgentID: "script-" + id, TaskID: id, Key: old}
	if err := signal.Send(from, signal.Signal{Type: signal.Complete}); err == nil || !strings.Contains(err.Error(), "is Chorus running?") {
		t.Fatalf("a signal with no engine: %v", err)
	}
	h.start()
	if err := signal.CheckKey(h.dir.Path, "script-"+id, old); err == nil {
		t.Fatal("the earlier session's key is still published")
	}
	if err := signal.Send(from, signal.Signal{Type: signal.Complete}); !errors.Is(err, signal.ErrRefused) {
		t.Fatalf("a signal from no agent: %v", err)
	}
	h.waitFor(func(e Event) bool { return e.Kind == EvSignalRejected && e.Task == id })
	h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	ev := h.waitFor(kind(EvSignal, id))
	if ev.Fields["source"] != "signal" {
		t.Fatalf("signal %+v", ev)
	}
	h.waitFor(kind(EvCompleted, id))
}
