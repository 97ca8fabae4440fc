package orchestrator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/gitx"
)

// Several Chorus instances may work one task queue (bd on a shared Dolt
// server). Each claims under its own actor, chorus/<instance>/<agent>,
// and leaves a heartbeat among the store's shared values, where every
// instance reads it. An instance releases only its own claims, and
// another's only once that one's heartbeat is older than
// team.deadAfterSeconds.

// HeartbeatPrefix starts the shared-value key of every instance's heartbeat.
const HeartbeatPrefix = "chorus.instance."

// EvDeadReleased: a claim of an instance taken for dead was released.
const EvDeadReleased EventKind = "dead_instance_released"

// Heartbeat is what an instance leaves in the task store.
type Heartbeat struct {
	ID      string    `json:"id"`
	Host    string    `json:"host"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Beat    time.Time `json:"beat"`
	// Agents are its running agents, as agent:task.
	Agents []string `json:"agents"`
}

// ActorPrefix is what every claim of an instance's agents starts with.
func ActorPrefix(instance string) string { return "chorus/" + instance + "/" }

// ParseActor reads a claim's assignee: chorus/<instance>/<agent>, or the
// older chorus/<agent> of a Chorus that had no instance id (instance "").
// ok is false for an assignee that is not Chorus's (a person's).
func ParseActor(a string) (instance, agent string, ok bool) {
	rest, found := strings.CutPrefix(a, "chorus/")
	if !found || rest == "" {
		return "", "", false
	}
	if i, ag, two := strings.Cut(rest, "/"); two {
		if i == "" || ag == "" {
			return "", "", false
		}
		return i, ag, true
	}
	return "", rest, true
}

// OwnClaim: assignee is a claim this instance may release on its own: its
// own, or one from before instance ids (one Chorus per queue then).
func OwnClaim(assignee, me string) bool {
	inst, _, ok := ParseActor(assignee)
	return ok && (inst == me || inst == "")
}

// DeadClaim is a claim whose instance is taken for dead.
type DeadClaim struct {
	Task, Assignee, Instance string
	LastBeat                 time.Time // zero: no heartbeat found
}

// DeadClaims says which in-progress tasks another instance holds while
// its heartbeat is older than deadAfter, or gone (an instance writes its
// heartbeat before it claims, and its record is removed only after its
// claims were released). Pure.
func DeadClaims(tasks []beads.Task, beats map[string]Heartbeat, me string, now time.Time, deadAfter time.Duration) []DeadClaim {
	var out []DeadClaim
	for _, t := range tasks {
		if t.Status != beads.StatusInProgress {
			continue
		}
		inst, _, ok := ParseActor(t.Assignee)
		if !ok || inst == "" || inst == me {
			continue
		}
		b, found := beats[inst]
		if found && now.Sub(b.Beat) <= deadAfter {
			continue
		}
		out = append(out, DeadClaim{Task: t.ID, Assignee: t.Assignee, Instance: inst, LastBeat: b.Beat})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Task < out[j].Task })
	return out
}

// ReadTeam returns the heartbeats in s by instance id (none when the store
// keeps no shared values).
func ReadTeam(ctx context.Context, s beads.Store) (map[string]Heartbeat, error) {
	sh, ok := s.(beads.Shared)
	if !ok {
		return map[string]Heartbeat{}, nil
	}
	vals, err := sh.SharedValues(ctx, HeartbeatPrefix)
	if err != nil {
		return nil, err
	}
	out := map[string]Heartbeat{}
	for k, v := range vals {
		var h Heartbeat
		if json.Unmarshal([]byte(v), &h) != nil {
			continue // not ours to read; it never makes anyone dead
		}
		h.ID = strings.TrimPrefix(k, HeartbeatPrefix)
		out[h.ID] = h
	}
	return out, nil
}

func (e *Engine) heartbeatKey() string { return HeartbeatPrefix + e.instance }

// beat writes this instance's heartbeat.
func (e *Engine) beat(ctx context.Context) error {
	sh, ok := e.opt.Store.(beads.Shared)
	if !ok {
		return nil
	}
	snap := e.Snapshot()
	h := Heartbeat{ID: e.instance, Host: e.host, PID: os.Getpid(), Started: e.upSince, Beat: time.Now().UTC(), Agents: []string{}}
	for id, a := range snap.Agents {
		h.Agents = append(h.Agents, id+":"+a.TaskID)
	}
	sort.Strings(h.Agents)
	b, _ := json.Marshal(h)
	return sh.SetShared(ctx, e.heartbeatKey(), string(b))
}

// sweep releases the claims of instances taken for dead, each an event
// (and so a line of the report), then forgets their heartbeats. The tasks
// are read before the heartbeats: a claim seen was made after its
// instance's heartbeat was written, so a live claimer is never missed.
func (e *Engine) sweep(ctx context.Context) {
	if _, ok := e.opt.Store.(beads.Shared); !ok {
		return
	}
	tasks, err := e.opt.Store.List(ctx)
	if err != nil {
		return // the next beat tries again; a store outage shows elsewhere
	}
	beats, err := ReadTeam(ctx, e.opt.Store)
	if err != nil {
		return
	}
	now := time.Now()
	dead := DeadClaims(tasks, beats, e.instance, now, e.deadAfter())
	failed := map[string]bool{}
	for _, d := range dead {
		if err := e.opt.Store.Release(ctx, d.Task); err != nil {
			failed[d.Instance] = true
			e.emit(Event{Kind: EvError, Task: d.Task, Text: "releasing the claim of " + d.Instance + ", taken for dead: " + err.Error()})
			continue
		}
		silent := "no heartbeat"
		fields := map[string]any{"instance": d.Instance, "assignee": d.Assignee, "deadAfterSeconds": int(e.deadAfter().Seconds())}
		if !d.LastBeat.IsZero() {
			silent = fmt.Sprintf("silent for %s", now.Sub(d.LastBeat).Round(100*time.Millisecond))
			fields["lastHeartbeat"] = d.LastBeat
		}
		e.emit(Event{Kind: EvDeadReleased, Task: d.Task, Fields: fields,
			Text: fmt.Sprintf("task back to open: instance %s (%s) is taken for dead", d.Instance, silent)})
	}
	sh := e.opt.Store.(beads.Shared)
	for id, b := range beats {
		if id != e.instance && now.Sub(b.Beat) > e.deadAfter() && !failed[id] {
			_ = sh.ClearShared(ctx, HeartbeatPrefix+id)
		}
	}
	e.teamMu.Lock()
	e.team = beats
	e.teamMu.Unlock()
}

func (e *Engine) deadAfter() time.Duration {
	return time.Duration(e.cfg.Team.DeadAfterSeconds) * time.Second
}

// teamLoop beats and sweeps until ctx ends, then removes the heartbeat:
// an instance that stopped cleanly released its claims.
func (e *Engine) teamLoop(ctx context.Context, done chan<- struct{}) {
	defer close(done)
	if _, ok := e.opt.Store.(beads.Shared); !ok {
		return
	}
	every := time.Duration(e.cfg.Team.HeartbeatSeconds) * time.Second
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			if err := e.beat(ctx); err != nil && ctx.Err() == nil {
				e.emit(Event{Kind: EvError, Text: "writing this instance's heartbeat: " + err.Error()})
			}
			e.sweep(ctx)
		case <-ctx.Done():
			return
		}
	}
}

// shareBranch pushes an agent's branch to merge.remote when
// merge.pushBranches asks, in the background, so teammates see the work
// in progress. A failure is said once per run; it never stops the agent.
func (e *Engine) shareBranch(branch string) {
	if !e.cfg.Merge.PushBranches || e.cfg.Merge.Remote == "" || branch == "" {
		return
	}
	e.wg.Add(1) // the caller, a supervisor, is counted: never zero here
	go func() {
		defer e.wg.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		ref := "refs/heads/" + branch
		if _, err := gitx.Git(ctx, e.opt.Dir.Root, "push", "-q", "--force", "--no-verify", e.cfg.Merge.Remote, ref+":"+ref); err != nil && e.pushWarned.CompareAndSwap(false, true) {
			e.emit(Event{Kind: EvAlert, Text: fmt.Sprintf("pushing %s to %s (merge.pushBranches): %v; the work stays here and still lands", branch, e.cfg.Merge.Remote, err)})
		}
	}()
}

// leaveTeam removes this instance's heartbeat after a clean stop, its
// claims released: nobody need wait for it to go silent.
func (e *Engine) leaveTeam() {
	sh, ok := e.opt.Store.(beads.Shared)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = sh.ClearShared(ctx, e.heartbeatKey())
}

// Team is the instances last read from the task store.
func (e *Engine) Team() map[string]Heartbeat {
	e.teamMu.Lock()
	defer e.teamMu.Unlock()
	return e.team
}

// Instance is this engine's instance id.
func (e *Engine) Instance() string { return e.instance }
