package orchestrator

import (
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/config"
)

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
