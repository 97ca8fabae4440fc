package merge

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chorus-dev/chorus/config"
	"github.com/chorus-dev/chorus/gitx"
)

// Service owns the merge queue. Run is its single worker; every other method
// is safe from any goroutine.
type Service struct {
	opt       Options
	persist   Persist
	resolver  Resolver
	commonDir string
	integ     string // Chorus's detached integration worktree
	// refs applies the queue's own ref transactions (candidates, merged
	// refs, landed branches' deletion) through one git process.
	refs *gitx.RefUpdater
	// objs reads commits and trees and writes merge commits (and the
	// trees of merges that touch different files) in-process.
	objs     *gitx.ObjectStore
	required []config.QualityCommand
	maxTries int

	mu        sync.Mutex
	items     []*Item
	stats     Stats
	current   string
	curFence  uint64 // the current item's Fence when the worker took it
	draining  bool
	jobs      map[string]*resolveJob // resolver agents at work, by task
	reconcile bool
	snap      atomic.Pointer[Snapshot]
	sincePack int             // landings since the refs were last packed
	batch     map[string]bool // the items of the batch the worker holds
	solo      map[string]bool // items to be processed alone (batch.go)
	// chain: merges landed one on another, ending at chainTip (extendChain).
	chain    map[string]bool
	chainTip string
	// lastCommit/lastTree: the last candidate made and its tree (tips).
	lastCommit, lastTree string

	// opMu serialises everything that moves the target: the worker's item
	// processing and rollbacks.
	opMu sync.Mutex
	// fenceMu makes a resolver's stop and a landing exclusive: a landing
	// checks the item's fence, moves the target and records "landed" while
	// holding it, so a stop either comes first (nothing lands) or finds
	// the item landed.
	fenceMu sync.Mutex
	// bg counts resolver goroutines and stop clean-ups; Run waits for them.
	bg sync.WaitGroup

	wake      chan struct{}
	cleanWake chan struct{} // wakes the cleaner
	changed   chan struct{}
	events    chan Event

	// wtMu guards wtCache, the worktrees' git dirs as last read (git.go).
	wtMu    sync.Mutex
	wtCache map[string]gitDirEntry

	// hook is called at phase boundaries (crash tests stop the process there).
	hook func(phase string)
}

// Phases at which the worker reports progress to the hook.
const (
	PhasePrecheck  = "precheck"
	PhaseCandidate = "candidate" // candidate commit and ref written
	PhaseTesting   = "testing"   // quality commands passed
	PhaseLanding   = "landing"   // "landing" persisted, ref not yet updated
	PhaseCAS       = "cas"       // target updated, "landed" not yet persisted
	PhaseLanded    = "landed"    // "landed" persisted, cleanup not yet done
)

