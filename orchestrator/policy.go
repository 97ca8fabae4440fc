package orchestrator

import (
	"fmt"
	"strings"

	"github.com/chorus-dev/chorus/config"
)

// The supervisor's decisions, as a pure function in the spirit of a task
// runner's restart policy: the task's counters and how a turn ended go in,
// one decision comes out. The supervisor (agent.go) carries it out with
// the process, the worktree and the task store; nothing here touches them,
// so every rule is table-tested (policy_test.go).

// TurnEnd is how one turn (one iteration) of an agent ended.
type TurnEnd string

const (
	// EndExited: the agent exited with code 0 without a COMPLETE.
	EndExited TurnEnd = "exited"
	// EndCrashed: the agent exited with a non-zero code or its CLI
	// reported a failure.
	EndCrashed TurnEnd = "crashed"
	// EndStartFailed: the agent process could not be started.
	EndStartFailed TurnEnd = "start-failed"
	// EndRefused: a COMPLETE that was not accepted (nothing to merge,
	// files left uncommitted, a hook said not done).
	EndRefused TurnEnd = "complete-refused"
	// EndCheckFailed: a COMPLETE whose quality commands failed.
	EndCheckFailed TurnEnd = "check-failed"
	// EndUnconfirmed: the turn ended with a tag that did not count, or
	// idle with no signal: the agent is asked to confirm.
	EndUnconfirmed TurnEnd = "unconfirmed"
	// EndRedo: a person edited the task or rolled the iteration back.
	EndRedo TurnEnd = "redo"
	// EndTimeout: the task ran past completion.taskTimeout.
	EndTimeout TurnEnd = "timeout"
	// EndStopped: Chorus stopped the agent (a person's stop, a redirect,
	// kill-all, shutdown): the task goes back to open, nothing counted.
	EndStopped TurnEnd = "stopped"
	// EndEngineDied: the engine died during the turn (found at recovery).
	EndEngineDied TurnEnd = "engine-died"
	// EndUsageLimit: the agent's account hit its rate or plan limit.
	EndUsageLimit TurnEnd = "usage-limit"
	// EndHostLost: the agent's host went away without reporting the
	// agent's exit (its pod deleted or evicted, its node lost, the host
	// process killed): the machine failed, not the agent. The task runs
	// again from its work, free, unless hosts keep being lost.
	EndHostLost TurnEnd = "host-lost"
)

// Action is what the supervisor does next.
type Action string

const (
	ActRespawn     Action = "respawn"      // start the agent again with the handover
	ActFeedback    Action = "feedback"     // type the failure into the live agent
	ActNudge       Action = "nudge"        // ask the agent to confirm (or deny) its COMPLETE
	ActFail        Action = "fail"         // the task is FAILED with the reason; worktree kept
	ActRelease     Action = "release"      // the task back to open, work kept, nothing counted
	ActNeedsPerson Action = "needs-person" // blocked with the evidence for a person
	ActPark        Action = "park"         // stop without blocking; resume when the window opens
)

// Counters are what a task has spent so far, kept across respawns and
// restarts (TaskRun).
type Counters struct {
	Iterations     int // counted iterations, this one included once decided
	Errors         int // agent failures in a row
	NoCommitStreak int // iterations in a row without a new commit
	FailStreak     int // the same quality failure in a row (counted by the check)
	Nudges         int // confirmations asked for this task
	StartFails     int // start failures in a row
	HostLosses     int // hosts lost in a row (EndHostLost)
}

// Limits are the configured bounds; 0 means none (MaxAgentErrors and
// MaxStartFails fall back to 3, MaxNudges to 3).
type Limits struct {
	MaxIterations    int
	MaxAgentErrors   int
	StuckIterations  int
	StuckAlerts      int
	RepeatedFailures int
	MaxNudges        int
	MaxStartFails    int
	MaxHostLosses    int // hosts lost in a row before the task fails (0: 3)
}

// limitsFrom reads the policy's bounds from the config.
func limitsFrom(c config.Completion) Limits {
	return Limits{MaxIterations: c.MaxIterations, MaxAgentErrors: c.MaxAgentErrors, StuckIterations: c.StuckIterations,
		StuckAlerts: c.StuckAlerts, RepeatedFailures: c.RepeatedFailures, MaxNudges: c.MaxNudges}
}

// Turn is how a turn ended, with what the supervisor saw.
type Turn struct {
	End         TurnEnd
	Alive       bool   // the agent process still runs
	Interactive bool   // it reads typed input
	Committed   bool   // the turn added a commit to the branch
	Continued   bool   // a person answered a stuck alert with Continue
	Failure     string // why the task is not finished: evidence and feedback
}

// Decision is the policy's answer.
type Decision struct {
	Action Action
	Reason string // for fail / needs-person / release: what the task records
	// Counted: the turn spent one of the task's iterations.
	Counted bool
	// Alert, when set, is a stuck alert to show on the agent.
	Alert string
	Next  Counters
}

func orN(n, d int) int {
	if n > 0 {
		return n
	}
	return d
}

