// Package orchestrator is the engine: it claims ready tasks, gives each an
// agent in its own worktree under a PTY, watches for signals, runs the
// quality commands, closes tasks and hands finished branches to the merge
// service. It is headless: front ends send Commands and read Snapshots and
// Events. One goroutine (the loop) owns the State; agent supervisors,
// timers and watchers only send it messages.
package orchestrator

import (
	"context"
	"errors"
	"fmt"
	"os"

	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/agent/host"
	"github.com/chorus-dev/chorus/agent/term"

	"github.com/chorus-dev/chorus/beads"
	"github.com/chorus-dev/chorus/chorusdir"
	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/hooks"
	"github.com/chorus-dev/chorus/merge"
	"github.com/chorus-dev/chorus/worktree"
)

// Options configure an Engine.
type Options struct {
	Dir    chorusdir.Dir
	Config config.Config
	Store  beads.Store
	// NoMerge leaves finished branches unmerged (for engine-only tests and
	// `--no-merge` runs); otherwise a merge service lands them.
	NoMerge bool
	Target  string // branch agents start from and merge into
	// ChorusExe is the chorus executable agents call for `chorus signal`;
	// its directory is put first on the agents' PATH.
	ChorusExe string
	// Runner starts agents' hosts (nil: agents.host decides, with local
	// processes).
	Runner host.Runner
	// Cols, Rows is the PTY size of a new agent until a front end resizes it.
	Cols, Rows int
	// HoldBackoff is the first wait before a held run probes again
	// (outage.go); 0 means 30 s.
	HoldBackoff time.Duration
	// Instance names this Chorus among those working one task queue
	// (team.go); empty, it is read from (or made in) .chorus/.
	Instance string
}

// Event is one thing that happened, for front ends and the session log.
type Event struct {
	Time   time.Time      `json:"time"`
	Kind   EventKind      `json:"kind"`
	Agent  string         `json:"agent,omitempty"`
	Task   string         `json:"task,omitempty"`
	Text   string         `json:"text,omitempty"`
	Fields map[string]any `json:"fields,omitempty"`
}

// EventKind names what an Event reports; the kinds are the Ev constants,
// spelled once here and in the files that own them.
type EventKind string

// Event kinds.
const (
	EvAssigned    EventKind = "agent_assigned"
	EvStarted     EventKind = "agent_started"
	EvIteration   EventKind = "iteration_started"
	EvSignal      EventKind = "signal"
	EvQuality     EventKind = "quality"
	EvCompleted   EventKind = "task_completed"
	EvBlocked     EventKind = "task_blocked"
	EvFailed      EventKind = "task_failed"
	EvReleased    EventKind = "task_released"
	EvNeedsHelp   EventKind = "needs_help"
	EvAlert       EventKind = "alert"
	EvContinued   EventKind = "agent_continued" // a person let a stuck agent go on (CmdContinue)
	EvAgentExit   EventKind = "agent_exited"
	EvFinished    EventKind = "agent_finished"
	EvPaused      EventKind = "paused"
	EvResumed     EventKind = "resumed"
	EvMode        EventKind = "mode_changed"
	EvIdle        EventKind = "idle"
	EvError       EventKind = "error"
	EvMergeQueued EventKind = "merge_queued"
	EvRecovered   EventKind = "recovered"
	EvCheckpoint  EventKind = "checkpoint"
	EvRollback    EventKind = "rollback"
)

// FieldRetryAfter, on an EvIteration after the first, is the failure the
// iteration retries (an exit code, a failed check, a refused COMPLETE).
const FieldRetryAfter = "after"

// FieldUncommitted, on an EvError, is the worktree whose work could not
// be committed (a WIP commit failed: disk full, a broken index…).
const FieldUncommitted = "uncommitted"

// Snapshot is an immutable copy of the engine's state for front ends.
type Snapshot struct {
	State
	MaxParallel int
	Running     int
	Idle        bool
	Merge       merge.Snapshot
	// TaskGen changes whenever the task store may have changed (through
	// the engine or beside it): a front end reloads its tasks then.
	TaskGen uint64
}