// New prepares a service for the repository: checks git, registers the merge
// drivers where merge-tree honours them, and keeps Chorus's worktrees out of
// the user's `git status`. The integration worktree is created by Run.
func New(opt Options, persist Persist, resolver Resolver) (*Service, error) {
	if opt.RepoDir == "" || opt.Target == "" {
		return nil, errors.New("merge: RepoDir and Target are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, v, err := gitx.Version(ctx)
	if err != nil {
		return nil, err
	}
	if !gitx.AtLeast(v, gitx.MinVersion) {
		return nil, fmt.Errorf("merge: git %d.%d is too old (merge-tree --write-tree needs 2.38)", v[0], v[1])
	}
	root, err := filepath.Abs(opt.RepoDir)
	if err != nil {
		return nil, err
	}
	if r, err := filepath.EvalSymlinks(root); err == nil {
		root = r
	}
	opt.RepoDir = root
	if opt.WorktreesDir == "" {
		opt.WorktreesDir = filepath.Join(root, ".worktrees")
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.MaxDiff <= 0 {
		opt.MaxDiff = 64 << 10
	}
	if opt.ResolverTimeout <= 0 {
		opt.ResolverTimeout = opt.Merge.ResolverTimeout()
		if opt.ResolverTimeout <= 0 {
			opt.ResolverTimeout = 10 * time.Minute
		}
	}
	if opt.PackRefsEvery <= 0 {
		opt.PackRefsEvery = 64
	}
	if opt.WatchInterval <= 0 {
		opt.WatchInterval = 2 * time.Second
	}
	if opt.AcceptCommand == "" {
		opt.AcceptCommand = "chorus merge accept-target"
	}
	common, err := gitx.CommonDir(ctx, root)
	if err != nil {
		return nil, err
	}
	if common == "" {
		return nil, fmt.Errorf("merge: %s is not in a git repository", root)
	}
	objs := gitx.OpenObjects(root)
	objs.SetDurable(!opt.NoFsync)
	s := &Service{
		opt: opt, persist: persist, resolver: resolver, commonDir: common,
		integ:     filepath.Join(opt.WorktreesDir, "_integration"),
		refs:      gitx.NewRefUpdater(root, fsyncConfig(opt.NoFsync)...),
		objs:      objs,
		wake:      make(chan struct{}, 1),
		cleanWake: make(chan struct{}, 1),
		changed:   make(chan struct{}, 1),
		events:    make(chan Event, 256),
		jobs:      map[string]*resolveJob{},
	}
	s.maxTries = opt.Merge.MaxAttempts
	if s.maxTries <= 0 {
		s.maxTries = 3
	}
	for _, q := range sortedQuality(opt.Quality) {
		if q.Required {
			s.required = append(s.required, q)
		}
	}
	if err := s.registerDrivers(ctx); err != nil {
		return nil, err
	}
	if err := s.excludeWorktrees(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.publishLocked()
	s.mu.Unlock()
	return s, nil
}

func sortedQuality(q []config.QualityCommand) []config.QualityCommand {
	q = append([]config.QualityCommand(nil), q...)
	sort.SliceStable(q, func(i, j int) bool { return q[i].Order < q[j].Order })
	return q
}

// Restore loads the queue persisted by a previous run. What happened to an
// item caught in "landing" is decided by git ancestry when Run starts.
func (s *Service) Restore(items []Item, stats Stats) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.items = nil
	for i := range items {
		it := items[i]
		s.items = append(s.items, &it)
		if it.Seq >= stats.NextSeq {
			stats.NextSeq = it.Seq + 1
		}
	}
	s.stats = stats
	s.reconcile = true
	s.publishLocked()
	s.poke()
}

// Enqueue adds a finished branch to the queue. A task that already landed,
// was reverted or failed may be queued again; one still in the queue may not.
func (s *Service) Enqueue(r Request) error {
	if err := validTaskID(r.TaskID); err != nil {
		return err
	}
	if r.Branch == "" || strings.HasPrefix(r.Branch, "-") {
		return fmt.Errorf("merge: task %s: invalid branch %q", r.TaskID, r.Branch)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.opt.Now()
	if old := s.findLocked(r.TaskID); old != nil {
		switch old.Status {
		case StatusLanded, StatusReverted, StatusFailed:
			s.removeLocked(r.TaskID)
		default:
			return fmt.Errorf("merge: task %s is already queued (%s)", r.TaskID, old.Status)
		}
	}
	it := &Item{Request: r, Status: StatusPending, EnqueuedAt: now, UpdatedAt: now, Seq: s.stats.NextSeq}
	it.DependsOn = append([]string(nil), r.DependsOn...)
	s.stats.NextSeq++
	s.items = append(s.items, it)
	if err := s.saveLocked(); err != nil {
		s.removeLocked(r.TaskID)
		s.stats.NextSeq--
		s.publishLocked()
		return err
	}
	s.emit(Event{Kind: EventEnqueued, TaskID: r.TaskID, Message: r.Branch})
	s.poke()
	return nil
}

// Snapshot returns a copy of the queue; it never blocks on the worker.
func (s *Service) Snapshot() Snapshot {
	p := s.snap.Load()
	if p == nil {
		return Snapshot{}
	}
	c := *p
	c.Items = append([]Item(nil), p.Items...)
	return c
}

// Changed fires (coalesced) after every change to the queue.
func (s *Service) Changed() <-chan struct{} { return s.changed }

// Events delivers notifications; when nobody reads, the oldest are dropped.
func (s *Service) Events() <-chan Event { return s.events }

// Idle reports that nothing can run: the queue is empty, paused, or holds
// only items that wait for a person (or for such an item, as a dependency).
func (s *Service) Idle() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.idleLocked()
}

func (s *Service) idleLocked() bool {
	if s.current != "" || s.reconcile || len(s.jobs) > 0 {
		return false
	}
	if s.stats.Paused {
		return true
	}
	if len(s.runnableLocked()) > 0 {
		return false
	}
	for _, it := range s.items {
		if it.Status == StatusLanded && !it.Cleaned {
			return false
		}
	}
	return true
}

// Drain tells Run that no more requests will come: it returns once the
// queue is idle — nil when everything landed, a *WaitingError listing the
// items that wait for a person otherwise (they stay queued for the next run).
// Headless runs use it to end instead of waiting for a human.
func (s *Service) Drain() {
	s.mu.Lock()
	s.draining = true
	s.mu.Unlock()
	s.poke()
}

// Waiting lists the items that wait for a person, with what to do.
func (s *Service) Waiting() []Item {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waitingLocked()
}

func (s *Service) waitingLocked() []Item {
	var out []Item
	for _, it := range s.items {
		switch it.Status {
		case StatusWaitingHuman, StatusWaitingApproval, StatusHeld, StatusFailed:
			out = append(out, *it)
		case StatusPending:
			if s.stats.Paused || s.blockedLocked(it) != "" {
				c := *it
				if s.stats.Paused {
					c.Action = "the queue is paused: " + s.stats.PauseReason + " — resume it when ready"
				} else {
					c.Action = "waits for " + s.blockedLocked(it)
				}
				out = append(out, c)
			}
		}
	}
	return out
}

// Approve lets an item that waits for approval land.
func (s *Service) Approve(taskID string) error {
	return s.human(taskID, func(it *Item) error {
		if it.Status != StatusWaitingApproval {
			return fmt.Errorf("%w: %s is %s", ErrBadState, taskID, it.Status)
		}
		it.Approved = true
		it.Status = StatusPending
		it.Action = ""
		return nil
	})
}

// Retry puts an item that waits for a person (or failed) back in the queue,
// with a fresh attempt count; a held item keeps its tested candidate.
func (s *Service) Retry(taskID string) error {
	return s.human(taskID, func(it *Item) error {
		switch it.Status {
		case StatusWaitingHuman, StatusHeld, StatusFailed, StatusConflict, StatusWaitingApproval:
		default:
			return fmt.Errorf("%w: %s is %s", ErrBadState, taskID, it.Status)
		}
		if it.Status != StatusHeld {
			// The person fixed the task branch; a resolver's branch is stale.
			it.MergeRef, it.ResolvedFrom = "", ""
			it.Candidate, it.Tested = "", false
		}
		it.Status = StatusPending
		it.Retries = 0
		it.Recoveries = 0
		it.Action = ""
		return nil
	})
}

func (s *Service) human(taskID string, f func(*Item) error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(taskID)
	if it == nil {
		return fmt.Errorf("%w: %s", ErrUnknownTask, taskID)
	}
	if s.current == taskID || s.inBatchLocked(taskID) {
		return ErrBusy
	}
	old := *it
	if err := f(it); err != nil {
		return err
	}
	it.Human = true
	it.UpdatedAt = s.opt.Now()
	if err := s.saveLocked(); err != nil {
		*it = old
		s.publishLocked()
		return err
	}
	s.poke()
	return nil
}

// Drop removes an item from the queue. Its branch and worktree stay.
func (s *Service) Drop(taskID string) error {
	s.mu.Lock()
	it := s.findLocked(taskID)
	if it == nil {
		s.mu.Unlock()
		return fmt.Errorf("%w: %s", ErrUnknownTask, taskID)
	}
	if s.current == taskID || s.inBatchLocked(taskID) || it.Status == StatusLanding || s.jobs[taskID] != nil {
		s.mu.Unlock()
		return ErrBusy
	}
	old := append([]*Item(nil), s.items...)
	s.removeLocked(taskID)
	if err := s.saveLocked(); err != nil {
		s.items = old
		s.publishLocked()
		s.mu.Unlock()
		return err
	}
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	_ = s.refTxn(ctx, "delete "+candidateRef(taskID))
	return nil
}

// Resume restarts a paused queue, taking the target's current tip as the new
// baseline (see AcceptTarget).
func (s *Service) Resume() error { return s.AcceptTarget("") }

// AcceptTarget releases a hold: the target's current tip becomes the
// verified baseline the queue lands on. A person calls it after checking a
// tip that moved outside the service; when tip is given and the target has
// moved on from it since, nothing changes and the error says so.
func (s *Service) AcceptTarget(tip string) error {
	s.opMu.Lock()
	defer s.opMu.Unlock()
	cur, err := s.readTarget()
	if err != nil {
		return err
	}
	if tip != "" && !strings.HasPrefix(cur, tip) {
		return fmt.Errorf("%s moved again, to %s: look at it, then accept that tip", s.opt.Target, short(cur))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old := s.stats
	s.stats.Paused, s.stats.PauseReason, s.stats.TargetTip, s.stats.Moved = false, "", cur, nil
	s.stats.Lost = nil
	for _, it := range s.items {
		it.Recoveries = 0
	}
	if err := s.saveLocked(); err != nil {
		s.stats = old
		s.publishLocked()
		return err
	}
	s.emit(Event{Kind: EventResumed, Commit: cur, Message: s.opt.Target + " accepted at " + short(cur) + "; the queue runs again"})
	s.poke()
	return nil
}

// Objects shares the service's object store with another user of the
// repository (one cat-file for both), who closes it when done.
func (s *Service) Objects() *gitx.ObjectStore { return s.objs.Share() }

// Run is the single worker: it applies queue items one at a time until ctx
// ends (or, after Drain, until the queue is idle).
func (s *Service) Run(ctx context.Context) error {
	if err := s.ensureIntegration(ctx); err != nil {
		return err
	}
	defer s.refs.Close()
	defer s.objs.Close()
	// Resolver goroutines end with ctx; their clean-up runs before Run
	// returns, so nothing touches the repository afterwards.
	defer s.bg.Wait()
	// Landed items are cleaned up beside the worker (removing a worktree
	// waits on the worktree lock agents' starts hold), so the next merge
	// does not wait for the last one's clean-up.
	stop := make(chan struct{})
	defer close(stop)
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		s.cleaner(ctx, stop)
	}()
	watch := time.NewTicker(s.opt.WatchInterval)
	defer watch.Stop()
	observed := false
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.mu.Lock()
		rec := s.reconcile
		s.mu.Unlock()
		if rec {
			s.opMu.Lock()
			err := s.reconcileAll(ctx)
			s.opMu.Unlock()
			if err != nil {
				return err
			}
			continue
		}
		if !observed {
			// A new session takes the tip it finds as its baseline.
			observed = true
			s.opMu.Lock()
			s.observeTarget()
			s.opMu.Unlock()
		}
		s.mu.Lock()
		var id string
		var batch []string
		if r := s.runnableLocked(); len(r) > 0 {
			id = r[0].TaskID
			s.current, s.curFence = id, r[0].Fence
			if batch = s.batchLocked(r); batch != nil {
				s.batch = map[string]bool{}
				for _, b := range batch {
					s.batch[b] = true
				}
			}
			s.publishLocked()
		}
		idle := id == "" && s.idleLocked()
		draining := s.draining
		waiting := s.waitingLocked()
		s.mu.Unlock()
		if id != "" {
			s.opMu.Lock()
			if batch != nil {
				s.processBatch(ctx, batch)
			} else {
				s.process(ctx, id)
			}
			s.opMu.Unlock()
			s.mu.Lock()
			s.current, s.batch = "", nil
			s.publishLocked()
			s.mu.Unlock()
			continue
		}
		if idle && draining {
			if len(waiting) > 0 {
				return &WaitingError{Items: waiting}
			}
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.wake:
		case <-watch.C:
			s.opMu.Lock()
			s.watchTarget(ctx)
			s.opMu.Unlock()
		}
	}
}

// cleaner removes landed items' worktrees and branches, one at a time,
// until stop (Run returns only once nothing is left to clean, or ctx ends).
func (s *Service) cleaner(ctx context.Context, stop <-chan struct{}) {
	last := ""
	for {
		ids := s.nextCleanups()
		key := strings.Join(ids, " ")
		if len(ids) == 0 || key == last {
			// Nothing to do, or the last clean-up could not finish (its
			// state was not saved): wait for news before trying again.
			last = ""
			select {
			case <-ctx.Done():
				return
			case <-stop:
				return
			case <-s.cleanWake:
			}
			continue
		}
		s.cleanup(ctx, ids)
		last = key
		s.poke() // Run decides whether the queue is idle now
	}
}

func (s *Service) pokeCleaner() {
	select {
	case s.cleanWake <- struct{}{}:
	default:
	}
}

func (s *Service) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *Service) emit(e Event) {
	if e.Time.IsZero() {
		e.Time = s.opt.Now()
	}
	for {
		select {
		case s.events <- e:
			return
		default:
		}
		// Full: drop the oldest so the worker never blocks on a slow reader.
		select {
		case <-s.events:
		default:
		}
	}
}

// ---- queue bookkeeping (callers hold mu) ----

func (s *Service) findLocked(id string) *Item {
	for _, it := range s.items {
		if it.TaskID == id {
			return it
		}
	}
	return nil
}

func (s *Service) removeLocked(id string) {
	out := s.items[:0:0]
	for _, it := range s.items {
		if it.TaskID != id {
			out = append(out, it)
		}
	}
	s.items = out
}

// boost implements the priority boost of the ordering rules: P0/P1 +100,
// P2 +50 (Beads priorities, 0 is the most urgent).
func boost(p int) int {
	switch {
	case p <= 1:
		return 100
	case p == 2:
		return 50
	}
	return 0
}

// blockedLocked names an unmerged dependency still in the queue, if any.
// Dependencies not in the queue are taken as merged earlier.
func (s *Service) blockedLocked(it *Item) string {
	for _, d := range it.DependsOn {
		if dep := s.findLocked(d); dep != nil && dep.Status != StatusLanded {
			return d
		}
	}
	return ""
}

// runnableLocked returns pending items whose dependencies have landed:
// dependencies first, then priority boost, then FIFO (Seq).
func (s *Service) runnableLocked() []*Item {
	if s.stats.Paused {
		return nil
	}
	var r []*Item
	for _, it := range s.items {
		if it.Status == StatusPending && s.blockedLocked(it) == "" {
			r = append(r, it)
		}
	}
	sort.SliceStable(r, func(i, j int) bool {
		if bi, bj := boost(r[i].Priority), boost(r[j].Priority); bi != bj {
			return bi > bj
		}
		return r[i].Seq < r[j].Seq
	})
	return r
}

// nextCleanups lists the landed items not cleaned up yet (at most a
// batch's worth), oldest first.
func (s *Service) nextCleanups() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for _, it := range s.items {
		if it.Status == StatusLanded && !it.Cleaned {
			ids = append(ids, it.TaskID)
			if len(ids) == maxCleanupBatch {
				break
			}
		}
	}
	return ids
}

