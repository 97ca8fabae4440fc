package orchestrator

import (
	"encoding/json"
	"errors"
	"fmt"
	"github.com/chorus-dev/chorus/agent/signal"
	"os"
	"time"

	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/merge"
)

// StateVersion is the format of state.json.
const StateVersion = "1"

// Agent statuses.
const (
	AgentStarting  = "starting"
	AgentRunning   = "running"
	AgentChecking  = "checking"   // quality commands running
	AgentNeedsHelp = "needs-help" // waiting for a human answer
	// AgentNeedsHuman: its screen shows it cannot go on without a person
	// (login, a dialog, persistent API errors, a dead endpoint).
	AgentNeedsHuman = "needs-human"
	AgentStopping   = "stopping"
)

// State is .chorus/state.json: everything needed to recover after a crash.
// Only the engine's loop goroutine changes it.
type State struct {
	Version    string                 `json:"version"`
	Mode       string                 `json:"mode"`
	Paused     bool                   `json:"paused"`
	PID        int                    `json:"pid"`
	StartedAt  time.Time              `json:"startedAt"`
	Agents     map[string]*AgentState `json:"agents"`
	Tasks      map[string]*TaskRun    `json:"tasks"`
	MergeQueue []merge.Item           `json:"mergeQueue"`
	MergeStats merge.Stats            `json:"mergeStats"`
	Checkpoint string                 `json:"checkpoint,omitempty"`
	// Hold, when set, is why autopilot starts no agents for now (an outage
	// or a usage limit) and until when (outage.go).
	Hold  *Hold `json:"hold,omitempty"`
	Stats Stats `json:"stats"`
	// Usage is what agents spent in this session (not carried over).
	Usage Usage `json:"usage"`
	// JournalGen names this snapshot's generation: the lines of
	// state.journal written after it carry it (see statejournal.go).
	JournalGen int64 `json:"journalGen,omitempty"`
}

// AgentState is one running agent.
type AgentState struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"` // profile name
	TaskID    string    `json:"taskId"`
	Title     string    `json:"title"`
	Worktree  string    `json:"worktree"`
	Branch    string    `json:"branch"`
	PID       int       `json:"pid"`
	PStart    uint64    `json:"pstart"` // kernel start time, guards against pid reuse
	Iteration int       `json:"iteration"`
	StartedAt time.Time `json:"startedAt"`
	Status    string    `json:"status"`
	Progress  int       `json:"progress"`
	Question  string    `json:"question,omitempty"`
	// Options and QuestionID come with a question asked by `chorus ask`:
	// the choices offered and the id its answer file is named after.
	Options    []string `json:"options,omitempty"`
	QuestionID string   `json:"questionId,omitempty"`
	Alert      string   `json:"alert,omitempty"`
	// Stuck is why the agent's screen says it waits for a person (also its
	// alert while it lasts); empty when it does not.
	Stuck string `json:"stuck,omitempty"`
	Usage Usage  `json:"usage"`
	// Check is the quality command running for it, since CheckStarted.
	Check        string    `json:"check,omitempty"`
	CheckStarted time.Time `json:"checkStarted,omitzero"`
	// Signal is a signal a hosted agent sent that its turn has not judged
	// yet: the agent outlives the engine, so a signal the engine took and
	// then died with is given to the engine that re-adopts the agent.
	Signal *signal.Signal `json:"signal,omitempty"`
}

// TaskRun is what Chorus remembers about a task across iterations and
// respawns.
type TaskRun struct {
	Iterations     int    `json:"iterations"`
	NoCommitStreak int    `json:"noCommitStreak"`
	Errors         int    `json:"consecutiveErrors"`
	LastFailure    string `json:"lastFailure,omitempty"`
	// FailCheck and FailTail are the last failed quality command and the
	// last lines of its output, until a check passes.
	FailCheck string `json:"failCheck,omitempty"`
	FailTail  string `json:"failTail,omitempty"`
	// FailKey, FailStreak and FailText are the quality failure repeating
	// in a row (its fingerprint, count and evidence), kept across respawns,
	// stops and restarts so "the same failure N times" counts them all.
	FailKey       string `json:"failKey,omitempty"`
	FailStreak    int    `json:"failStreak,omitempty"`
	FailText      string `json:"failText,omitempty"`
	IterationBase string `json:"iterationBase,omitempty"` // HEAD when the last iteration started
	// Open: iteration Iterations runs and the policy has not judged it
	// yet. Found open at recovery, it ended with the engine: not counted.
	Open bool `json:"open,omitempty"`
	// Nudges: the times the agent was asked to confirm its COMPLETE.
	Nudges int `json:"nudges,omitempty"`
	// HostLosses: the agent's hosts lost in a row (pods deleted or
	// evicted, nodes lost), each run again without an iteration.
	HostLosses int `json:"hostLosses,omitempty"`
	// Failed is why the task is FAILED (empty unless it is), since when,
	// and its evidence: the agent's last output lines. The task's ledger
	// (LedgerPath) holds the rest. A retry clears it.
	Failed       string    `json:"failed,omitempty"`
	FailedAt     time.Time `json:"failedAt,omitempty"`
	FailedOutput string    `json:"failedOutput,omitempty"`
	Completed    bool      `json:"completed"` // quality passed; closing pending
	// CompleteSignalled: the agent signalled COMPLETE and its quality
	// check had not finished; recorded first, so a crash during the check
	// leads to a re-check, not a lost COMPLETE and a spent iteration.
	CompleteSignalled bool `json:"completeSignalled,omitempty"`
	// Merge is the request made when the task completed, kept so a crash
	// between completing and queueing cannot lose the merge.
	Merge        *merge.Request `json:"merge,omitempty"`
	Closed       bool           `json:"closed"`
	FirstStarted time.Time      `json:"firstStarted"`
	// Usage and Runtime (seconds of finished runs) add up over every run
	// of the task, for its budget.
	Usage   Usage `json:"usage"`
	Runtime int64 `json:"runtime"`
}

