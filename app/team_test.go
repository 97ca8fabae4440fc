package app

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/internal/testkit"
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

// init on a clone whose tasks are on a Dolt server (a committed
// server-mode .beads/metadata.json) with a remote says so and sets
// merge.remote.
func TestInitDetectsATeam(t *testing.T) {
	dir := gitRepo(t)
	bare := filepath.Join(t.TempDir(), "remote.git")
	testkit.Git(t, dir, "init", "-q", "--bare", bare)
	testkit.Git(t, dir, "remote", "add", "origin", bare)
	if err := os.MkdirAll(filepath.Join(dir, ".beads"), 0o755); err != nil {
		t.Fatal(err)
	}
	meta := `{"database":"dolt","backend":"dolt","dolt_mode":"server","dolt_server_host":"10.0.0.5","dolt_server_port":3307,"dolt_database":"tm"}`
	if err := os.WriteFile(filepath.Join(dir, ".beads", "metadata.json"), []byte(meta), 0o644); err != nil {
		t.Fatal(err)
	}
	r := chorus(t, dir, "init", "--yes")
	for _, want := range []string{"task queue: bd on a shared Dolt server (10.0.0.5:3307, database tm)", "team remote: origin (merge.remote)"} {
		if !strings.Contains(r.stderr, want) {
			t.Fatalf("init did not say %q:\n%s", want, r.stderr)
		}
	}
	m, err := config.ReadJSONObject(filepath.Join(dir, ".chorus", "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if mg, _ := m["merge"].(map[string]any); mg["remote"] != "origin" {
		t.Fatalf("merge in config: %v", m["merge"])
	}
}

// A team run (merge.remote) on the built-in store is refused with what to
// do: every clone would have its own copy of the tasks.
func TestBuiltinStoreRefusesATeamRun(t *testing.T) {
	dir := scriptedProject(t, "signal COMPLETE\n", func(cfg map[string]any) {
		cfg["merge"].(map[string]any)["remote"] = "origin"
	})
	chorus(t, dir, "task", "create", "a")
	code, out := runBinary(t, dir, "--autopilot", "--headless")
	if code != ExitSetup || !strings.Contains(out, "needs a server") || !strings.Contains(out, "bd init --server") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
}
