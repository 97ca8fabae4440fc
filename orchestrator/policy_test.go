package orchestrator

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	lim := Limits{MaxIterations: 5, MaxAgentErrors: 3, StuckIterations: 2, StuckAlerts: 2, RepeatedFailures: 3, MaxNudges: 2, MaxStartFails: 3}
	type want struct {
		act     Action
		counted bool
		reason  string // a part of the reason
		alert   bool
		next    Counters
	}
	cases := []struct {
		name string
		c    Counters
		l    Limits
		t    Turn
		w    want
	}{
		{"exit 0 without COMPLETE respawns, counted", Counters{Iterations: 1}, lim,
			Turn{End: EndExited, Failure: "exited without signalling"},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 2, NoCommitStreak: 1}}},
		{"a crash respawns and counts an error", Counters{Iterations: 1}, lim,
			Turn{End: EndCrashed, Failure: "exit 1"},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 2, Errors: 1, NoCommitStreak: 1}}},
		{"the third crash in a row fails the task", Counters{Iterations: 2, Errors: 2}, lim,
			Turn{End: EndCrashed, Failure: "The agent process exited with code 3 before finishing."},
			want{act: ActFail, counted: true, reason: "failed 3 times in a row; last: The agent process exited with code 3", next: Counters{Iterations: 3, Errors: 3}}},
		{"a crash of a live interactive agent restarts it, never types", Counters{}, lim,
			Turn{End: EndCrashed, Alive: true, Interactive: true, Failure: "x"},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 1, Errors: 1, NoCommitStreak: 1}}},
		{"a turn that is not a crash clears the error streak", Counters{Iterations: 1, Errors: 2}, lim,
			Turn{End: EndExited, Committed: true},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 2}}},
		{"failed check of a live interactive agent: feedback typed", Counters{}, lim,
			Turn{End: EndCheckFailed, Alive: true, Interactive: true, Committed: true, Failure: "test failed"},
			want{act: ActFeedback, counted: true, next: Counters{Iterations: 1}}},
		{"failed check of a headless agent: respawn", Counters{}, lim,
			Turn{End: EndCheckFailed, Alive: true, Failure: "test failed"},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 1, NoCommitStreak: 1}}},
		{"refused COMPLETE of a live interactive agent: feedback", Counters{}, lim,
			Turn{End: EndRefused, Alive: true, Interactive: true, Failure: "nothing to merge"},
			want{act: ActFeedback, counted: true, next: Counters{Iterations: 1, NoCommitStreak: 1}}},
		{"the same check failure 3 times: a person", Counters{Iterations: 2, FailStreak: 3}, lim,
			Turn{End: EndCheckFailed, Committed: true, Failure: "go test failed"},
			want{act: ActNeedsPerson, counted: true, reason: "same quality failure 3 times", next: Counters{Iterations: 3, FailStreak: 3}}},
		{"stuck alert every stuckIterations without a commit", Counters{Iterations: 1, NoCommitStreak: 1}, lim,
			Turn{End: EndExited},
			want{act: ActRespawn, counted: true, alert: true, next: Counters{Iterations: 2, NoCommitStreak: 2}}},
		{"stuckAlerts alerts in a row: a person", Counters{Iterations: 3, NoCommitStreak: 3}, lim,
			Turn{End: EndExited},
			want{act: ActNeedsPerson, counted: true, alert: true, reason: "2 stuck alerts", next: Counters{Iterations: 4, NoCommitStreak: 4}}},
		{"a person's Continue restarts the stuck count from this turn", Counters{Iterations: 3, NoCommitStreak: 3}, lim,
			Turn{End: EndExited, Continued: true},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 4, NoCommitStreak: 1}}},
		{"the last iteration spent: failed with the last failure", Counters{Iterations: 4}, lim,
			Turn{End: EndCheckFailed, Committed: true, Failure: "lint failed"},
			want{act: ActFail, counted: true, reason: "reached maxIterations (5) without completing; last: lint failed", next: Counters{Iterations: 5}}},
		{"no iteration limit: goes on", Counters{Iterations: 400}, Limits{},
			Turn{End: EndExited, Committed: true},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 401}}},
		{"unconfirmed COMPLETE: a nudge, no iteration spent", Counters{Iterations: 1}, lim,
			Turn{End: EndUnconfirmed, Alive: true, Interactive: true, Committed: true},
			want{act: ActNudge, next: Counters{Iterations: 1, Nudges: 1}}},
		{"nudges past the limit: a person", Counters{Iterations: 1, Nudges: 2}, lim,
			Turn{End: EndUnconfirmed, Alive: true, Interactive: true, Committed: true, Failure: "tag in backticks"},
			want{act: ActNeedsPerson, counted: true, reason: "did not confirm its COMPLETE after 2 questions", next: Counters{Iterations: 2, Nudges: 3}}},
		{"stopped by Chorus: released, nothing counted", Counters{Iterations: 2, Errors: 1}, lim,
			Turn{End: EndStopped, Failure: "Chorus is shutting down"},
			want{act: ActRelease, reason: "shutting down", next: Counters{Iterations: 2, Errors: 1}}},
		{"the engine died: respawn free", Counters{Iterations: 1}, lim,
			Turn{End: EndEngineDied},
			want{act: ActRespawn, next: Counters{Iterations: 1}}},
		{"the host was lost (pod deleted): respawn free, the error streak kept", Counters{Iterations: 1, Errors: 1, NoCommitStreak: 1}, lim,
			Turn{End: EndHostLost, Failure: "pod p deleted"},
			want{act: ActRespawn, next: Counters{Iterations: 1, Errors: 1, NoCommitStreak: 1, HostLosses: 1}}},
		{"a lost host at the iteration limit still runs again", Counters{Iterations: 5}, lim,
			Turn{End: EndHostLost, Failure: "node lost"},
			want{act: ActRespawn, next: Counters{Iterations: 5, HostLosses: 1}}},
		{"the third host lost in a row fails the task", Counters{Iterations: 1, HostLosses: 2}, lim,
			Turn{End: EndHostLost, Failure: "pod p evicted: The node was low on memory."},
			want{act: ActFail, reason: "host was lost 3 times in a row; last: pod p evicted", next: Counters{Iterations: 1, HostLosses: 3}}},
		{"a configured bound on lost hosts", Counters{HostLosses: 1}, Limits{MaxHostLosses: 2},
			Turn{End: EndHostLost, Failure: "x"},
			want{act: ActFail, reason: "lost 2 times", next: Counters{HostLosses: 2}}},
		{"a turn the agent ran to its end clears the lost-host streak", Counters{Iterations: 1, HostLosses: 2}, lim,
			Turn{End: EndExited, Committed: true},
			want{act: ActRespawn, counted: true, next: Counters{Iterations: 2}}},
		{"a start that fails keeps the lost-host streak", Counters{HostLosses: 2}, lim,
			Turn{End: EndStartFailed, Failure: "no pod"},
			want{act: ActRelease, reason: "no pod", next: Counters{HostLosses: 2, StartFails: 1}}},
		{"a person edited the task: start over free", Counters{Iterations: 4}, lim,
			Turn{End: EndRedo, Failure: "re-read it"},
			want{act: ActRespawn, next: Counters{Iterations: 4}}},
		{"a person rolled back a live interactive agent: told, free", Counters{Iterations: 4}, lim,
			Turn{End: EndRedo, Alive: true, Interactive: true, Failure: "rolled back"},
			want{act: ActFeedback, next: Counters{Iterations: 4}}},
		{"usage limit: parked, nothing counted, not blocked", Counters{Iterations: 1, Errors: 1}, lim,
			Turn{End: EndUsageLimit, Failure: "usage limit reached; resets at 3am"},
			want{act: ActPark, reason: "resets at 3am", next: Counters{Iterations: 1, Errors: 1}}},
		{"timeout: failed", Counters{Iterations: 1}, lim,
			Turn{End: EndTimeout, Failure: "task timeout (30 minutes) reached"},
			want{act: ActFail, reason: "task timeout (30 minutes)", next: Counters{Iterations: 1}}},
		{"start failure: released to back off", Counters{Iterations: 1}, lim,
			Turn{End: EndStartFailed, Failure: "exec: permission denied"},
			want{act: ActRelease, reason: "permission denied", next: Counters{Iterations: 1, StartFails: 1}}},
		{"start failures up to the limit: failed", Counters{StartFails: 2}, lim,
			Turn{End: EndStartFailed, Failure: "E2BIG"},
			want{act: ActFail, reason: "cannot start an agent (3 attempts): E2BIG", next: Counters{StartFails: 3}}},
		{"zero limits fall back to 3 errors", Counters{Errors: 2}, Limits{},
			Turn{End: EndCrashed, Failure: "x"},
			want{act: ActFail, counted: true, reason: "3 times", next: Counters{Iterations: 1, Errors: 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.c, c.l, c.t)
			if d.Action != c.w.act || d.Counted != c.w.counted || (d.Alert != "") != c.w.alert || d.Next != c.w.next {
				t.Fatalf("got %s counted=%v alert=%q next=%+v; want %s counted=%v alert=%v next=%+v",
					d.Action, d.Counted, d.Alert, d.Next, c.w.act, c.w.counted, c.w.alert, c.w.next)
			}
			if !strings.Contains(d.Reason, c.w.reason) {
				t.Fatalf("reason %q does not say %q", d.Reason, c.w.reason)
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	lim := Limits{MaxIterations: 2}
	if _, ok := Admit(Counters{Iterations: 1}, lim); !ok {
		t.Fatal("one of two iterations spent: refused")
	}
	d, ok := Admit(Counters{Iterations: 2}, lim)
	if ok || d.Action != ActFail || !strings.Contains(d.Reason, "maxIterations (2)") {
		t.Fatalf("all iterations spent: %+v %v", d, ok)
	}
	if _, ok := Admit(Counters{Iterations: 99}, Limits{}); !ok {
		t.Fatal("no limit: refused")
	}
}