// Stats are the session's counters.
type Stats struct {
	TasksCompleted int   `json:"tasksCompleted"`
	TasksFailed    int   `json:"tasksFailed"`
	TasksBlocked   int   `json:"tasksBlocked"`
	Iterations     int   `json:"iterations"`
	MergesAuto     int   `json:"mergesAuto"`
	MergesManual   int   `json:"mergesManual"`
	TotalRuntime   int64 `json:"totalRuntime"`           // seconds, across sessions
	ChecksFailed   int   `json:"checksFailed,omitempty"` // quality checks that failed (each one a retry)
}

func newState(mode string) *State {
	return &State{Version: StateVersion, Mode: mode, PID: os.Getpid(), StartedAt: time.Now().UTC(),
		Agents: map[string]*AgentState{}, Tasks: map[string]*TaskRun{}}
}

// LoadState reads state.json and replays state.journal over it; a missing
// file is an empty state. A malformed file is an error naming the file and
// position, and both are left untouched.
func LoadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := 1, 1
			for _, c := range b[:min(int(se.Offset), len(b))] {
				if c == '\n' {
					line, col = line+1, 1
				} else {
					col++
				}
			}
			return nil, fmt.Errorf("%s:%d:%d: %v (move the file aside to start fresh; running agents from that session will not be recovered)", path, line, col, err)
		}
		return nil, fmt.Errorf("%s: %v (move the file aside to start fresh)", path, err)
	}
	if s.Agents == nil {
		s.Agents = map[string]*AgentState{}
	}
	if s.Tasks == nil {
		s.Tasks = map[string]*TaskRun{}
	}
	if err := replayJournal(&s, journalPath(path)); err != nil {
		return nil, err
	}
	return &s, nil
}

// save writes the whole state as a snapshot with no journal (the engine
// saves through its stateWriter instead).
func (s *State) save(path string) error {
	c := *s
	c.JournalGen = 0
	b, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	if err := chorusdir.WriteAtomic(path, append(b, '\n'), chorusdir.FileMode); err != nil {
		return err
	}
	if err := os.Remove(journalPath(path)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return nil
}

// clone returns a deep copy for snapshots.
func (s *State) clone() State {
	c := *s
	c.Agents = make(map[string]*AgentState, len(s.Agents))
	for k, v := range s.Agents {
		a := *v
		c.Agents[k] = &a
	}
	c.Tasks = make(map[string]*TaskRun, len(s.Tasks))
	for k, v := range s.Tasks {
		t := *v
		c.Tasks[k] = &t
	}
	c.MergeQueue = append([]merge.Item(nil), s.MergeQueue...)
	if s.Hold != nil {
		h := *s.Hold
		h.Tasks = append([]string(nil), h.Tasks...)
		c.Hold = &h
	}
	return c
}

// setFailed records the task FAILED with its reason and evidence.
func (tr *TaskRun) setFailed(reason, output string) {
	tr.Failed, tr.FailedAt, tr.FailedOutput = reason, time.Now().UTC(), output
}

// counters are what the supervisor's policy reads of a task run.
func (tr *TaskRun) counters() Counters {
	return Counters{Iterations: tr.Iterations, Errors: tr.Errors, NoCommitStreak: tr.NoCommitStreak,
		FailStreak: tr.FailStreak, Nudges: tr.Nudges, HostLosses: tr.HostLosses}
}

// apply records the policy's counters.
func (tr *TaskRun) apply(c Counters) {
	tr.Iterations, tr.Errors, tr.NoCommitStreak, tr.Nudges = c.Iterations, c.Errors, c.NoCommitStreak, c.Nudges
	tr.HostLosses = c.HostLosses
}

func (s *State) run(taskID string) *TaskRun {
	r := s.Tasks[taskID]
	if r == nil {
		r = &TaskRun{FirstStarted: time.Now().UTC()}
		s.Tasks[taskID] = r
	}
	return r
}