// maxCleanupBatch bounds one clean-up pass, so a long backlog (after a
// restart) still reports progress as it goes.
const maxCleanupBatch = 32

// markCleaned records the clean-up of landed items in one save; only the
// landing that was cleaned up counts (the task may have been rolled back
// or queued again meanwhile).
func (s *Service) markCleaned(items []Item) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var marked []*Item
	for _, c := range items {
		it := s.findLocked(c.TaskID)
		if it == nil || s.fencedLocked(it) || it.Status != StatusLanded || it.Seq != c.Seq || it.Cleaned {
			continue
		}
		it.Cleaned, it.UpdatedAt = true, s.opt.Now()
		marked = append(marked, it)
	}
	if len(marked) == 0 {
		return
	}
	if err := s.saveLocked(); err != nil {
		for _, it := range marked {
			it.Cleaned = false
		}
		s.stats.Paused = true
		s.stats.PauseReason = "could not save the merge queue: " + err.Error()
		s.publishLocked()
		s.emit(Event{Kind: EventPaused, TaskID: marked[0].TaskID, Message: s.stats.PauseReason})
	}
}

var statusRank = map[Status]int{StatusLanding: 0, StatusMerging: 0, StatusTesting: 0, StatusResolving: 0, StatusConflict: 0,
	StatusPending: 1, StatusWaitingApproval: 2, StatusHeld: 2, StatusWaitingHuman: 2, StatusFailed: 3,
	StatusLanded: 4, StatusReverted: 4}

