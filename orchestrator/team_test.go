package orchestrator

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/config"
)

func TestParseActor(t *testing.T) {
	for _, c := range []struct {
		in, inst, agent string
		ok              bool
	}{
		{"chorus/host-1a2b/claude-ch-1", "host-1a2b", "claude-ch-1", true},
		{"chorus/claude-ch-1", "", "claude-ch-1", true}, // before instance ids
		{"chorus/", "", "", false},
		{"chorus//x", "", "", false},
		{"alice", "", "", false},
		{"", "", "", false},
	} {
		inst, agent, ok := ParseActor(c.in)
		if inst != c.inst || agent != c.agent || ok != c.ok {
			t.Errorf("ParseActor(%q) = %q, %q, %v; want %q, %q, %v", c.in, inst, agent, ok, c.inst, c.agent, c.ok)
		}
	}
	if !OwnClaim("chorus/me/a", "me") || !OwnClaim("chorus/a", "me") || OwnClaim("chorus/other/a", "me") || OwnClaim("bob", "me") {
		t.Error("OwnClaim: own and legacy claims only")
	}
}

func TestDeadClaims(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	task := func(id, status, who string) beads.Task { return beads.Task{ID: id, Status: status, Assignee: who} }
	tasks := []beads.Task{
		task("a", beads.StatusInProgress, "chorus/me/x-a"),       // mine
		task("b", beads.StatusInProgress, "chorus/live/x-b"),     // heartbeat fresh
		task("c", beads.StatusInProgress, "chorus/late/x-c"),     // heartbeat just at the limit
		task("d", beads.StatusInProgress, "chorus/dead/x-d"),     // heartbeat too old
		task("e", beads.StatusInProgress, "chorus/gone/x-e"),     // no heartbeat at all
		task("f", beads.StatusOpen, "chorus/dead/x-f"),           // not in progress
		task("g", beads.StatusInProgress, "alice"),               // a person's
		task("h", beads.StatusInProgress, "chorus/x-h"),          // before instance ids: its own instance's
		task("i", beads.StatusInProgress, "chorus/dead/x-i"),     // a second one of dead's
		task("j", beads.StatusClosed, "chorus/dead/x-j"),         // done
		task("k", beads.StatusInProgress, "chorus/live/x-k"),     // live's second
		task("l", beads.StatusBlocked, "chorus/gone/x-l"),        // blocked stays blocked
		task("m", beads.StatusInProgress, "chorus/future/x-m"),   // clock ahead: alive
		task("n", beads.StatusInProgress, "chorus/me/x-n-again"), // mine
	}
	beats := map[string]Heartbeat{
		"me":     {Beat: now.Add(-time.Hour)}, // own age never matters
		"live":   {Beat: now.Add(-10 * time.Second)},
		"late":   {Beat: now.Add(-2 * time.Minute)},
		"dead":   {Beat: now.Add(-2*time.Minute - time.Second)},
		"future": {Beat: now.Add(time.Minute)},
	}
	got := DeadClaims(tasks, beats, "me", now, 2*time.Minute)
	var ids []string
	for _, d := range got {
		ids = append(ids, d.Task+"@"+d.Instance)
	}
	if want := "d@dead e@gone i@dead"; strings.Join(ids, " ") != want {
		t.Fatalf("DeadClaims = %v; want %s", ids, want)
	}
	if !got[1].LastBeat.IsZero() || !got[0].LastBeat.Equal(beats["dead"].Beat) {
		t.Fatalf("last beats: %+v", got)
	}
}

// otherInstance makes a claim and a heartbeat as another Chorus would.
func otherInstance(t *testing.T, s beads.Store, id, task string, beat time.Time) {
	t.Helper()
	if _, err := s.Claim(context.Background(), task, ActorPrefix(id)+"script-"+task); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(Heartbeat{ID: id, Host: "elsewhere", Beat: beat})
	if err := s.(beads.Shared).SetShared(context.Background(), HeartbeatPrefix+id, string(b)); err != nil {
		t.Fatal(err)
	}
}

