package orchestrator

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

func selfCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTaskToAgentStart measures a ready task becoming a running agent
// (claim, worktree, prompt, spawn) against `git worktree add` alone in the
// same repository, interleaved so both see the same machine load; the
// ratio of the medians is the figure. BenchmarkGitWorktreeAdd is the floor
// on its own.
func BenchmarkTaskToAgentStart(b *testing.B) {
	t := &testing.T{}
	h := newHarness(t, "hang\n", func(c *config.Config) { c.Agents.MaxParallel = 64 })
	h.t = t
	if b.N > 64 {
		b.Fatal("at most 64 agents run at once: use -benchtime 64x or less")
	}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = h.task(fmt.Sprintf("bench %d", i), beads.CreateOptions{})
	}
	h.start()
	defer h.stop()
	var starts, adds []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// The last start's state write finishes first, so neither side
		// pays for the other.
		if err := h.eng.Sync(context.Background()); err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		git(t, h.root, "worktree", "add", "-q", "-b", fmt.Sprintf("plain/%d", i), filepath.Join(h.root, ".worktrees", fmt.Sprintf("plain-%d", i)), "main")
		adds = append(adds, time.Since(t0))
		b.StartTimer()
		t0 = time.Now()
		if err := h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: ids[i]}); err != nil {
			b.Fatal(err)
		}
		h.waitFor(kind(EvStarted, ids[i]))
		starts = append(starts, time.Since(t0))
	}
	b.StopTimer()
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(medianDur(starts)), "start-ms")
	b.ReportMetric(ms(medianDur(adds)), "worktree-add-ms")
	b.ReportMetric(float64(medianDur(starts))/float64(medianDur(adds)), "start/worktree-add")
}

func medianDur(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func BenchmarkGitWorktreeAdd(b *testing.B) {
	t := &testing.T{}
	h := newHarness(t, "hang\n", nil)
	for i := 0; i < b.N; i++ {
		git(t, h.root, "worktree", "add", "-q", "-b", fmt.Sprintf("plain/%d", i), filepath.Join(h.root, ".worktrees", fmt.Sprintf("plain-%d", i)), "main")
	}
}

// TestAutopilotCPUPerTask reports Chorus's own CPU time per task (agents
// and git are child processes and not counted) for batches of 20 and 200
// trivial tasks with 8 agents. CHORUS_BENCH=1 to run.
func TestAutopilotCPUPerTask(t *testing.T) {
	if os.Getenv("CHORUS_BENCH") == "" {
		t.Skip("set CHORUS_BENCH=1")
	}
	for _, n := range benchSizes() {
		h := newHarness(t, "run \"echo x > f-$CHORUS_TASK_ID\"\ncommit work\nsignal COMPLETE\n", func(c *config.Config) {
			c.Mode = config.ModeAutopilot
			c.Agents.MaxParallel = 8
			c.Checkpoints.Enabled = false
		})
		for i := 0; i < n; i++ {
			h.task(fmt.Sprintf("t%d", i), beads.CreateOptions{})
		}
		cpu0, wall0 := selfCPU(), time.Now()
		h.start()
		h.waitIdle()
		cpu, wall := selfCPU()-cpu0, time.Since(wall0)
		h.stop()
		if got := h.eng.Snapshot().Stats.TasksCompleted; got != n {
			t.Fatalf("completed %d of %d", got, n)
		}
		t.Logf("%d tasks: Chorus CPU %.1f ms/task, wall %.0f ms/task", n, float64(cpu.Milliseconds())/float64(n), float64(wall.Milliseconds())/float64(n))
	}
}

// TestIdleCPU reports Chorus's own CPU while 8 agents sit idle for 60 s.
// CHORUS_BENCH=1 to run.
func TestIdleCPU(t *testing.T) {
	if os.Getenv("CHORUS_BENCH") == "" {
		t.Skip("set CHORUS_BENCH=1")
	}
	h := newHarness(t, "print waiting\nhang\n", func(c *config.Config) { c.Agents.MaxParallel = 8 })
	var ids []string
	for i := 0; i < 8; i++ {
		ids = append(ids, h.task(fmt.Sprintf("idle %d", i), beads.CreateOptions{}))
	}
	h.start()
	for _, id := range ids {
		h.eng.Do(context.Background(), Command{Kind: CmdAssign, TaskID: id})
	}
	for n := 0; n < 8; {
		if ev := h.waitFor(kind(EvStarted, "")); ev.Kind == EvStarted {
			n++
		}
	}
	cpu0 := selfCPU()
	timer := time.NewTimer(60 * time.Second)
	<-timer.C // the measurement window itself, not a wait for an event
	cpu := selfCPU() - cpu0
	t.Logf("8 idle agents, 60 s: Chorus CPU %v (%.3f%% of one core)", cpu, float64(cpu)/float64(60*time.Second)*100)
}

func benchSizes() []int {
	if os.Getenv("CHORUS_BENCH_SIZES") == "200" {
		return []int{200}
	}
	return []int{20, 200}
}