// publishLocked refreshes the lock-free snapshot and signals Changed.
func (s *Service) publishLocked() {
	items := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, *it)
	}
	sort.SliceStable(items, func(i, j int) bool {
		ri, rj := statusRank[items[i].Status], statusRank[items[j].Status]
		if ri != rj {
			return ri < rj
		}
		if ri == 4 {
			return items[i].LandedAt.Before(items[j].LandedAt)
		}
		if bi, bj := boost(items[i].Priority), boost(items[j].Priority); bi != bj && ri == 1 {
			return bi > bj
		}
		return items[i].Seq < items[j].Seq
	})
	st := s.stats
	st.Lost = append([]string(nil), st.Lost...)
	st.Reverted = append([]string(nil), st.Reverted...)
	s.snap.Store(&Snapshot{Items: items, Stats: st, Current: s.current, Idle: s.idleLocked()})
	select {
	case s.changed <- struct{}{}:
	default:
	}
}

// saveLocked publishes and persists the whole queue.
func (s *Service) saveLocked() error {
	s.publishLocked()
	if s.persist == nil {
		return nil
	}
	items := make([]Item, 0, len(s.items))
	for _, it := range s.items {
		items = append(items, *it)
	}
	st := s.stats
	st.Lost = append([]string(nil), st.Lost...)
	st.Reverted = append([]string(nil), st.Reverted...)
	return s.persist(items, st)
}