// A Chorus that starts leaves a live instance's claims alone, releases a
// dead one's (an event and a line of the session log), and says it is
// there itself.
func TestStartLeavesLiveInstancesClaims(t *testing.T) {
	h := newHarness(t, "hang\n", nil)
	live := h.task("live", beads.CreateOptions{})
	dead := h.task("dead", beads.CreateOptions{})
	otherInstance(t, h.store, "live-1", live, time.Now())
	otherInstance(t, h.store, "dead-2", dead, time.Now().Add(-time.Hour))
	h.start()
	if tk := h.get(live); tk.Status != beads.StatusInProgress || tk.Assignee != ActorPrefix("live-1")+"script-"+live {
		t.Fatalf("live instance's task after start: %s by %s", tk.Status, tk.Assignee)
	}
	if tk := h.get(dead); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("dead instance's task after start: %s by %s", tk.Status, tk.Assignee)
	}
	log, err := os.ReadFile(h.dir.SessionLog())
	if err != nil || !strings.Contains(string(log), string(EvDeadReleased)) || !strings.Contains(string(log), "dead-2") {
		t.Fatalf("no %s line for dead-2 in the session log (%v):\n%s", EvDeadReleased, err, log)
	}
	team, err := ReadTeam(context.Background(), h.store)
	if err != nil {
		t.Fatal(err)
	}
	me, ok := team[h.eng.Instance()]
	if !ok || me.PID != os.Getpid() || me.Beat.IsZero() {
		t.Fatalf("own heartbeat: %+v in %v", me, team)
	}
	if _, ok := team["dead-2"]; ok {
		t.Fatalf("the dead instance's heartbeat stayed: %v", team)
	}
	if _, ok := team["live-1"]; !ok {
		t.Fatalf("the live instance's heartbeat went: %v", team)
	}
	h.stop()
	team, _ = ReadTeam(context.Background(), h.store)
	if _, ok := team[h.eng.Instance()]; ok {
		t.Fatalf("heartbeat left after a clean stop: %v", team)
	}
}

// An instance that goes silent while this one runs: its claim is released
// only once its heartbeat is older than team.deadAfterSeconds.
func TestSilentInstanceReleasedAfterTimeout(t *testing.T) {
	h := newHarness(t, "hang\n", func(c *config.Config) {
		c.Team = config.Team{HeartbeatSeconds: 1, DeadAfterSeconds: 2}
	})
	x := h.task("x", beads.CreateOptions{})
	beat := time.Now()
	otherInstance(t, h.store, "other-3", x, beat)
	h.start()
	if tk := h.get(x); tk.Status != beads.StatusInProgress {
		t.Fatalf("released at start with a fresh heartbeat: %+v", tk)
	}
	ev := h.waitFor(kind(EvDeadReleased, x))
	released := ev.Time
	if age := released.Sub(beat); age <= 2*time.Second {
		t.Fatalf("released %s after the last heartbeat; the limit is 2s", age)
	}
	if tk := h.get(x); tk.Status != beads.StatusOpen || tk.Assignee != "" {
		t.Fatalf("after release: %s by %s", tk.Status, tk.Assignee)
	}
	t.Logf("a silent instance's task waited %s after its last heartbeat (deadAfter 2s, heartbeat 1s)", released.Sub(beat).Round(time.Millisecond))
}

// closeFails is a store whose Close keeps failing (a server refusing it).
type closeFails struct{ beads.Store }

func (closeFails) Close(context.Context, string, string) error {
	return errors.New("Error 1213 (40001): serialization failure")
}

// A task whose close failed stays completed-not-closed: the next start
// closes it instead of taking its claim for a crash's and opening it again
// for another instance to do twice.
func TestFailedCloseIsClosedAtNextStart(t *testing.T) {
	h := newHarness(t, "write out.txt done\ncommit work\nsignal COMPLETE\n", func(c *config.Config) { c.Mode = config.ModeAutopilot })
	x := h.task("x", beads.CreateOptions{})
	real := h.store
	h.store = closeFails{real}
	h.start()
	h.waitFor(kind(EvCompleted, x))
	h.waitIdle()
	h.stop()
	if tk, _ := real.Get(context.Background(), x); tk.Status != beads.StatusInProgress {
		t.Fatalf("task after the failed close: %s", tk.Status)
	}
	h.store = real
	h.start()
	if tk := h.get(x); tk.Status != beads.StatusClosed {
		t.Fatalf("task after the next start: %s by %q; want closed", tk.Status, tk.Assignee)
	}
}