// Admit decides whether a task may begin another iteration.
func Admit(c Counters, l Limits) (Decision, bool) {
	if l.MaxIterations > 0 && c.Iterations >= l.MaxIterations {
		return Decision{Action: ActFail, Next: c,
			Reason: fmt.Sprintf("reached maxIterations (%d) without completing", l.MaxIterations)}, false
	}
	return Decision{}, true
}

// Decide is the supervisor's policy: what follows a turn that did not
// finish the task.
func Decide(c Counters, l Limits, t Turn) Decision {
	d := Decision{Next: c}
	switch t.End {
	case EndStopped:
		d.Action, d.Reason = ActRelease, orText(t.Failure, "stopped")
		return d
	case EndEngineDied:
		// The engine's death is not the agent's failure: try again, free.
		d.Action = ActRespawn
		return d
	case EndUsageLimit:
		d.Action, d.Reason = ActPark, orText(t.Failure, "usage limit reached")
		return d
	case EndRedo:
		// A person changed the task or rolled it back: start over, free.
		d.Action = ActRespawn
		if t.Alive && t.Interactive {
			d.Action = ActFeedback
		}
		return d
	case EndHostLost:
		// Not counted, but bounded: a pod that is evicted again and again
		// (a node short of memory, a quota) must not loop for ever.
		d.Next.HostLosses++
		if n := orN(l.MaxHostLosses, 3); d.Next.HostLosses >= n {
			d.Action = ActFail
			d.Reason = fmt.Sprintf("the agent's host was lost %d times in a row; last: %s", d.Next.HostLosses, strings.TrimSpace(t.Failure))
			return d
		}
		d.Action = ActRespawn
		return d
	case EndTimeout:
		d.Action, d.Reason = ActFail, orText(t.Failure, "task timeout reached")
		return d
	case EndStartFailed:
		d.Next.StartFails++
		if n := orN(l.MaxStartFails, 3); d.Next.StartFails >= n {
			d.Action, d.Reason = ActFail, fmt.Sprintf("cannot start an agent (%d attempts): %s", d.Next.StartFails, t.Failure)
			return d
		}
		d.Action, d.Reason = ActRelease, t.Failure
		return d
	}
	d.Counted = true
	d.Next.Iterations++
	d.Next.StartFails, d.Next.HostLosses = 0, 0
	if t.End == EndCrashed {
		d.Next.Errors++
		if n := orN(l.MaxAgentErrors, 3); d.Next.Errors >= n {
			d.Action = ActFail
			d.Reason = fmt.Sprintf("the agent failed %d times in a row; last: %s", d.Next.Errors, strings.TrimSpace(t.Failure))
			return d
		}
	} else {
		d.Next.Errors = 0
	}
	if t.Continued {
		d.Next.NoCommitStreak = 0 // a person let it go on: count from here
	}
	if t.Committed {
		d.Next.NoCommitStreak = 0
	} else {
		d.Next.NoCommitStreak++
	}
	streak := d.Next.NoCommitStreak
	if n := l.StuckIterations; n > 0 && streak > 0 && streak%n == 0 {
		d.Alert = fmt.Sprintf("agent may be stuck: %d iterations without a new commit", streak)
	}
	if n := l.RepeatedFailures; n > 0 && c.FailStreak >= n {
		d.Action = ActNeedsPerson
		d.Reason = fmt.Sprintf("needs a person: the same quality failure %d times in a row. %s", c.FailStreak, oneLine(t.Failure, 1500))
		return d
	}
	if n, a := l.StuckIterations, l.StuckAlerts; n > 0 && a > 0 && streak >= n*a {
		d.Action = ActNeedsPerson
		d.Reason = fmt.Sprintf("needs a person: %d stuck alerts in a row (%d iterations without a new commit)", streak/n, streak)
		return d
	}
	if t.End == EndUnconfirmed {
		d.Next.Nudges++
		if d.Next.Nudges > orN(l.MaxNudges, 3) {
			d.Action = ActNeedsPerson
			d.Reason = fmt.Sprintf("needs a person: the agent did not confirm its COMPLETE after %d questions. %s", d.Next.Nudges-1, oneLine(t.Failure, 1500))
			return d
		}
		// Asking spends no iteration: the agent did its turn's work.
		d.Counted, d.Next.Iterations = false, c.Iterations
		d.Action = ActNudge
		return d
	}
	if l.MaxIterations > 0 && d.Next.Iterations >= l.MaxIterations {
		d.Action = ActFail
		d.Reason = fmt.Sprintf("reached maxIterations (%d) without completing", l.MaxIterations)
		if f := strings.TrimSpace(t.Failure); f != "" {
			d.Reason += "; last: " + oneLine(f, 500)
		}
		return d
	}
	if t.Alive && t.Interactive && t.End != EndCrashed && t.Failure != "" {
		d.Action = ActFeedback
		return d
	}
	d.Action = ActRespawn
	return d
}

func orText(s, d string) string {
	if strings.TrimSpace(s) == "" {
		return d
	}
	return s
}
