package app

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/orchestrator"
)

// `chorus status` names this instance and the others whose heartbeats the
// task store holds, a silent one marked.
func TestStatusShowsTheTeam(t *testing.T) {
	dir := gitRepo(t)
	chorus(t, dir, "init", "--yes")
	chorus(t, dir, "task", "create", "a")
	s, err := beads.Open(context.Background(), beads.OpenOptions{RepoDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for id, age := range map[string]time.Duration{"box-live": 5 * time.Second, "box-gone": time.Hour} {
		b, _ := json.Marshal(orchestrator.Heartbeat{ID: id, Host: "box", PID: 42, Beat: time.Now().Add(-age), Agents: []string{"claude-t-1:t-1"}})
		if err := s.(beads.Shared).SetShared(context.Background(), orchestrator.HeartbeatPrefix+id, string(b)); err != nil {
			t.Fatal(err)
		}
	}
	r := chorus(t, dir, "status", "--json")
	var st statusReport
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil {
		t.Fatalf("%v %q", err, r.stdout)
	}
	if st.Instance == "" || len(st.Team) != 2 || st.Team[0].ID != "box-gone" || !st.Team[0].Silent || st.Team[1].Silent ||
		len(st.Team[1].Agents) != 1 {
		t.Fatalf("instance %q, team %+v", st.Instance, st.Team)
	}
	r = chorus(t, dir, "status")
	for _, want := range []string{"Instance    " + st.Instance, "Team        2 instance(s)", "box-live", "1 agent(s): claude-t-1:t-1", "silent"} {
		if !strings.Contains(r.stdout, want) {
			t.Fatalf("status lacks %q:\n%s", want, r.stdout)
		}
	}
}