// step applies f to an item (and the stats) and persists. On a persist
// error the change is undone and the queue pauses: without a saved state
// Chorus must not move refs.
func (s *Service) step(id string, f func(it *Item, st *Stats)) bool {
	return s.stepWhen(id, nil, f)
}

func (s *Service) stepWhen(id string, ok func(*Item) bool, f func(it *Item, st *Stats)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.findLocked(id)
	if it == nil || s.fencedLocked(it) || (ok != nil && !ok(it)) {
		return false
	}
	old, oldStats := *it, s.stats
	f(it, &s.stats)
	it.UpdatedAt = s.opt.Now()
	if err := s.saveLocked(); err != nil {
		*it, s.stats = old, oldStats
		s.stats.Paused = true
		s.stats.PauseReason = "could not save the merge queue: " + err.Error()
		s.publishLocked()
		s.emit(Event{Kind: EventPaused, TaskID: id, Message: s.stats.PauseReason})
		return false
	}
	return true
}

// mark changes a transient worker status (merging, testing, resolving)
// and publishes it without persisting: a restart turns those back into
// pending anyway, and every persist costs the engine an fsync.
func (s *Service) mark(id string, st Status) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.findLocked(id); it != nil && !s.fencedLocked(it) {
		it.Status = st
		it.UpdatedAt = s.opt.Now()
		s.publishLocked()
	}
}

