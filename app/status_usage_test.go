package app

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// A headless agent that finishes through `chorus signal` and then writes
// its result event: the run's usage and cost reach `chorus status`, the
// session total and the task's.
func TestStatusShowsUsage(t *testing.T) {
	result := `{"type":"result","subtype":"success","is_error":false,"result":"Done.","usage":{"input_tokens":1200,"output_tokens":500},"total_cost_usd":0.42}`
	dir := scriptedProject(t, `
write done.txt yes
commit "feat: done"
signal COMPLETE
run `+strconv.Quote("printf '%s\\n' '"+result+"'")+`
`, func(cfg map[string]any) {
		agents := cfg["agents"].(map[string]any)["available"].(map[string]any)
		agents["script"].(map[string]any)["format"] = "claude-stream-json"
	})
	id := strings.TrimSpace(chorus(t, dir, "task", "create", "costly").stdout)
	if code, out := runBinary(t, dir, "--autopilot", "--headless"); code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	r := chorus(t, dir, "status", "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v %q", err, r.stdout)
	}
	if st.Usage == nil || st.Usage.Session.CostUSD != 0.42 || st.Usage.Session.Output != 500 || st.Usage.SessionStarted.IsZero() {
		t.Fatalf("session usage: %+v", st.Usage)
	}
	if u := st.Usage.Tasks[id]; u.CostUSD != 0.42 || u.Input != 1200 {
		t.Fatalf("task usage: %+v", st.Usage.Tasks)
	}
	r = chorus(t, dir, "status")
	if !strings.Contains(r.stdout, "Usage       1.7k tokens") || !strings.Contains(r.stdout, "$0.4200") || !strings.Contains(r.stdout, id) {
		t.Fatalf("status:\n%s", r.stdout)
	}
}