// Engine is the orchestrator.
type Engine struct {
	opt Options
	// startAlerts are found by Recover, before anyone listens, and
	// emitted when Run starts.
	startAlerts []string
	cfg         config.Config // immutable after New
	wt          *worktree.Manager
	merge       *merge.Service // nil with NoMerge
	history     *mergeHistory

	msgs    chan func()
	changed chan struct{}
	// more are further Changed channels (Watch): a front end in this
	// process and the socket server beside it each need their own.
	moreMu sync.Mutex
	more   []chan struct{}

	// Owned by the loop goroutine.
	idleTold bool // EvIdle was emitted for the idleness that lasts
	// mergeRead counts the merge service's events the loop has handled.
	mergeRead uint64
	st        *State
	stw       *stateWriter         // writes st: snapshot + journal
	runs      map[string]*agentRun // by agent id
	fetching  bool
	needReady bool              // something changed that may make tasks ready
	noReady   bool              // the last fetch found nothing assignable
	badIDs    map[string]bool   // ready tasks refused for their id (reported once)
	trust     map[string]string // profile → why it would stop at Claude Code's trust dialog (trust.go)
	wantTasks []string          // semi-auto headless: tasks to run
	taskGen   uint64            // Snapshot.TaskGen (taskwatch.go)
	closing   bool
	dirty     bool     // the current message changed State
	onPublish []func() // run after the next publish (Sync)
	// Start failures (startfail.go): per task, in a row, and when a task
	// may be tried again.
	startFails map[string]int
	retryAt    map[string]time.Time
	// hookHeld: tasks a hook blocked, left alone until then (hooks.go).
	hookHeld map[string]time.Time
	hooks    *hooks.Runner
	// streak and probe: agent failures in a row across tasks, and the task
	// whose agent tries whether the run's hold has cleared (outage.go).
	streak streak
	probe  string
	// startMu makes an agent's start and a hold exclusive: a run holds it
	// from its last look at the hold until its start is recorded, a run
	// whose failure may hold the run while that is judged. Never taken
	// on the loop.
	startMu sync.Mutex

	snapMu  sync.Mutex
	snap    Snapshot
	screens map[string]*term.Emulator // the runs' emulators as of snap (Screen)

	// loopDone is closed when Run returns; from then on state is written
	// directly (stMu) instead of through the loop.
	loopDone chan struct{}
	running  atomic.Bool
	stMu     sync.Mutex

	subMu sync.Mutex
	subs  []chan Event
	// While the loop applies a batch, events wait in evHeld until the
	// batch's snapshot is published: a front end acting on an event then
	// reads a state that already shows it (status after "needs help").
	evHold bool
	evHeld []Event

	wg sync.WaitGroup // supervisors and ready fetches: Run waits for them

	suggested  map[string]bool // pattern suggestions announced (loop only)
	diskPaused bool            // the pause is a full disk's (loop only)

	// This instance among the team (team.go).
	instance, host string
	upSince        time.Time
	teamMu         sync.Mutex
	team           map[string]Heartbeat
	pushWarned     atomic.Bool // merge.pushBranches failed once (said once)
}

// New creates an engine. Call Recover, then Run.
func New(opt Options) (*Engine, error) {
	if opt.Store == nil {
		return nil, errors.New("orchestrator: no task store")
	}
	if opt.Cols == 0 {
		opt.Cols, opt.Rows = 120, 40
	}
	if opt.Instance == "" {
		in, err := opt.Dir.Instance()
		if err != nil {
			return nil, fmt.Errorf("orchestrator: this instance's id: %w", err)
		}
		opt.Instance = in.ID
	}
	if opt.Config.Team.HeartbeatSeconds <= 0 || opt.Config.Team.DeadAfterSeconds <= 0 {
		// A config built in code rather than loaded: the defaults.
		opt.Config.Team = config.Default().Team
	}
	if opt.Config.Agents.Scrollback <= 0 {
		// A config built in code rather than loaded: the default.
		opt.Config.Agents.Scrollback = config.DefaultScrollback
	}
	e := &Engine{
		opt: opt, cfg: opt.Config,
		wt:        &worktree.Manager{RepoDir: opt.Dir.Root, Target: opt.Target},
		msgs:      make(chan func(), 64),
		changed:   make(chan struct{}, 1),
		runs:      map[string]*agentRun{},
		suggested: map[string]bool{},
		st:        newState(opt.Config.Mode),
		stw:       newStateWriter(opt.Dir.State()),
		loopDone:  make(chan struct{}),
		history:   &mergeHistory{path: filepath.Join(opt.Dir.Path, "merge-history.jsonl"), done: map[string]string{}},
		instance:  opt.Instance, upSince: time.Now().UTC(),
	}
	e.host, _ = os.Hostname()
	e.hooks = newHookRunner(e)
	if !opt.NoMerge {
		exe := opt.ChorusExe
		ms, err := merge.New(merge.Options{
			RepoDir: opt.Dir.Root, Target: opt.Target, ChorusDir: opt.Dir.Path,
			Quality: opt.Config.QualityCommands, Merge: opt.Config.Merge, Checkpoints: opt.Config.Checkpoints,
			DriverCommand: driverCommand(exe), Hook: e.mergeHook, Worktrees: e.wt,
		}, e.persistMerge, resolver{e})
		if err != nil {
			return nil, err
		}
		e.merge = ms
		e.wt.Objects = ms.Objects()
	}
	e.publish()
	return e, nil
}

// Changed fires (coalesced) after every state change.
func (e *Engine) Changed() <-chan struct{} { return e.changed }