// fencedLocked reports that the worker's item was fenced off (its resolver
// stopped) after the worker took it: the worker must not change it any more.
func (s *Service) fencedLocked(it *Item) bool {
	return it.TaskID == s.current && it.Fence != s.curFence
}

// stepFenced is step for work started under fence: it does nothing (and
// reports false) once the item's fence moved on.
func (s *Service) stepFenced(id string, fence uint64, f func(it *Item, st *Stats)) bool {
	return s.stepWhen(id, func(it *Item) bool { return it.Fence == fence }, f)
}

func (s *Service) get(id string) (Item, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if it := s.findLocked(id); it != nil {
		return *it, true
	}
	return Item{}, false
}

func (s *Service) statsCopy() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

func (s *Service) phase(p string) {
	if s.hook != nil {
		s.hook(p)
	}
}

// pause stops the queue until Resume, with a reason shown to the user.
func (s *Service) pause(reason string, lost []string) {
	s.mu.Lock()
	s.stats.Paused = true
	s.stats.PauseReason = reason
	if lost != nil {
		s.stats.Lost = lost
	}
	_ = s.saveLocked()
	s.mu.Unlock()
	s.emit(Event{Kind: EventPaused, Message: reason, Files: lost})
}

// excludeWorktrees lists Chorus's worktree folder in info/exclude so the
// user's `git status` does not show it.
func (s *Service) excludeWorktrees() error {
	rel, err := filepath.Rel(s.opt.RepoDir, s.opt.WorktreesDir)
	if err != nil || strings.HasPrefix(rel, "..") {
		return nil
	}
	line := "/" + filepath.ToSlash(rel) + "/"
	p := filepath.Join(s.commonDir, "info", "exclude")
	b, _ := os.ReadFile(p)
	for _, l := range strings.Split(string(b), "\n") {
		if strings.TrimSpace(l) == line {
			return nil
		}
	}
	if len(b) > 0 && b[len(b)-1] != '\n' {
		b = append(b, '\n')
	}
	b = append(b, line+"\n"...)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, b, 0o644)
}