// Snapshot returns the latest published state.
func (e *Engine) Snapshot() Snapshot {
	e.snapMu.Lock()
	defer e.snapMu.Unlock()
	s := e.snap
	s.State = e.snap.State.clone()
	return s
}

// Subscribe returns a channel of events. Slow subscribers lose events
// rather than stall the engine; the session log has them all.
func (e *Engine) Subscribe() <-chan Event {
	ch := make(chan Event, 1024)
	e.subMu.Lock()
	e.subs = append(e.subs, ch)
	e.subMu.Unlock()
	return ch
}

// do runs fn on the loop goroutine and waits for it.
func (e *Engine) do(ctx context.Context, fn func()) error {
	done := make(chan struct{})
	select {
	case e.msgs <- func() { fn(); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	case <-e.loopDone:
		return errEngineStopped
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.loopDone:
		return errEngineStopped
	}
}

// Sync returns once everything sent to the engine so far is applied and
// published, so the next Snapshot reflects it.
func (e *Engine) Sync(ctx context.Context) error {
	published := make(chan struct{})
	if err := e.do(ctx, func() {
		e.onPublish = append(e.onPublish, func() { close(published) })
	}); err != nil {
		return err
	}
	select {
	case <-published:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-e.loopDone:
		return errEngineStopped
	}
}

// post queues fn for the loop without waiting for it to run.
func (e *Engine) post(fn func()) { e.msgs <- fn }

// Run is the loop. It returns when ctx ends, after stopping every agent
// (their tasks go back to open, their work is committed as WIP).
func (e *Engine) Run(ctx context.Context) error {
	defer close(e.loopDone)
	// Under stMu: a Persist that found the loop not running finishes its
	// direct write before the loop reads State (persistMerge).
	e.stMu.Lock()
	e.running.Store(true)
	e.stMu.Unlock()
	defer e.running.Store(false)
	for _, a := range e.startAlerts {
		e.emit(Event{Kind: EvAlert, Text: a, Fields: map[string]any{"recovered": "learnings"}})
	}
	e.startAlerts = nil
	mctx, mcancel := context.WithCancel(context.Background())
	defer mcancel()
	mdone := make(chan error, 1)
	if e.merge != nil {
		go func() { mdone <- e.merge.Run(mctx) }()
		go e.forwardMerge(mctx)
		if e.st.Mode == config.ModeAutopilot && e.cfg.Checkpoints.Enabled && e.cfg.Checkpoints.BeforeAutopilot {
			e.checkpoint("before autopilot")
		}
	} else {
		close(mdone)
	}
	// The ticker enforces task timeouts and notices tasks created by other
	// processes; everything else is driven by messages.
	tick := time.NewTicker(30 * time.Second)
	defer tick.Stop()
	teamDone := make(chan struct{})
	go e.teamLoop(mctx, teamDone)
	e.watchAnswers(mctx)
	e.preflightTrust()
	e.watchTasks(mctx)
	e.needReady = true
	e.schedule()
	for {
		select {
		case fn := <-e.msgs:
			e.handleBatch(fn)
		case <-tick.C:
			e.checkTimeouts()
			e.checkBudgets()
			if len(e.runs) < e.cfg.Agents.MaxParallel {
				e.needReady = true
			}
			e.after()
		case <-ctx.Done():
			// The merge worker stops first: it may need the loop to persist
			// its last step, and agents finishing below may still enqueue.
			mcancel()
			e.serveUntil(mdone)
			e.shutdown()
			<-teamDone
			e.leaveTeam()
			return nil
		}
	}
}

// serveUntil keeps applying messages until done is ready.
func (e *Engine) serveUntil(done <-chan error) {
	for {
		select {
		case fn := <-e.msgs:
			e.handle(fn)
		case <-done:
			return
		}
	}
}

// handle applies one message.
func (e *Engine) handle(fn func()) {
	e.hold()
	e.dirty = true
	fn()
	e.after()
}

// handleBatch applies fn and whatever else is already waiting, then
// persists and publishes once: under load state.json is written per batch,
// not per message. Anything that needs the file written before it acts
// (the merge service's Persist) saves explicitly.
func (e *Engine) handleBatch(fn func()) {
	e.hold()
	dirty := false
	for i := 0; ; i++ {
		e.dirty = true
		fn()
		dirty = dirty || e.dirty
		if i == 63 {
			break
		}
		select {
		case fn = <-e.msgs:
			continue
		default:
		}
		break
	}
	e.dirty = dirty
	e.after()
}

// after persists and publishes a transition, then fills free slots.
// Messages that only report an event leave the state alone and skip the
// write.
func (e *Engine) after() {
	e.schedule()
	if e.dirty {
		if err := e.saveState(); err != nil {
			e.emit(Event{Kind: EvError, Text: "writing state.json: " + err.Error()})
			if DiskFull(err.Error()) {
				e.diskFull("", "writing state.json: "+err.Error())
			}
		}
	}
	e.dirty = false
	e.publish()
	e.release()
	for _, f := range e.onPublish {
		f()
	}
	e.onPublish = nil
}

func (e *Engine) publish() {
	s := Snapshot{State: e.st.clone(), MaxParallel: e.cfg.Agents.MaxParallel, Running: len(e.runs), Idle: e.idle(), TaskGen: e.taskGen}
	if e.merge != nil {
		s.Merge = e.merge.Snapshot()
	}
	// Autopilot running out of work is an event too, once per idleness,
	// for whoever follows events rather than snapshots (notifications).
	if s.Idle && !e.idleTold && !e.closing && e.st.Mode == config.ModeAutopilot && !e.st.Paused {
		e.emit(Event{Kind: EvIdle, Text: "autopilot has nothing more to do without a person", Fields: map[string]any{"stats": e.st.Stats}})
	}
	e.idleTold = s.Idle
	e.snapMu.Lock()
	e.snap = s
	e.screens = e.runScreens(e.screens)
	e.snapMu.Unlock()
	select {
	case e.changed <- struct{}{}:
	default:
	}
	e.moreMu.Lock()
	for _, ch := range e.more {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	e.moreMu.Unlock()
}

// runScreens is the runs' emulators: prev itself while they are the same
// (a map is made only when runs come or go), never changed once
// published. Loop only.
func (e *Engine) runScreens(prev map[string]*term.Emulator) map[string]*term.Emulator {
	same := len(prev) == len(e.runs)
	for id, r := range e.runs {
		if s, ok := prev[id]; !same || !ok || s != r.screen {
			same = false
			break
		}
	}
	if same {
		return prev
	}
	m := make(map[string]*term.Emulator, len(e.runs))
	for id, r := range e.runs {
		m[id] = r.screen
	}
	return m
}

// Watch returns a further channel that fires (coalesced) after every
// state change, for a second reader beside the one of Changed.
func (e *Engine) Watch() <-chan struct{} {
	ch := make(chan struct{}, 1)
	e.moreMu.Lock()
	e.more = append(e.more, ch)
	e.moreMu.Unlock()
	return ch
}

// logMode is the session log's mode for an event: the Plan Agent's
// events belong to planning, everything else to implementation.
func logMode(ev Event) string {
	if ev.Task == planTaskID {
		return "planning"
	}
	return "implementation"
}

// emit logs an event and fans it out.
func (e *Engine) emit(ev Event) {
	if ev.Time.IsZero() {
		ev.Time = time.Now()
	}
	details := map[string]any{}
	for k, v := range ev.Fields {
		details[k] = v
	}
	if ev.Agent != "" {
		details["agentId"] = ev.Agent
	}
	if ev.Task != "" {
		details["taskId"] = ev.Task
	}
	if ev.Text != "" {
		details["text"] = ev.Text
	}
	_ = e.opt.Dir.AppendLog(logMode(ev), string(ev.Kind), details)
	e.subMu.Lock()
	if e.evHold {
		e.evHeld = append(e.evHeld, ev)
	} else {
		e.deliver(ev)
	}
	e.subMu.Unlock()
}

// deliver hands ev to every subscriber that has room. Under subMu.
func (e *Engine) deliver(ev Event) {
	for _, ch := range e.subs {
		select {
		case ch <- ev:
		default:
		}
	}
}

// hold keeps events back until release: the loop applies a batch.
func (e *Engine) hold() {
	e.subMu.Lock()
	e.evHold = true
	e.subMu.Unlock()
}

// release delivers the events held since hold, in order, once the
// batch's snapshot is published.
func (e *Engine) release() {
	e.subMu.Lock()
	e.evHold = false
	for _, ev := range e.evHeld {
		e.deliver(ev)
	}
	clear(e.evHeld)
	e.evHeld = e.evHeld[:0]
	e.subMu.Unlock()
}

// blockCause stops an agent whose task a person (or a front end for
// one) blocks: the supervisor blocks the task as it ends, so it is never
// open, for autopilot to claim again, in between.
type blockCause struct{ reason string }

func (b blockCause) Error() string { return b.reason }

var (
	errStopped  = errors.New("stopped by the user")
	errRedirect = errors.New("redirected to another task")
	//lint:ignore ST1005 Chorus is a name; the message is shown as it is
	errShutdown      = errors.New("Chorus is shutting down")
	errTimeout       = errors.New("task timeout reached")
	errBudget        = errors.New("budget reached")
	errKilledAll     = errors.New("all agents killed")
	errParked        = errors.New("parked: the account's usage limit was reached")
	errEngineStopped = errors.New("the engine has stopped")
)
